"""Files become documents with the right ids, titles, sections and verbatim text; bad files become
one clear error each, naming the file (and line), while the rest of the walk still loads."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.documents import Block, BlockKind, Document
from retrieval.loaders import LoadError, count_documents, iter_documents
from tests.retrieval.pdf_fixture import make_pdf

LIMITS = {"max_file_bytes": 1_000_000, "max_document_chars": 1_000_000}


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8", newline="")
    return path


def load(*paths: Path, **limits: int) -> list[Document | LoadError]:
    return list(iter_documents(list(paths), **(LIMITS | limits)))


def load_one(path: Path) -> Document:
    [result] = load(path)
    assert isinstance(result, Document), result
    return result


def load_error(path: Path, **limits: int) -> LoadError:
    [result] = load(path, **limits)
    assert isinstance(result, LoadError), result
    return result


def paragraphs(doc: Document) -> list[str]:
    return [b.text for b in doc.blocks if b.kind is BlockKind.PARAGRAPH]


def headings(doc: Document) -> list[tuple[int, str]]:
    return [(b.level, b.text) for b in doc.blocks if b.kind is BlockKind.HEADING]


def sections(doc: Document) -> list[str | None]:
    return [chunk.section for chunk in chunk_document(doc, ChunkingConfig())]


# --- Markdown ----------------------------------------------------------------------------------

REFUNDS_MD = """\
---
document_id: policies/refunds
title: Refund policy
url: https://wiki.example.com/refunds
version: 3
updated_at: 2024-05-01
visibility: [C0SUPPORT, C0BILLING]
language: en
owner: finance team
tags: [billing, refunds]
---
# Billing

Invoices go out on the **first** business day.  
A second line with a hard break.

## Refunds ##

To request a refund:

- Open *Settings*
- Click **Billing**
  - then *Refund*

| Plan | Refund window |
|------|---------------|
| Pro  | 30 days       |

### Card payments

```text
  refund --card 1234
```

> Refunds to cards take 5–10 days.

<!-- internal note: not content -->

---

Setext section
--------------

Last paragraph.   
"""


def test_markdown_front_matter_fills_the_document(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "refunds.md", REFUNDS_MD))
    assert doc.document_id == "policies/refunds"  # front matter overrides the file name
    assert doc.title == "Refund policy"
    assert doc.url == "https://wiki.example.com/refunds"
    assert doc.version == "3"
    assert doc.updated_at == "2024-05-01"
    assert doc.visibility == ("C0SUPPORT", "C0BILLING")
    assert doc.language == "en"
    assert doc.metadata == {"owner": "finance team", "tags": '["billing", "refunds"]'}
    assert doc.source == str(tmp_path / "refunds.md")


def test_markdown_blocks_keep_their_raw_source_text(tmp_path: Path) -> None:
    """Quotes stay verbatim with the file: markup is kept, a list or table is one block."""
    doc = load_one(write(tmp_path / "refunds.md", REFUNDS_MD))
    assert headings(doc) == [(1, "Billing"), (2, "Refunds"), (3, "Card payments"), (2, "Setext section")]
    assert paragraphs(doc) == [
        "Invoices go out on the **first** business day.  \nA second line with a hard break.",
        "To request a refund:",
        "- Open *Settings*\n- Click **Billing**\n  - then *Refund*",
        "| Plan | Refund window |\n|------|---------------|\n| Pro  | 30 days       |",
        "```text\n  refund --card 1234\n```",
        "> Refunds to cards take 5–10 days.",
        "Last paragraph.",
    ]
    for text in paragraphs(doc):
        assert text in REFUNDS_MD


def test_markdown_headings_become_chunk_sections(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "refunds.md", REFUNDS_MD))
    chunks = chunk_document(doc, ChunkingConfig())
    assert [c.section for c in chunks] == [
        "Billing",
        "Billing > Refunds",
        "Billing > Refunds > Card payments",
        "Billing > Setext section",
    ]
    # The condition stays with its rule, and the heading is not part of the chunk.
    assert chunks[1].text.startswith("To request a refund:\n\n- Open *Settings*")
    assert "##" not in chunks[1].text


@pytest.mark.parametrize(
    ("content", "title", "expected_headings", "expected_sections"),
    [
        pytest.param(
            "---\ntitle: 返金ポリシー\nsection: ハンドブック\n---\n# 請求\n\n請求書は毎月送付されます。\n\n"
            "## 返金\n\n返金は14日以内に行います。\n\n### カード\n\nカードへの返金は5日かかります。\n",
            "返金ポリシー",
            [(1, "請求"), (2, "返金"), (3, "カード")],
            ["ハンドブック > 請求", "ハンドブック > 請求 > 返金", "ハンドブック > 請求 > 返金 > カード"],
            id="ja",
        ),
        pytest.param(
            "# Регламент возврата\n\nОбщие положения, т. е. правила.\n\n## Сроки\n\nВозврат — до 14 дн.\n\n"
            "### Карты\n\nНа карту — до 5 дней.\n\n## Контакты\n\nПишите в поддержку.\n",
            "Регламент возврата",  # no front matter title: the first level-1 heading
            [(1, "Регламент возврата"), (2, "Сроки"), (3, "Карты"), (2, "Контакты")],
            # The level-1 heading is the title: it is not repeated in every section path.
            [None, "Сроки", "Сроки > Карты", "Контакты"],
            id="ru",
        ),
        pytest.param(
            "Intro without a heading.\n\n## Setup\n\nInstall it.\n",
            "guide",  # no front matter title and no level-1 heading: the file stem
            [(2, "Setup")],
            [None, "Setup"],
            id="en-stem-title",
        ),
    ],
)
def test_markdown_in_each_language(
    tmp_path: Path,
    content: str,
    title: str,
    expected_headings: list[tuple[int, str]],
    expected_sections: list[str | None],
) -> None:
    doc = load_one(write(tmp_path / "guide.md", content))
    assert doc.title == title
    assert headings(doc) == expected_headings
    assert sections(doc) == expected_sections
    for text in paragraphs(doc):
        assert text in content


@pytest.mark.parametrize(
    ("front", "message"),
    [
        pytest.param("title: [unclosed\n", "front matter is not valid YAML", id="malformed YAML"),
        pytest.param("title: a\n  bad: indent\n", "at line 3", id="error names the file's line"),
        pytest.param("- just\n- a list\n", "front matter must be a mapping", id="not a mapping"),
        pytest.param("visibility: {channel: C1}\n", "'visibility' must be a channel id or a list", id="visibility"),
        pytest.param("title: [a, b]\n", "'title' must be a single value", id="title list"),
        pytest.param("document_id: true\n", "'document_id' must be a single value", id="boolean id"),
        pytest.param("a: " + "[" * 5000 + "\n", "nested too deeply", id="nested too deeply"),
    ],
)
def test_bad_front_matter_is_a_load_error(tmp_path: Path, front: str, message: str) -> None:
    path = write(tmp_path / "bad.md", f"---\n{front}---\n# Title\n\nBody.\n")
    error = load_error(path)
    assert error.source == str(path)
    assert message in error.message
    assert "\n" not in error.message


def test_unclosed_front_matter_is_a_load_error(tmp_path: Path) -> None:
    error = load_error(write(tmp_path / "open.md", "---\ntitle: x\n\n# Title\n\nBody.\n"))
    assert "never closed" in error.message


def test_front_matter_with_a_single_channel_and_no_body_text(tmp_path: Path) -> None:
    single = load_one(write(tmp_path / "a.md", "---\nvisibility: C0ONLY\n---\nBody.\n"))
    assert single.visibility == ("C0ONLY",)
    assert load_one(write(tmp_path / "b.md", "Body.\n")).visibility is None
    error = load_error(write(tmp_path / "c.md", "---\ntitle: Only metadata\n---\n\n# Heading\n"))
    assert "no text to index" in error.message


# --- plain text --------------------------------------------------------------------------------


def test_text_file_paragraphs_split_on_blank_lines(tmp_path: Path) -> None:
    content = "\ufeffFirst paragraph\r\nwraps here.\r\n\r\n \r\n\r\nSecond paragraph.  \r\n"  # BOM and CRLF
    doc = load_one(write(tmp_path / "notes" / "faq.txt", content.encode("utf-8")))
    assert doc.document_id == "faq.txt"
    assert doc.title == "faq"
    assert headings(doc) == []
    assert paragraphs(doc) == ["First paragraph\nwraps here.", "Second paragraph."]


# --- HTML --------------------------------------------------------------------------------------

GUIDE_HTML = """<!DOCTYPE html>
<html><head><title>Setup &amp; billing guide</title><style>p { color: red }</style>
<script>var secret = "not content";</script></head>
<body>
<header><a href="/">Home</a></header>
<nav><ul><li>Menu item</li></ul></nav>
<h1>Setup</h1>
<p>Install   the <b>app</b>,
   then sign in.<br>Second line.</p>
<!-- a comment -->
<h2>Plans</h2>
<ul><li>Free</li><li>Pro <em>plan</em><ul><li>Annual</li></ul></li></ul>
<table><caption>Prices</caption>
<tr><th>Plan</th><th>Price</th></tr>
<tr><td>Pro</td><td>$10 / month</td></tr>
</table>
<pre>  refund --card 1234
    --force</pre>
<dl><dt>SSO</dt><dd>Single sign-on via Okta.</dd></dl>
<div>Loose text in a div.</div>
<noscript>Enable JavaScript</noscript>
<template><p>hidden template</p></template>
<footer>Copyright</footer>
</body></html>
"""


def test_html_keeps_what_a_reader_sees(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "guide.html", GUIDE_HTML))
    assert doc.title == "Setup & billing guide"
    assert headings(doc) == [(1, "Setup"), (2, "Plans")]
    assert paragraphs(doc) == [
        "Install the app, then sign in.\nSecond line.",
        "Free",
        "Pro plan",
        "Annual",
        "Prices",
        "Plan | Price\nPro | $10 / month",
        "  refund --card 1234\n    --force",
        "SSO",
        "Single sign-on via Okta.",
        "Loose text in a div.",
    ]
    assert sections(doc) == ["Setup", "Setup > Plans"]


@pytest.mark.parametrize(
    ("html", "title"),
    [
        ("<html><head><title> Guide </title></head><body><h1>Heading</h1><p>x</p></body></html>", "Guide"),
        ("<html><body><h1>Main <i>heading</i></h1><p>x</p></body></html>", "Main heading"),
        ("<p>x</p>", "page"),
    ],
)
def test_html_title_falls_back_to_h1_then_file_name(tmp_path: Path, html: str, title: str) -> None:
    assert load_one(write(tmp_path / "page.htm", html)).title == title


def test_badly_nested_html_still_loads(tmp_path: Path) -> None:
    """Tag soup nested thousands of levels deep (unclosed tags) is read, not a crash."""
    html = "<div>" * 3000 + "<p>Deep <b>text</b>.</p>" + "<font>" * 3000 + "Unclosed tail."
    doc = load_one(write(tmp_path / "soup.html", html))
    assert paragraphs(doc) == ["Deep text.", "Unclosed tail."]


# --- PDF ---------------------------------------------------------------------------------------


def test_pdf_blocks_carry_their_page_numbers(tmp_path: Path) -> None:
    pdf = make_pdf(
        [
            ["Refund policy", "", "Refunds are issued within", "14 days of the request.", "", "Contact support."],
            ["Card refunds take five days.", "Bank transfers take longer."],
            ["Appendix (no final punctuation)"],
        ],
        title="Employee Handbook",
    )
    doc = load_one(write(tmp_path / "handbook.pdf", pdf))
    assert doc.title == "Employee Handbook"
    assert [(b.page, b.text) for b in doc.blocks] == [
        (1, "Refund policy"),
        (1, "Refunds are issued within\n14 days of the request."),
        (1, "Contact support."),
        # page 2 has no blank lines: lines join into paragraphs that end at sentence punctuation
        (2, "Card refunds take five days."),
        (2, "Bank transfers take longer."),
        (3, "Appendix (no final punctuation)"),
    ]
    chunks = chunk_document(doc, ChunkingConfig())
    assert [(c.page, c.section) for c in chunks] == [(1, None), (2, None), (3, None)]
    assert chunks[0].text == "Refund policy\n\nRefunds are issued within\n14 days of the request.\n\nContact support."


def test_pdf_without_metadata_title_uses_the_file_name(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "scan-notes.pdf", make_pdf([["Hello."]])))
    assert doc.title == "scan-notes"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        pytest.param(b"%PDF-1.4\nthis is not really a pdf\n", "cannot read the PDF", id="corrupt"),
        pytest.param(make_pdf([[]])[:200], "cannot read the PDF", id="truncated"),
        pytest.param(make_pdf([[], []]), "no extractable text", id="no text"),
    ],
)
def test_unreadable_pdf_is_a_load_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = write(tmp_path / "bad.pdf", content)
    error = load_error(path)
    assert error.source == str(path)
    assert message in error.message


# --- JSONL -------------------------------------------------------------------------------------

JSONL = "\n".join(
    [
        '{"document_id": "kb-1", "title": "Refunds", "text": "Refunds take 14 days.\\n\\nAsk support."}',
        "",
        '{"document_id": "kb-2", "title": "Cards", "text": "Five days.", "url": "https://x.example/2", '
        '"section": "Billing > Cards", "page": 4, "version": "v2", "updated_at": "2024-05-01", '
        '"visibility": ["C1"], "language": "en", "owner": "ops", "rank": 3}',
        "{not json",
        '["an", "array"]',
        '{"title": "No id", "text": "x"}',
        '{"document_id": "kb-7", "title": 7, "text": "x"}',
        '{"document_id": "kb-8", "title": "Empty text", "text": "  "}',
        '{"document_id": "kb-9", "title": "t", "text": "x", "page": "4"}',
        '{"document_id": "kb-10", "title": "t", "text": "x", "visibility": "C1"}',
        '{"document_id": "kb-11", "title": "t", "text": "x", "visibility": null, "url": null}',
        '{"document_id": "", "title": "t", "text": "x"}',
        '{"document_id": "kb-13", "title": "t", "text": "x", "page": true}',
        "   ",
    ]
)


def test_jsonl_loads_good_lines_and_reports_bad_ones_by_line(tmp_path: Path) -> None:
    path = write(tmp_path / "kb.jsonl", JSONL)
    results = load(path)
    summary = [
        (r.source, r.document_id) if isinstance(r, Document) else (r.source, r.message) for r in results
    ]
    p = str(path)
    assert summary == [
        (f"{p}:1", "kb-1"),
        (f"{p}:3", "kb-2"),
        (f"{p}:4", "not valid JSON (Expecting property name enclosed in double quotes at column 2): "
         "fix or remove this line"),
        (f"{p}:5", "expected a JSON object with document_id, title and text, got an array: fix this line"),
        (f"{p}:6", "missing field 'document_id' (a non-empty string): add it to this line"),
        (f"{p}:7", "field 'title' must be a string, got a number (7): fix this line"),
        (f"{p}:8", "field 'text' must be a non-empty string, got an empty string: fix this line"),
        (f"{p}:9", "field 'page' must be a positive integer or null, got a string: fix this line"),
        (f"{p}:10", "field 'visibility' must be a list of channel-id strings or null, got a string: fix this line"),
        (f"{p}:11", "kb-11"),
        (f"{p}:12", "field 'document_id' must be a non-empty string, got an empty string: fix this line"),
        (f"{p}:13", "field 'page' must be a positive integer or null, got a boolean: fix this line"),
    ]


def test_jsonl_fields_reach_the_document_and_its_chunks(tmp_path: Path) -> None:
    results = load(write(tmp_path / "kb.jsonl", JSONL))
    docs = {r.document_id: r for r in results if isinstance(r, Document)}
    assert paragraphs(docs["kb-1"]) == ["Refunds take 14 days.", "Ask support."]
    assert docs["kb-1"].visibility is None and docs["kb-1"].title == "Refunds"
    card = docs["kb-2"]
    assert (card.url, card.section, card.page, card.version, card.updated_at, card.visibility, card.language) == (
        "https://x.example/2",
        "Billing > Cards",
        4,
        "v2",
        "2024-05-01",
        ("C1",),
        "en",
    )
    assert card.metadata == {"owner": "ops", "rank": "3"}
    [chunk] = chunk_document(card, ChunkingConfig())
    assert (chunk.section, chunk.page, chunk.text) == ("Billing > Cards", 4, "Five days.")


def test_jsonl_line_nested_too_deeply_is_a_load_error(tmp_path: Path) -> None:
    path = write(tmp_path / "deep.jsonl", "[" * 100_000 + "\n" + '{"document_id": "ok", "title": "t", "text": "x"}\n')
    first, second = load(path)
    assert first == LoadError(f"{path}:1", "JSON nested too deeply to read: flatten this line", str(path.resolve()))
    assert isinstance(second, Document) and second.document_id == "ok"


def test_jsonl_with_only_blank_lines_is_a_load_error(tmp_path: Path) -> None:
    error = load_error(write(tmp_path / "blank.jsonl", "\n  \n\n"))
    assert "no JSON lines" in error.message


# --- files that cannot be loaded ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        pytest.param("empty.md", b"", "the file is empty", id="empty"),
        pytest.param("image.md", b"# Title\n\x00\x01\x02PNG", "binary file, not text", id="binary"),
        pytest.param("binary.jsonl", b'{"a": 1}\x00\n', "binary file, not text", id="binary jsonl"),
        pytest.param(
            "latin1.txt",
            "Café prices in € are listed.".encode("cp1252"),
            "not UTF-8 text (invalid byte at offset 3): save the file as UTF-8 and ingest it again",
            id="Latin-1",
        ),
        pytest.param("slides.pptx", b"PK\x03\x04", "unsupported file type '.pptx'", id="unknown extension"),
        pytest.param("README", b"hello", "unsupported file type with no extension", id="no extension"),
        pytest.param("blank.txt", b"  \n\n \n", "no text to index", id="whitespace only"),
    ],
)
def test_a_bad_file_is_one_load_error_naming_it(tmp_path: Path, name: str, content: bytes, message: str) -> None:
    path = write(tmp_path / name, content)
    error = load_error(path)
    assert error.source == str(path)
    assert message in error.message
    assert "\n" not in error.message


def test_a_file_over_the_byte_limit_is_refused_unread(tmp_path: Path) -> None:
    path = write(tmp_path / "big.txt", "x" * 2000)
    error = load_error(path, max_file_bytes=1000)
    assert error.message == "the file is 2,000 bytes, over the limit of 1,000: split it or raise the file size limit"


def test_a_document_over_the_character_limit_names_its_size(tmp_path: Path) -> None:
    path = write(tmp_path / "long.md", "# T\n\n" + "Word. " * 500)
    error = load_error(path, max_document_chars=1000)
    assert error.source == str(path)
    assert error.message == (
        "the document is 3,002 characters, over the limit of 1,000: "
        "split it into smaller documents or raise the document size limit"
    )


def test_a_missing_path_is_a_load_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    assert load(missing) == [LoadError(str(missing), "no such file or folder: check the path",
                                       str(tmp_path.resolve() / "nope"))]


# --- folders -----------------------------------------------------------------------------------


def test_a_folder_loads_the_good_files_and_reports_the_bad(tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root / "billing" / "refunds.md", "# Refunds\n\nRefunds take 14 days.\n")
    write(root / "billing" / "latin.txt", "Café".encode("latin-1"))
    write(root / "a-intro.txt", "Welcome.\n")
    write(root / "guide.html", "<h1>Guide</h1><p>Install it.</p>")
    write(root / "handbook.pdf", make_pdf([["Page one."], ["Page two."]]))
    write(root / "kb.jsonl", '{"document_id": "kb-1", "title": "KB", "text": "Answer."}\n{oops\n')
    write(root / "empty.md", b"")
    write(root / "photo.png", b"\x89PNG")
    write(root / ".hidden.md", "# Hidden\n\nNever loaded.\n")
    write(root / ".git" / "config.txt", "never loaded\n")
    results = load(root)
    loaded = [(r.document_id, r.title) for r in results if isinstance(r, Document)]
    failed = [(Path(r.source).name, r.message.split(":")[0]) for r in results if isinstance(r, LoadError)]
    assert loaded == [
        ("a-intro.txt", "a-intro"),
        ("billing/refunds.md", "Refunds"),
        ("guide.html", "Guide"),
        ("handbook.pdf", "handbook"),
        ("kb-1", "KB"),
    ]
    assert failed == [
        ("latin.txt", "not UTF-8 text (invalid byte at offset 3)"),
        ("empty.md", "the file is empty"),
        ("kb.jsonl:2", "not valid JSON (Expecting property name enclosed in double quotes at column 2)"),
        ("photo.png", "unsupported file type '.png'"),
    ]


def test_a_file_given_directly_is_named_by_its_file_name(tmp_path: Path) -> None:
    path = write(tmp_path / "deep" / "er" / "refunds.md", "Body.\n")
    assert load_one(path).document_id == "refunds.md"
    [from_folder] = load(tmp_path / "deep")
    assert isinstance(from_folder, Document) and from_folder.document_id == "er/refunds.md"


def test_every_loaded_fixture_chunks_into_verbatim_text(tmp_path: Path) -> None:
    """End to end: whatever a loader produced, each chunk is a slice of its document's text."""
    write(tmp_path / "refunds.md", REFUNDS_MD)
    write(tmp_path / "guide.html", GUIDE_HTML)
    write(tmp_path / "kb.jsonl", JSONL)
    write(tmp_path / "handbook.pdf", make_pdf([["One.", "", "Two."], ["Three wraps", "here."]]))
    write(tmp_path / "ru.md", "# Возврат\n\n" + "Согласно п. 3.2 договора, т. е. оферты, срок 5 дн. " * 60)
    docs = [r for r in load(tmp_path) if isinstance(r, Document)]
    assert len(docs) == 7  # 1 Markdown + 1 HTML + 3 good JSONL lines + 1 PDF + 1 Russian Markdown
    for config in (ChunkingConfig(), ChunkingConfig(max_chars=120, min_chars=30, hard_max_chars=300)):
        for doc in docs:
            chunks = chunk_document(doc, config)
            assert chunks
            assert all(chunk.text in doc.text for chunk in chunks)


def test_blocks_are_the_documented_types(tmp_path: Path) -> None:
    doc = load_one(write(tmp_path / "x.md", "# A\n\nB.\n"))
    assert doc.blocks == (Block(BlockKind.HEADING, "A", level=1), Block(BlockKind.PARAGRAPH, "B."))


def test_each_document_and_error_records_the_file_it_came_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a sync matches its paths against: absolute, the argument resolved, the same file recorded alike
    whether it was given itself or found in its folder, and every line of a JSONL file recorded as that file."""
    export = tmp_path / "export"
    write(export / "ja" / "返品.md", "# 返品\n\n返品は30日以内に受け付けます。\n")
    write(export / "kb.jsonl", '{"document_id": "kb-1", "title": "KB", "text": "Answer."}\n{oops\n'
                               '{"document_id": "kb-2", "title": "KB", "text": "Ответ."}\n')
    (tmp_path / "link").symlink_to(export, target_is_directory=True)
    real = export.resolve()
    monkeypatch.chdir(tmp_path)
    by_folder = {(r.source, r.source_path) for r in load(Path("link"))}
    assert by_folder == {
        ("link/ja/返品.md", str(real / "ja" / "返品.md")),
        ("link/kb.jsonl:1", str(real / "kb.jsonl")),
        ("link/kb.jsonl:2", str(real / "kb.jsonl")),
        ("link/kb.jsonl:3", str(real / "kb.jsonl")),
    }
    assert load_one(Path("export/ja/返品.md")).source_path == str(real / "ja" / "返品.md")
    assert load_one(Path("link/ja/返品.md")).source_path == str(real / "ja" / "返品.md")


def test_the_progress_total_counts_what_the_ingest_will_report(tmp_path: Path) -> None:
    (tmp_path / "wiki").mkdir()
    (tmp_path / "wiki" / "a.md").write_text("# A\n\nAlpha.", encoding="utf-8")
    (tmp_path / "wiki" / "b.txt").write_text("Beta.", encoding="utf-8")
    (tmp_path / "wiki" / ".hidden.md").write_text("not walked", encoding="utf-8")
    (tmp_path / "export.jsonl").write_text(
        '{"document_id": "1", "title": "One", "text": "Один."}\n\n'
        '{"document_id": "2", "title": "Two", "text": "二つ。"}\nnot json\n', encoding="utf-8")
    paths = [tmp_path / "wiki", tmp_path / "export.jsonl", tmp_path / "missing"]
    reported = list(iter_documents(paths, max_file_bytes=10_000_000, max_document_chars=1_000_000))
    assert count_documents(paths) == len(reported) == 6  # 2 files, 3 JSONL lines (one bad), 1 missing path
