"""Socket Mode between the Slack stand-in and a real Bolt ``AsyncSocketModeHandler`` (slack_sdk's aiohttp client)."""

from __future__ import annotations

from typing import Any

import aiohttp
import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.request.async_request import AsyncBoltRequest

from tests.standins import SlackStandIn

CHANNEL = "C0SUPPORT"


async def test_handler_connects_acks_an_envelope_and_its_reply_lands(
    bolt_app: AsyncApp, slack: SlackStandIn, handler: AsyncSocketModeHandler
) -> None:
    """apps.connections.open with the xapp token, hello, an events_api envelope, the ack, a reply in the thread."""

    @bolt_app.event("app_mention")
    async def on_mention(event: dict[str, Any], say: AsyncSay) -> None:
        await say(text="over the socket", thread_ts=event["ts"])

    await handler.connect_async()
    await slack.wait_socket_connected()
    mention = slack.app_mention(CHANNEL, "q")
    envelope_id = await slack.send_envelope("events_api", slack.envelope(mention))

    ack = await slack.wait_for_ack(envelope_id)
    reply = await slack.wait_for(lambda: slack.thread(CHANNEL, mention["ts"])[1], what="the reply")

    assert ack == {"envelope_id": envelope_id}
    assert reply["text"] == "over the socket" and reply["bot_id"] == "BBOT"
    opened = [r for r in slack.requests if r.method == "apps.connections.open"]
    assert [r.token for r in opened] == [slack.app_token], "the socket URL is fetched with the app-level token"
    frame = slack.envelopes[envelope_id]
    assert (frame["type"], frame["accepts_response_payload"], frame["retry_attempt"], frame["retry_reason"]) == (
        "events_api", False, 0, "")


async def test_redelivery_carries_retry_attempt_and_the_same_event(
    bolt_app: AsyncApp, slack: SlackStandIn, handler: AsyncSocketModeHandler
) -> None:
    """Slack's Socket Mode retry: same payload (same event_id), new envelope id, retry_attempt 1.

    Bolt turns ``retry_attempt``/``retry_reason`` into the HTTP retry headers, and Slack sends them on
    first deliveries too (0 and ""), so in Socket Mode every event carries ``x-slack-retry-num``: a bot
    must compare it with "0", not merely look for the header.
    """
    seen: list[tuple[str, list[str] | None, list[str] | None]] = []

    @bolt_app.event("app_mention")
    async def on_mention(body: dict[str, Any], req: AsyncBoltRequest) -> None:
        seen.append((body["event_id"], req.headers.get("x-slack-retry-num"), req.headers.get("x-slack-retry-reason")))

    await handler.connect_async()
    await slack.wait_socket_connected()
    first = await slack.send_envelope(payload=slack.app_mention(CHANNEL, "q"))
    await slack.wait_for_ack(first)
    assert await slack.redeliver_unless_acked(first, ack_timeout=0.1) is None, "an acked envelope is not resent"
    second = await slack.redeliver(first, retry_reason="timeout")
    await slack.wait_for_ack(second)
    await slack.wait_for(lambda: len(seen) == 2, what="both deliveries")

    event_id = slack.envelopes[first]["payload"]["event_id"]
    assert second != first
    assert (slack.envelopes[second]["retry_attempt"], slack.envelopes[second]["retry_reason"]) == (1, "timeout")
    assert sorted(seen, key=lambda s: s[1] or []) == [(event_id, ["0"], [""]), (event_id, ["1"], ["timeout"])]


async def test_socket_needs_a_ticket_from_apps_connections_open(slack: SlackStandIn) -> None:
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await session.ws_connect(slack.base_url.replace("http://", "ws://") + "/socket?ticket=forged")
    assert refused.value.status == 401


async def test_sending_without_a_connection_fails_clearly(slack: SlackStandIn) -> None:
    with pytest.raises(AssertionError, match="no Socket Mode client is connected"):
        await slack.send_envelope(payload=slack.app_mention(CHANNEL, "q"))
