"""The stand-in's assistant pane, interactivity and membership, driven by the real slack-bolt and slack_sdk: Bolt's
own ``AsyncAssistant`` recognises its assistant events and DM-thread messages, and its utilities' Web API calls
(setSuggestedPrompts, setStatus, setTitle) land; ``block_actions`` arrive as a signed form over HTTP and as an
``interactive`` envelope over Socket Mode, and Bolt routes both to ``app.action`` and acks them."""

from __future__ import annotations

from typing import Any

import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.middleware.assistant.async_assistant import AsyncAssistant
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.standins import SlackStandIn
from tests.standins_tests.bolt_http import serve_bolt

CHANNEL = "C0SUPPORT"


async def test_bolts_assistant_sees_a_thread_start_and_a_question_and_its_calls_land(
        bolt_app: AsyncApp, slack: SlackStandIn) -> None:
    seen: list[str] = []
    assistant = AsyncAssistant()

    @assistant.thread_started
    async def started(set_suggested_prompts: Any, payload: dict[str, Any]) -> None:
        seen.append(f"started from {payload['assistant_thread']['context'].get('channel_id')}")
        await set_suggested_prompts(prompts=[{"title": "Refunds?", "message": "How long do refunds take?"}])

    @assistant.user_message
    async def question(set_status: Any, set_title: Any, payload: dict[str, Any]) -> None:
        seen.append(payload["text"])
        await set_status("searching the documents…")
        await set_title(payload["text"])

    bolt_app.assistant(assistant)
    start = slack.assistant_thread_started(context_channel=CHANNEL)
    thread_ts = start["assistant_thread"]["thread_ts"]
    async with serve_bolt(bolt_app) as url:
        assert (await slack.deliver_event(url, start)).status == 200
        assert (await slack.deliver_event(url, slack.direct_message("Refunds?", thread_ts=thread_ts))).status == 200
        await slack.wait_for(lambda: len(seen) == 2 and slack.assistant_threads[(slack.dm_channel(), thread_ts)]
                             .get("title"), what="both handlers")

    thread = slack.assistant_threads[(slack.dm_channel(), thread_ts)]
    assert seen == [f"started from {CHANNEL}", "Refunds?"]
    assert (thread["status"], thread["title"]) == ("searching the documents…", "Refunds?")
    assert thread["prompts"]["prompts"] == [{"title": "Refunds?", "message": "How long do refunds take?"}]
    assert slack.thread(slack.dm_channel(), thread_ts)[0]["subtype"] == "assistant_app_thread"


async def test_assistant_methods_refuse_a_thread_that_is_not_the_panes(web_client: AsyncWebClient,
                                                                      slack: SlackStandIn) -> None:
    dm = slack.dm_channel()
    posted = await web_client.chat_postMessage(channel=dm, text="a plain DM")
    with pytest.raises(SlackApiError) as not_a_pane:
        await web_client.assistant_threads_setStatus(channel_id=dm, thread_ts=posted["ts"], status="…")
    with pytest.raises(SlackApiError) as not_a_dm:
        await web_client.assistant_threads_setTitle(channel_id=CHANNEL, thread_ts=posted["ts"], title="x")
    assert (not_a_pane.value.response["error"], not_a_dm.value.response["error"]) == (
        "thread_not_found", "channel_not_found")


async def test_members_page_with_a_cursor_and_leaving_removes_one(web_client: AsyncWebClient,
                                                                 slack: SlackStandIn) -> None:
    for user in ("U0ANNA", "U0BORIS", "U0GRETA"):
        slack.add_member(CHANNEL, user)
    first = await web_client.conversations_members(channel=CHANNEL, limit=2)
    second = await web_client.conversations_members(channel=CHANNEL, limit=2,
                                                    cursor=first["response_metadata"]["next_cursor"])
    slack.remove_member(CHANNEL, "U0BORIS")
    after = await web_client.conversations_members(channel=CHANNEL)
    assert first["members"] + second["members"] == ["U0ANNA", "U0BORIS", "U0GRETA"]
    assert second["response_metadata"]["next_cursor"] == "" and after["members"] == ["U0ANNA", "U0GRETA"]


async def test_users_info_shows_the_locale_only_when_asked(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    slack.add_user("U0KEIKO", locale="ja-JP")
    plain = await web_client.users_info(user="U0KEIKO")
    with_locale = await web_client.users_info(user="U0KEIKO", include_locale=True)
    assert "locale" not in plain["user"] and with_locale["user"]["locale"] == "ja-JP"


def _record_clicks(app: AsyncApp, clicks: list[dict[str, Any]]) -> None:
    @app.action("feedback")
    async def on_click(ack: AsyncAck, body: dict[str, Any]) -> None:
        await ack()
        clicks.append(body)


async def _message_with_feedback(web_client: AsyncWebClient) -> str:
    blocks = [{"type": "context_actions", "elements": [{"type": "feedback_buttons", "action_id": "feedback",
              "positive_button": {"text": {"type": "plain_text", "text": "👍"}, "value": "positive"},
              "negative_button": {"text": {"type": "plain_text", "text": "👎"}, "value": "negative"}}]}]
    return str((await web_client.chat_postMessage(channel=CHANNEL, text="an answer", blocks=blocks))["ts"])


async def test_a_block_action_over_http_is_a_signed_form_that_bolt_routes_and_acks(
        bolt_app: AsyncApp, web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    clicks: list[dict[str, Any]] = []
    _record_clicks(bolt_app, clicks)
    ts = await _message_with_feedback(web_client)
    async with serve_bolt(bolt_app) as url:
        delivery = await slack.deliver_interaction(url, slack.block_action(CHANNEL, ts, "feedback", "negative"))
        await slack.wait_for(lambda: clicks, what="the click")
    (action,) = clicks[0]["actions"]
    assert delivery.status == 200
    assert (action["type"], action["value"], clicks[0]["container"]["message_ts"]) == (
        "feedback_buttons", "negative", ts)


async def test_a_block_action_over_socket_mode_is_an_interactive_envelope_that_bolt_acks(
        bolt_app: AsyncApp, web_client: AsyncWebClient, slack: SlackStandIn, handler: AsyncSocketModeHandler) -> None:
    clicks: list[dict[str, Any]] = []
    _record_clicks(bolt_app, clicks)
    ts = await _message_with_feedback(web_client)
    await handler.connect_async()
    await slack.wait_socket_connected()
    envelope_id = await slack.send_envelope("interactive", slack.block_action(CHANNEL, ts, "feedback", "positive"))
    ack = await slack.wait_for_ack(envelope_id)
    await slack.wait_for(lambda: clicks, what="the click")
    assert ack["envelope_id"] == envelope_id and clicks[0]["actions"][0]["value"] == "positive"
