"""The sources file, the visibility rule and the removal plan: pure, table-driven."""

from __future__ import annotations

import pytest

from retrieval.connectors.git import github_anchor
from retrieval.source_sync import plan_removals
from retrieval.sources import NOBODY, SourcesError, parse_sources, visibility_for
from retrieval.store import DocumentRecord

GOOD = '''
[sources.docs]
type = "git"
url = "file:///srv/docs.git"
paths = ["docs"]
interval_minutes = 15

[sources.help]
type = "zendesk"
url = "https://acme.zendesk.com"
token_env = "ZENDESK_TOKEN"

[sources.help.visibility]
everyone = "public"
"segment:7" = ["C0AGENTS", "C0LEADS"]
'''


def test_a_sources_file_is_read_into_typed_sources_in_file_order() -> None:
    docs, help_center = parse_sources(GOOD, "sources.toml")
    assert (docs.name, docs.type, docs.interval_minutes, docs.token_env) == ("docs", "git", 15.0, None)
    assert docs.settings == {"url": "file:///srv/docs.git", "paths": ["docs"]}
    assert docs.where == "sources.toml:2" and help_center.where == "sources.toml:8"
    assert help_center.visibility == {"everyone": None, "segment:7": ("C0AGENTS", "C0LEADS")}
    assert docs.visibility == {"everyone": None}  # no table: what the source shows everyone is public


@pytest.mark.parametrize(("text", "message"), [
    ('[sources.docs]\ntype = "gitt"\n',
     "sources.toml:1: source 'docs': type 'gitt' is not one of folder, git, zendesk, confluence, gdrive, notion: set `type`"),
    ('[sources.docs\ntype = "git"\n', "sources.toml: not valid TOML"),
    ('x = 1\n', "sources.toml:1: unknown table or key 'x': the file holds only [sources.NAME] tables"),
    ('\n\n[sources."two words"]\ntype = "git"\n',
     "sources.toml:3: source 'two words': a name is letters, digits, '-' and '_' (at most 64): rename the table"),
    ('[sources.help]\ntype = "zendesk"\ntoken_env = "abc-def"\n',
     "sources.toml:1: source 'help': token_env must name an environment variable (the secret itself never goes in "
     "this file)"),
    ('[sources.a]\ntype = "git"\n[sources.b]\ntype = "git"\ninterval_minutes = 0\n',
     "sources.toml:3: source 'b': interval_minutes must be a number above 0"),
    ('[sources.a]\ntype = "git"\n[sources.a.visibility]\n"space:ENG" = []\n',
     "sources.toml:1: source 'a': visibility.space:ENG must be \"public\" or a non-empty list of channel ids"),
])
def test_a_wrong_sources_file_is_one_line_naming_the_file_and_line(text: str, message: str) -> None:
    with pytest.raises(SourcesError) as raised:
        parse_sources(text, "sources.toml")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


RULE = {"everyone": None, "space:ENG": ("C0ENG", "C0LEADS"), "segment:7": ("C0AGENTS",)}


@pytest.mark.parametrize(("audience", "visibility", "mapped"), [
    ({"everyone"}, None, True),
    ({"space:ENG"}, ("C0ENG", "C0LEADS"), True),
    ({"space:ENG", "segment:7"}, ("C0AGENTS", "C0ENG", "C0LEADS"), True),
    ({"space:ENG", "everyone"}, None, True),  # one public audience makes it public
    ({"space:HR"}, (NOBODY,), False),  # never wider than the source: nobody
    ({"space:HR", "segment:7"}, ("C0AGENTS",), True),
    (set(), (NOBODY,), False),
])
def test_the_visibility_rule_is_never_wider_than_the_source(audience: set[str], visibility: object,
                                                          mapped: bool) -> None:
    assert visibility_for(frozenset(audience), RULE) == (visibility, mapped)


def record(document_id: str) -> DocumentRecord:
    return DocumentRecord(document_id, "hash", None, document_id, 1, None, "docs")


OWN = [record("docs:a.md"), record("docs:b.md"), record("docs:c.md")]


@pytest.mark.parametrize(("gone", "present", "seen", "kept", "removed", "held"), [
    ([], None, [], [], [], []),  # an incremental pull that saw no deletion removes nothing
    (["docs:a.md"], None, [], [], ["docs:a.md"], []),
    ([], frozenset({"docs:a.md"}), [], [], ["docs:b.md", "docs:c.md"], []),  # the full listing prunes
    (["docs:a.md"], None, ["docs:a.md"], [], [], []),  # gone, then back (a move within the source)
    ([], frozenset(), [], ["docs:b.md"], ["docs:a.md", "docs:c.md"], ["docs:b.md"]),  # unreadable: kept
    (["docs:zzz.md"], None, [], [], [], []),  # not ours: nothing to do
])
def test_what_leaves_the_source_leaves_the_index(gone: list[str], present: frozenset[str] | None, seen: list[str],
                                                 kept: list[str], removed: list[str], held: list[str]) -> None:
    out, keep = plan_removals(OWN, gone=gone, present=present, seen=seen, kept=kept)
    assert [r.document_id for r in out] == removed and [r.document_id for r in keep] == held


@pytest.mark.parametrize(("headings", "anchors"), [
    (["Refund policy"], ["refund-policy"]),
    (["Refunds", "Refunds", "Refunds"], ["refunds", "refunds-1", "refunds-2"]),
    (["What's new? (2026)"], ["whats-new-2026"]),
    (["返品について"], ["返品について"]),
    (["Первая линия поддержки"], ["первая-линия-поддержки"]),
    (["API_KEY & tokens"], ["api_key--tokens"]),
])
def test_headings_link_to_the_anchors_github_gives_them(headings: list[str], anchors: list[str]) -> None:
    seen: dict[str, int] = {}
    assert [github_anchor(h, seen) for h in headings] == anchors
