"""The edge's new shapes, table-driven: which DMs are questions, assistant thread events, Agent View's context,
feedback clicks, and the DM_VISIBILITY format (a bad entry is one line naming it)."""

from __future__ import annotations

import pytest

from bot.slack.events import (
    parse_app_context,
    parse_assistant_thread,
    parse_feedback,
    parse_handoff,
    parse_message,
    parse_share,
)
from bot.slack.dm_visibility import parse_dm_visibility
from tests.standins import slack_events

DM = {"type": "message", "channel": "D0ANNA", "channel_type": "im", "user": "U0ANNA", "ts": "1.000002",
      "text": "Refund window?"}


@pytest.mark.parametrize(("change", "question"), [
    ({}, "Refund window?"),
    ({"thread_ts": "1.000001"}, "Refund window?"),  # in a DM thread (the assistant pane)
    ({"text": "<@UBOT> Refund window?"}, "Refund window?"),  # a mention in a DM is still just the question
    ({"text": "   "}, None),
    ({"bot_id": "B0OTHER"}, None),
    ({"user": "UBOT"}, None),
    ({"subtype": "message_changed"}, None),
])
def test_which_direct_messages_are_questions(change: dict, question: str | None) -> None:
    parsed = parse_message({"event_id": "Ev1", "event": DM | change}, "UBOT")
    assert (parsed.text if parsed else None) == question
    if parsed is not None:
        assert parsed.private and parsed.mentioned and parsed.in_assistant_thread == ("thread_ts" in change)


@pytest.mark.parametrize(("kind", "context", "started"), [
    ("assistant_thread_started", "C0LEADS", True),
    ("assistant_thread_started", None, True),
    ("assistant_thread_context_changed", "C0HR", False),
])
def test_assistant_thread_events_name_the_thread_and_its_context(kind: str, context: str | None,
                                                                 started: bool) -> None:
    event = slack_events.assistant_thread_event(kind, user="U0ANNA", channel="D0ANNA", thread_ts="1.000001",  # type: ignore[arg-type]
                                                event_ts="1.000002", team="T1", context_channel=context)
    thread = parse_assistant_thread({"event_id": "Ev1", "event": event})
    assert thread is not None
    assert (thread.user, thread.channel, thread.thread_ts, thread.context_channel, thread.started) == (
        "U0ANNA", "D0ANNA", "1.000001", context, started)


def _entities(*pairs: tuple[str, str]) -> dict:
    return {"entities": [{"type": f"slack#/types/{kind}", "value": value, "team_id": "T1"} for kind, value in pairs]}


PERSON = [{"team_id": "T1", "user_id": "U0ANNA", "is_bot": False, "is_enterprise_install": False}]
BOT = [{"team_id": "T1", "user_id": "UBOT", "is_bot": True, "is_enterprise_install": False}]


@pytest.mark.parametrize(("event", "authorizations", "seen"), [
    ({"user": "U0ANNA", "context": _entities(("channel_id", "C0LEADS"))}, BOT, ("U0ANNA", "C0LEADS")),
    ({"context": _entities(("channel_id", "C0LEADS"))}, PERSON, ("U0ANNA", "C0LEADS")),  # Slack's reference sample
    ({"user": "U0ANNA", "context": _entities(("canvas_id", "F1"), ("channel_id", "G0HR"), ("channel_id", "C0X"))},
     BOT, ("U0ANNA", "G0HR")),  # the most relevant channel: the first one
    ({"user": "U0ANNA", "context": {}}, BOT, ("U0ANNA", None)),  # viewing nothing
    ({"user": "U0ANNA", "context": _entities(("channel_id", "D0ANNA"))}, BOT, ("U0ANNA", None)),  # a DM: no channel
    ({"user": "U0ANNA", "context": _entities(("channel_id", "not a channel"))}, BOT, ("U0ANNA", None)),
    ({"user": "U0ANNA"}, BOT, ("U0ANNA", None)),
    ({"context": _entities(("channel_id", "C0LEADS"))}, BOT, None),  # whose view? nobody named: ignored
])
def test_agent_view_context_names_the_user_and_the_channel_they_view(event: dict, authorizations: list,
                                                                    seen: tuple | None) -> None:
    parsed = parse_app_context({"event_id": "Ev1", "team_id": "T1", "authorizations": authorizations,
                                "event": {"type": "app_context_changed"} | event})
    assert ((parsed.user, parsed.channel) if parsed else None) == seen


@pytest.mark.parametrize(("app_context", "context", "sent"), [
    (None, None, False),  # the assistant pane, or no app_context_changed subscription
    (_entities(("channel_id", "C0LEADS")), "C0LEADS", True),
    ({}, None, True),  # Agent View says: no channel in view
])
def test_a_dm_carries_the_agent_view_context_it_was_sent_from(app_context: dict | None, context: str | None,
                                                               sent: bool) -> None:
    event = DM | ({"app_context": app_context} if app_context is not None else {})
    parsed = parse_message({"event_id": "Ev1", "event": event}, "UBOT")
    assert parsed is not None and (parsed.context, parsed.context_sent) == (context, sent)


def _click(action_id: str, value: str) -> dict:
    return slack_events.block_actions(user="U0ANNA", team="T1", api_app_id="A1", channel="C0SUPPORT",
                                      message={"ts": "1.000009"}, action={"action_id": action_id, "value": value},
                                      action_ts="1700000000.5")


@pytest.mark.parametrize(("payload", "positive"), [
    (_click("verbatim_feedback", "positive"), True),
    (_click("verbatim_feedback", "negative"), False),
    (_click("verbatim_feedback_negative", "negative"), False),  # the plain button pair
    (_click("verbatim_feedback", "maybe"), None),
    (_click("something_else", "positive"), None),
    ({"type": "view_submission"}, None),
])
def test_feedback_clicks(payload: dict, positive: bool | None) -> None:
    click = parse_feedback(payload)
    assert (click.positive if click else None) == positive
    if click is not None:
        assert (click.user, click.channel, click.message_ts) == ("U0ANNA", "C0SUPPORT", "1.000009")


@pytest.mark.parametrize(("payload", "answer_ts"), [
    (_click("verbatim_handoff", "ask_person"), "1.000009"),  # under the answer: the answer is the message
    (_click("verbatim_handoff", "ask_person:1700000000.000100"), "1700000000.000100"),  # in the offer after a 👎
    (_click("verbatim_handoff", "ask_person:not-a-ts"), None),
    (_click("verbatim_handoff", "ask_person:"), None),
    (_click("verbatim_handoff", "positive"), None),
    (_click("verbatim_share", "ask_person"), None),
])
def test_hand_off_clicks_name_the_answer_they_are_about(payload: dict, answer_ts: str | None) -> None:
    click = parse_handoff(payload)
    assert (click.message_ts if click else None) == answer_ts


@pytest.mark.parametrize(("payload", "shared"), [
    (_click("verbatim_share", "share"), True),
    (_click("verbatim_share", "ask_person"), False),
    (_click("verbatim_handoff", "share"), False),
])
def test_share_clicks(payload: dict, shared: bool) -> None:
    assert (parse_share(payload) is not None) == shared


@pytest.mark.parametrize(("value", "users", "groups"), [
    ("", {}, {}),
    ("U0ANNA=C0LEADS", {"U0ANNA": {"C0LEADS"}}, {}),
    ("U0ANNA=C0LEADS, G0HR ;S0LEADS=C0LEADS;U0ANNA=C0OPS", {"U0ANNA": {"C0LEADS", "G0HR", "C0OPS"}},
     {"S0LEADS": {"C0LEADS"}}),
])
def test_dm_visibility_maps_users_and_groups_to_channels(value: str, users: dict, groups: dict) -> None:
    rules = parse_dm_visibility(value)
    assert (dict(rules.users), dict(rules.groups)) == (users, groups)


@pytest.mark.parametrize("value", ["U0ANNA", "U0ANNA=", "U0ANNA=leads", "anna=C0LEADS", "U0ANNA=C0LEADS=C0HR"])
def test_a_bad_dm_visibility_entry_is_named_in_one_line(value: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_dm_visibility(value)
    assert "DM_VISIBILITY entry" in str(error.value) and "\n" not in str(error.value)
