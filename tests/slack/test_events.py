"""Which Slack payloads are questions, reactions, or nothing — and how a question's text is read (pure)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.answer.types import Question
from bot.slack.deps import SlackOptions
from bot.slack.events import (
    SlackQuestion,
    parse_follow_up,
    parse_mention,
    parse_reaction,
    retry_number,
)
from bot.slack.reactions import FlagTarget, flag_target
from bot.slack.text import clean_question
from tests.standins import slack_events as ev
from tests.test_import_rules import imported_modules

BOT = "UBOT"
T = "1700000000.000100"
THREAD = "1700000000.000050"


def envelope(event: dict) -> dict:
    return ev.event_callback(event, team_id="T1", api_app_id="A1", bot_user_id=BOT, event_time=1, event_id="Ev1")


def mention(text: str = f"<@{BOT}> Refunds?", **extra: object) -> dict:
    return envelope(ev.app_mention(channel="C1", user="U1", text=text, ts=T, team="T1", **extra))  # type: ignore[arg-type]


def message(text: str = "And for monthly plans?", **extra: object) -> dict:
    return envelope(ev.user_message(channel="C1", user="U1", text=text, ts=T, team="T1", **extra))  # type: ignore[arg-type]


def test_a_mention_at_the_top_level_becomes_a_question_answered_in_a_new_thread() -> None:
    question = parse_mention(mention(), BOT, retry=0)

    assert question == SlackQuestion(event_id="Ev1", team_id="T1", user="U1", ts=T, thread_ts=None,
                                     asked=Question("Refunds?", channel="C1", language="en"), mentioned=True)
    assert question.reply_thread == T and not question.in_thread


def test_a_mention_inside_a_thread_is_answered_in_that_thread() -> None:
    question = parse_mention(mention(thread_ts=THREAD), BOT)

    assert question is not None and question.reply_thread == THREAD and question.in_thread


@pytest.mark.parametrize(("why", "body"), [
    ("the bot's own message", message(thread_ts=THREAD) | {"event": ev.user_message(
        channel="C1", user=BOT, text="x", ts=T, team="T1", thread_ts=THREAD)}),
    ("another bot", envelope(ev.bot_message(channel="C1", bot_id="B9", text="x", ts=T, thread_ts=THREAD))),
    ("a top-level message without a mention", message()),
    ("the message copy of a mention", envelope(ev.as_message_event(ev.app_mention(
        channel="C1", user="U1", text=f"<@{BOT}> Refunds?", ts=T, team="T1", thread_ts=THREAD)))),
    ("an edit", envelope(ev.message_changed(channel="C1", message={"user": "U1", "text": "x", "ts": T},
                                            previous_message={"user": "U1", "text": "y", "ts": T}, ts=T))),
    ("a join", envelope(ev.channel_join(channel="C1", user="U1", ts=T))),
    ("an empty thread reply (a file, an emoji-only …)", message(text="   ", thread_ts=THREAD)),
])
def test_messages_that_are_not_follow_up_questions(why: str, body: dict) -> None:
    assert parse_follow_up(body, BOT) is None, why


def test_a_persons_reply_in_a_thread_is_a_follow_up_candidate() -> None:
    question = parse_follow_up(message(thread_ts=THREAD), BOT, retry=2)

    assert question is not None and not question.mentioned and question.thread_ts == THREAD and question.retry == 2


@pytest.mark.parametrize(("text", "question"), [
    (f"<@{BOT}> How long do refunds take?", "How long do refunds take?"),
    (f"<@{BOT}|verbatim>   what   about <@U2|ann>?", "what about @ann?"),
    (f"<@{BOT}> policy for <#C9|billing> and <#C8>", "policy for #billing and"),
    (f"<@{BOT}> see <https://acme.test/refunds|the refund page>", "see the refund page"),
    (f"<@{BOT}> is <https://acme.test/x> right?", "is https://acme.test/x right?"),
    (f"<!here> <@{BOT}> <!subteam^S1|@leads> refunds &amp; credits &lt;EU&gt;", "@leads refunds & credits <EU>"),
    (f"<@{BOT}> <mailto:help@acme.test|help@acme.test>?", "help@acme.test?"),
    (f"<@{BOT}>", ""),
])
def test_the_question_is_read_as_people_see_it(text: str, question: str) -> None:
    assert clean_question(text, BOT) == question


@pytest.mark.parametrize(("headers", "retry"), [
    ({}, 0), ({"x-slack-retry-num": ["0"]}, 0), ({"x-slack-retry-num": ["2"]}, 2), ({"x-slack-retry-num": "1"}, 1),
    ({"x-slack-retry-num": ["nope"]}, 0),
])
def test_retry_numbers_from_http_headers_and_socket_mode(headers: dict, retry: int) -> None:
    assert retry_number(headers) == retry


def test_a_reaction_is_read_without_colons_or_skin_tone() -> None:
    body = envelope(ev.reaction_event("reaction_removed", user="U1", reaction="+1::skin-tone-3", channel="C1", ts=T,
                                      item_user=BOT, event_ts="1700000001.000000"))
    reaction = parse_reaction(body)

    assert reaction is not None and not reaction.added and reaction.name == "+1"
    assert (reaction.channel, reaction.message_ts, reaction.item_user) == ("C1", T, BOT)
    assert reaction.at == datetime.fromtimestamp(1700000001, UTC)


@pytest.mark.parametrize(("name", "target"), [
    ("x", FlagTarget(None)), ("triangular_flag_on_post", FlagTarget(None)), ("one", FlagTarget("S1")),
    ("nine", FlagTarget("S9")), ("keycap_ten", None), ("tada", None), ("eyes", None),
])
def test_which_reactions_flag_what(name: str, target: FlagTarget | None) -> None:
    assert flag_target(name, SlackOptions()) == target


def test_parsing_and_rendering_do_no_io() -> None:
    """Payload parsing and Block Kit rendering are pure (the edge's import rules: tests/test_import_rules.py)."""
    package = Path(__file__).resolve().parents[2] / "bot" / "slack"
    for name in ("blocks.py", "text.py", "events.py", "messages.py"):
        imported = {module.split(".")[0] for module in imported_modules(package / name)}
        assert not imported & {"aiohttp", "slack_sdk", "slack_bolt", "sqlalchemy", "storage", "asyncio"}, name
