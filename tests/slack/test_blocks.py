"""What a reply looks like in Slack: golden Block Kit in English, Japanese and Russian, Slack's limits, escaping.

Golden files live in tests/slack/golden/; after an intended change to the layout, regenerate them with
``VERBATIM_UPDATE_GOLDEN=1 pytest tests/slack/test_blocks.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer.types import NoSupportReason
from bot.slack.blocks import (
    CUT_MARK,
    MAX_BLOCKS,
    QUOTE_CHARS,
    SECTION_CHARS,
    RenderOptions,
    SlackMessage,
    answer_message,
    error_message,
    help_message,
)
from bot.slack.text import escape_mrkdwn, link
from tests.slack.results import answered, no_support, quote, source
from tests.standins import SlackStandIn

GOLDEN = Path(__file__).parent / "golden"
EXCHANGE_ID = "3f2b8c1e-9a4d-4e6f-8b7a-0c1d2e3f4a5b"

REFUNDS = source(1, "Annual plans can be refunded in full within 30 days of purchase. After 30 days, an annual plan "
                    "is refunded pro rata for the unused whole months, minus a 10% processing fee.")
ODD = source(2, "Credits above 100 USD need approval from <finance> & the on-call lead.", title="<Admin> & Co handbook",
             section="Credits > 100 USD", page=3, version="7", url="https://docs.example.com/search?q=a&b=c|d")
SHIPPING = source(1, "ご注文の商品は、決済完了から通常3営業日以内に発送します。送料は全国一律550円です。", title="配送と返品のご案内",
                  section="配送について", version="2026.2", url="https://docs.example.com/ja/shipping", language="ja")
FIRST_LINE = source(1, "2.7. Обращение передаётся на вторую линию, если оно не решено в течение 2 часов.",
                    title="Инструкция для первой линии", section="2. Эскалация", version="1.4",
                    url="https://docs.example.com/ru/first-line", language="ru")
NO_URL = source(2, "3.1. Возврат средств за годовой тариф возможен в течение 30 дней с даты оплаты.",
                title="Инструкция для первой линии", section=None, page=12, version=None, url=None, language="ru")

CASES: dict[str, Callable[[], SlackMessage]] = {
    "answered_en": lambda: answer_message(answered([
        ("Annual plans: a full refund within 30 days, then pro rata.",
         [quote(REFUNDS, "Annual plans can be refunded in full within 30 days of purchase."),
          quote(REFUNDS, "After 30 days, an annual plan is refunded pro rata for the unused whole months, minus a "
                         "10% processing fee.")]),
        ("Credits above 100 USD need approval from <finance> & the on-call lead.",
         [quote(ODD, "Credits above 100 USD need approval from <finance> & the on-call lead.")]),
    ], sources=(REFUNDS, ODD))),
    "answered_ja": lambda: answer_message(answered([
        ("送料は全国一律550円です。", [quote(SHIPPING, "送料は全国一律550円です。")]),
    ], language="ja", sources=(SHIPPING,))),
    "no_support_ru": lambda: answer_message(no_support((FIRST_LINE, NO_URL), language="ru")),
    "nothing_found_en": lambda: answer_message(no_support((), NoSupportReason.NOTHING_FOUND)),
    "error_en": lambda: error_message("en", EXCHANGE_ID),
    "error_ja": lambda: error_message("ja", EXCHANGE_ID),
    "error_ru": lambda: error_message("ru", EXCHANGE_ID),
    "help_en": lambda: help_message("en"),
}


def as_json(message: SlackMessage) -> str:
    return json.dumps(message.as_kwargs(), ensure_ascii=False, indent=1) + "\n"


def texts(node: Any) -> list[str]:
    """Every text a reader sees in the blocks."""
    if isinstance(node, dict):
        own = [node["text"]] if isinstance(node.get("text"), str) else []
        return own + [t for v in node.values() if isinstance(v, (dict, list)) for t in texts(v)]
    if isinstance(node, list):
        return [t for item in node for t in texts(item)]
    return []


def shown_quotes(message: SlackMessage) -> list[list[dict[str, Any]]]:
    return [element["elements"] for block in message.blocks if block["type"] == "rich_text"
            for element in block["elements"] if element["type"] == "rich_text_quote"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_replies_match_their_golden_block_kit(name: str) -> None:
    rendered = as_json(CASES[name]())
    path = GOLDEN / f"{name}.json"
    if os.environ.get("VERBATIM_UPDATE_GOLDEN"):
        path.write_text(rendered, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run with VERBATIM_UPDATE_GOLDEN=1 and review it"
    assert rendered == path.read_text(encoding="utf-8")


def long_answer(quote_chars: int = 100, citations: int = 1, claim: str = "A claim.") -> SlackMessage:
    sources = tuple(source(n, f"Sentence {n} " + "word " * (quote_chars // 5)) for n in range(1, citations + 1))
    return answer_message(answered([(claim, [quote(s, s.chunk.text)]) for s in sources], sources=sources))


@pytest.mark.parametrize(("why", "message"), [
    ("a 5,000-character quote", lambda: long_answer(quote_chars=5000)),
    ("40 citations", lambda: long_answer(citations=40)),
    ("a 10,000-character claim full of &", lambda: long_answer(claim="&" * 10_000)),
    ("20 nearest fragments", lambda: answer_message(no_support(tuple(source(n, "x " * 2000) for n in range(1, 21))))),
])
def test_long_answers_stay_within_slacks_limits(why: str, message: Callable[[], SlackMessage]) -> None:
    rendered = message()
    sections = [b["text"]["text"] for b in rendered.blocks if b["type"] == "section"]

    assert len(rendered.blocks) <= MAX_BLOCKS, why
    assert all(len(text) <= SECTION_CHARS for text in sections), why
    assert 0 < len(rendered.text) <= 3100, why


def test_a_quote_too_long_for_slack_is_cut_at_a_word_and_says_so() -> None:
    rendered = long_answer(quote_chars=5000)
    (elements,) = shown_quotes(rendered)
    original = "Sentence 1 " + "word " * 1000

    assert original.startswith(elements[0]["text"]) and len(elements[0]["text"]) <= QUOTE_CHARS
    assert elements[1] == {"type": "text", "text": CUT_MARK, "style": {"italic": True}}
    assert "quote shortened" in " ".join(texts(list(rendered.blocks)))


def test_quotes_that_do_not_fit_are_counted_never_dropped_silently() -> None:
    rendered = long_answer(citations=40)
    shown = len(shown_quotes(rendered))
    note = next(t for t in texts(list(rendered.blocks)) if t.startswith("Quotes not shown"))

    assert shown < 40 and note.endswith(f": {40 - shown}.")
    assert "S1" in " ".join(texts(list(rendered.blocks))), "citations keep their numbers for :one: flags"


@pytest.mark.parametrize(("text", "escaped"), [
    ("<@U0ADMIN> please", "&lt;@U0ADMIN&gt; please"),
    ("<!channel> alert", "&lt;!channel&gt; alert"),
    ("<https://evil.example|click here>", "&lt;https://evil.example|click here&gt;"),
    ("Tom & Jerry", "Tom &amp; Jerry"),
    ("already &amp; escaped", "already &amp;amp; escaped"),
])
def test_document_text_in_mrkdwn_never_becomes_a_mention_or_a_link(text: str, escaped: str) -> None:
    src = source(1, f"Intro. {text}")
    rendered = answer_message(answered([(f"Claim: {text}", [quote(src, text)])], sources=(src,)))
    claim_block = rendered.blocks[0]["text"]["text"]

    assert claim_block == f"Claim: {escaped}"
    assert shown_quotes(rendered)[0][0]["text"] == text, "rich text shows the quote exactly as written"


@pytest.mark.parametrize(("url", "expected"), [
    ("https://docs.example.com/a?b=1&c=2", "<https://docs.example.com/a?b=1&amp;c=2|T &amp; C>"),
    ("https://docs.example.com/a|b>c", "<https://docs.example.com/a%7Cb&gt;c|T &amp; C>"),
    ("javascript:alert(1)", "T &amp; C"),
    ("docs.example.com/no-scheme", "T &amp; C"),
    (None, "T &amp; C"),
])
def test_a_source_link_comes_only_from_a_web_url_in_the_metadata(url: str | None, expected: str) -> None:
    assert link(url, "T & C") == expected


def test_without_a_flag_reaction_configured_there_is_no_flag_hint() -> None:
    src = REFUNDS
    rendered = answer_message(answered([("c", [quote(src, "Annual plans")])], sources=(src,)),
                              RenderOptions(flag_reaction=None))

    assert not any("React" in t or "flag" in t for t in texts(list(rendered.blocks)))


def test_the_plain_text_fallback_is_escaped_too() -> None:
    text = answer_message(answered(
        [("c", [quote(ODD, "Credits above 100 USD need approval from <finance> & the on-call lead.")])],
        sources=(ODD,))).text

    assert escape_mrkdwn("<finance> & the on-call lead") in text and "<" not in text


@pytest.mark.parametrize("name", ["answered_en", "no_support_ru", "error_ja"])
async def test_slack_accepts_the_rendered_replies(name: str) -> None:
    """Posted for real (to the stand-in, which checks Block Kit's limits like Slack does)."""
    async with SlackStandIn() as slack:
        client = AsyncWebClient(base_url=slack.api_url, token=slack.bot_token)
        for message in (CASES[name](), long_answer(quote_chars=5000), long_answer(citations=40)):
            response = await client.chat_postMessage(channel="C0SUPPORT", **message.as_kwargs())
            assert response["ok"]


def test_a_nearest_fragment_cut_inside_its_sentence_is_marked_as_cut() -> None:
    long_sentence = "Refunds " + "of annual plans " * 40 + "are handled by billing."
    rendered = answer_message(no_support((source(1, long_sentence), source(2, "A short sentence. Another one."))))
    first, second = shown_quotes(rendered)

    assert long_sentence.startswith(first[0]["text"]) and first[-1]["text"] == CUT_MARK
    assert [e["text"] for e in second] == ["A short sentence. Another one."], "a whole fragment is not marked"


@pytest.mark.parametrize(("language", "native"), [("en", True), ("ja", True), ("ru", True), ("en", False),
                                                  ("ja", False), ("ru", False)])
def test_every_answer_ends_with_feedback_buttons_that_name_the_feedback_action(language: str, native: bool) -> None:
    """Slack's feedback_buttons in a context_actions block, or a plain button pair; labels in the asker's words."""
    from bot.slack.blocks import feedback_block
    from bot.slack.events import FEEDBACK_ACTION, NEGATIVE, POSITIVE
    from bot.slack.messages import SLACK_WORDING

    block = feedback_block(language, native=native)
    words = SLACK_WORDING[language]
    if native:
        (element,) = block["elements"]
        assert (block["type"], element["type"], element["action_id"]) == (
            "context_actions", "feedback_buttons", FEEDBACK_ACTION)
        buttons = [element["positive_button"], element["negative_button"]]
        assert [b["accessibility_label"] for b in buttons] == [words.helpful, words.unhelpful]
    else:
        buttons = block["elements"]
        assert block["type"] == "actions" and all(b["action_id"].startswith(FEEDBACK_ACTION) for b in buttons)
        assert len({b["action_id"] for b in buttons}) == 2, "action ids are unique within a block"
        assert words.helpful in buttons[0]["text"]["text"] and words.unhelpful in buttons[1]["text"]["text"]
    assert [b["value"] for b in buttons] == [POSITIVE, NEGATIVE]
    if native:  # the shape slack_sdk's own classes build and validate
        from slack_sdk.models.blocks import Block

        parsed = Block.parse(block)
        assert parsed is not None and type(parsed).__name__ == "ContextActionsBlock"
        parsed.validate_json()
        assert parsed.to_dict() == block


PRIVATE = RenderOptions(handoff=True, private=True)


@pytest.mark.parametrize(("name", "message"), [
    ("answered_ja", lambda: answer_message(answered([("送料は全国一律550円です。", [quote(SHIPPING, "送料は全国一律550円です。")])],
                                                    language="ja", sources=(SHIPPING,)), PRIVATE)),
    ("no_support_ru", lambda: answer_message(no_support((FIRST_LINE, NO_URL), language="ru"), PRIVATE)),
])
def test_a_private_answer_says_so_offers_share_and_shared_it_is_the_same_answer_without_that(
        name: str, message: Callable[[], SlackMessage]) -> None:
    """Only the asker's copy carries the note and "Share in thread"; the shared copy keeps every quote, the
    feedback and "Ask a person", and nothing else changes."""
    from bot.slack.blocks import shared_message
    from bot.slack.events import HANDOFF_ACTION, SHARE_ACTION
    from bot.slack.messages import SLACK_WORDING

    private = message()
    words = SLACK_WORDING[name.rsplit("_", 1)[1]]
    shared = shared_message(private.as_kwargs())
    assert words.private_note in texts(list(private.blocks)) and words.share in texts(list(private.blocks))
    assert shared.blocks == private.blocks[:-2] and shared.text == private.text
    assert shown_quotes(shared) == shown_quotes(private)
    actions = [e["action_id"] for b in shared.blocks if b["type"] == "actions" for e in b["elements"]]
    assert HANDOFF_ACTION in actions and SHARE_ACTION not in actions
    assert words.private_note not in texts(list(shared.blocks))
