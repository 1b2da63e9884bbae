"""Signed Events API deliveries from the Slack stand-in to a real Bolt app behind Bolt's aiohttp adapter."""

from __future__ import annotations

import time
from typing import Any

from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from tests.standins import SlackStandIn, slack_events
from tests.standins_tests.bolt_http import serve_bolt

CHANNEL = "C0SUPPORT"


def _answer_mentions_in_thread(app: AsyncApp, seen: list[dict[str, Any]]) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict[str, Any], say: AsyncSay) -> None:
        seen.append(event)
        await say(text=f"Answer to: {event['text']}", thread_ts=event.get("thread_ts") or event["ts"])


async def test_signed_mention_is_accepted_and_the_reply_lands_in_the_thread(
    bolt_app: AsyncApp, slack: SlackStandIn
) -> None:
    """The whole HTTP path: a signed app_mention, Bolt's verification and ack, a reply in the question's thread."""
    seen: list[dict[str, Any]] = []
    _answer_mentions_in_thread(bolt_app, seen)
    mention = slack.app_mention(CHANNEL, "How long do refunds take?")

    async with serve_bolt(bolt_app) as url:
        status, _ = await slack.deliver_event(url, mention)
        reply = await slack.wait_for(lambda: slack.thread(CHANNEL, mention["ts"])[1], what="the reply")

    assert status == 200
    assert reply["text"] == "Answer to: <@UBOT> How long do refunds take?"
    assert (reply["bot_id"], reply["thread_ts"], reply["parent_user_id"]) == ("BBOT", mention["ts"], "U0ASKER")
    assert slack.calls_to("chat.postMessage") == [
        {"channel": CHANNEL, "text": reply["text"], "thread_ts": mention["ts"], "team_id": slack.team_id}
    ], "Bolt's say() adds the team_id"
    assert [e["ts"] for e in seen] == [mention["ts"]]


async def test_retry_headers_reach_the_app_with_the_same_event_id(bolt_app: AsyncApp, slack: SlackStandIn) -> None:
    """Slack's retry of one event: X-Slack-Retry-Num/Reason on the second delivery, same event_id."""
    deliveries: list[tuple[str, list[str] | None, list[str] | None]] = []

    @bolt_app.event("app_mention")
    async def on_mention(body: dict[str, Any], req: AsyncBoltRequest) -> None:
        deliveries.append((body["event_id"], req.headers.get("x-slack-retry-num"),
                           req.headers.get("x-slack-retry-reason")))

    envelope = slack.envelope(slack.app_mention(CHANNEL, "q"))
    async with serve_bolt(bolt_app) as url:
        await slack.deliver_event(url, envelope)
        await slack.deliver_event(url, envelope, retry_num=1, retry_reason="http_timeout")
        await slack.wait_for(lambda: len(deliveries) == 2, what="both deliveries")

    event_id = envelope["event_id"]
    assert sorted(deliveries, key=lambda d: d[1] or []) == [(event_id, None, None),
                                                           (event_id, ["1"], ["http_timeout"])]
    assert len(slack.messages(CHANNEL)) == 1, "the redelivered question is stored once"


async def test_delivered_events_change_the_workspace_first(bolt_app: AsyncApp, slack: SlackStandIn) -> None:
    """As in Slack, the question exists before the event about it: the bot can react to it and read its thread."""

    @bolt_app.event("app_mention")
    async def on_mention(event: dict[str, Any], client: Any) -> None:
        await client.reactions_add(channel=event["channel"], timestamp=event["ts"], name="eyes")

    @bolt_app.event("reaction_added")
    async def on_reaction(event: dict[str, Any]) -> None:
        return None

    mention = slack.app_mention(CHANNEL, "q")
    async with serve_bolt(bolt_app) as url:
        await slack.deliver_event(url, mention)
        await slack.wait_for(lambda: slack.reactions(CHANNEL, mention["ts"]), what="the :eyes: reaction")
        await slack.deliver_event(url, slack.reaction_added(CHANNEL, mention["ts"], "x", user="U0LEAD"))

    assert slack.reactions(CHANNEL, mention["ts"]) == {"eyes": ["UBOT"], "x": ["U0LEAD"]}
    assert slack.message(CHANNEL, mention["ts"])["type"] == "message"


def test_signature_matches_slack_sdks_verifier() -> None:
    """The stand-in signs exactly as slack_sdk verifies (v0=HMAC-SHA256 of v0:ts:body)."""
    body = '{"type": "event_callback"}'
    timestamp = str(int(time.time()))
    headers = {"X-Slack-Request-Timestamp": timestamp,
               "X-Slack-Signature": slack_events.signature("secret", timestamp, body)}
    assert SignatureVerifier("secret").is_valid_request(body, headers)
    assert not SignatureVerifier("other").is_valid_request(body, headers)


async def test_event_payloads_have_slacks_shapes(slack: SlackStandIn) -> None:
    """Each builder produces the fields Slack's reference pages show, and the ids of this workspace."""
    mention = slack.app_mention(CHANNEL, "Refund policy?", thread_ts="1700000000.000100")
    assert mention["type"] == "app_mention" and mention["text"] == "<@UBOT> Refund policy?"
    assert mention["thread_ts"] == "1700000000.000100" and mention["event_ts"] == mention["ts"]
    assert mention["blocks"][0]["elements"][0]["elements"][0] == {"type": "user", "user_id": "UBOT"}

    twin = slack.as_message_event(mention)
    assert (twin["type"], twin["ts"], twin["channel_type"]) == ("message", mention["ts"], "channel")

    envelope = slack.envelope(mention)
    assert envelope["type"] == "event_callback" and envelope["event_id"].startswith("Ev")
    assert (envelope["team_id"], envelope["api_app_id"]) == (slack.team_id, slack.app_id)
    assert envelope["authorizations"][0]["user_id"] == "UBOT" and isinstance(envelope["event_time"], int)

    question = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "old text"})
    changed = slack.message_changed(CHANNEL, question["ts"], "new text")
    assert (changed["subtype"], changed["message"]["ts"], changed["message"]["text"]) == (
        "message_changed", question["ts"], "new text")
    assert changed["previous_message"]["text"] == "old text" and changed["message"]["edited"]["ts"] == changed["ts"]

    join = slack.channel_join(CHANNEL, "U0NEW", inviter="U0LEAD")
    assert (join["subtype"], join["user"], join["inviter"]) == ("channel_join", "U0NEW", "U0LEAD")

    integration = slack.bot_message(CHANNEL, "deploy finished", bot_id="B0CI")
    assert (integration["subtype"], integration["bot_id"]) == ("bot_message", "B0CI") and "user" not in integration

    reaction = slack.reaction_added(CHANNEL, question["ts"], "two", user="U0LEAD")
    assert reaction["item"] == {"type": "message", "channel": CHANNEL, "ts": question["ts"]}
    assert (reaction["user"], reaction["item_user"], reaction["reaction"]) == ("U0LEAD", "U0ASKER", "two")
    removed = slack.reaction_removed(CHANNEL, question["ts"], "two", user="U0LEAD")
    assert removed["type"] == "reaction_removed" and removed["event_ts"] > reaction["event_ts"]

    follow_up = slack.user_message(CHANNEL, "and for EU?", thread_ts=question["ts"])
    assert (follow_up["thread_ts"], follow_up["parent_user_id"], follow_up["channel_type"]) == (
        question["ts"], "U0ASKER", "channel")


async def test_edits_joins_and_removed_reactions_are_applied_too(bolt_app: AsyncApp, slack: SlackStandIn) -> None:
    """message_changed edits the stored message, channel_join is kept in history, reaction_removed takes back."""

    @bolt_app.event("message")
    async def on_message() -> None:
        return None

    @bolt_app.event("reaction_removed")
    async def on_reaction_removed() -> None:
        return None

    question = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "refnds?",
                                           "reactions": [{"name": "x", "users": ["U0LEAD"], "count": 1}]})
    events = [slack.message_changed(CHANNEL, question["ts"], "refunds?"), slack.channel_join(CHANNEL, "U0NEW"),
              slack.reaction_removed(CHANNEL, question["ts"], "x", user="U0LEAD")]
    async with serve_bolt(bolt_app) as url:
        statuses = [(await slack.deliver_event(url, event)).status for event in events]

    assert statuses == [200, 200, 200]
    edited = slack.message(CHANNEL, question["ts"])
    assert edited["text"] == "refunds?" and "edited" in edited
    assert [m.get("subtype") for m in slack.messages(CHANNEL)] == [None, "channel_join"]
    assert slack.reactions(CHANNEL, question["ts"]) == {}
