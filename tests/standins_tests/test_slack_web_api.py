"""The Slack stand-in's Web API, driven by the real slack_sdk AsyncWebClient."""

from __future__ import annotations

import time

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from tests.standins import SlackStandIn

CHANNEL = "C0SUPPORT"


async def test_auth_test_names_the_bot_and_its_scopes(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    """Bolt reads the bot user id, bot id and scopes from auth.test; they match the stand-in's bot."""
    response = await web_client.auth_test()
    assert response["ok"] is True
    assert (response["user_id"], response["bot_id"], response["team_id"]) == ("UBOT", "BBOT", slack.team_id)
    assert "chat:write" in response.headers["x-oauth-scopes"]
    assert slack.calls == [("auth.test", {})]


async def test_json_post_form_post_and_get_all_reach_the_same_methods(
    web_client: AsyncWebClient, slack: SlackStandIn
) -> None:
    """slack_sdk sends JSON bodies, form bodies, and query strings on GET and POST; all are understood."""
    section = {"type": "section", "text": {"type": "mrkdwn", "text": "*hi*"}}
    by_json = await web_client.chat_postMessage(channel=CHANNEL, text="as JSON", blocks=[section])
    by_form = await web_client.api_call(
        "chat.postMessage",
        data={"channel": CHANNEL, "text": "as a form",
              "blocks": '[{"type": "section", "text": {"type": "mrkdwn", "text": "form"}}]'},
    )
    by_get = await web_client.conversations_info(channel=CHANNEL)
    by_query_post = await web_client.reactions_add(channel=CHANNEL, timestamp=by_form["ts"], name="eyes")

    assert by_json["message"]["blocks"][0]["text"]["text"] == "*hi*"
    assert by_form["message"]["blocks"][0]["text"]["text"] == "form", "a form's JSON-encoded blocks are decoded"
    assert by_get["channel"]["id"] == CHANNEL and by_query_post["ok"] is True
    seen = [(r.method, r.http_verb, r.content_type) for r in slack.requests]
    assert seen == [
        ("chat.postMessage", "POST", "application/json"),
        ("chat.postMessage", "POST", "application/x-www-form-urlencoded"),
        ("conversations.info", "GET", ""),
        ("reactions.add", "POST", ""),
    ]
    assert [m["text"] for m in slack.messages(CHANNEL)] == ["as JSON", "as a form"]


async def test_post_message_answers_like_slack_and_adds_block_ids(web_client: AsyncWebClient) -> None:
    """The answer carries channel, ts and the stored message; blocks without a block_id get one, as in Slack."""
    response = await web_client.chat_postMessage(channel=CHANNEL, text="fallback",
                                                 blocks=[{"type": "divider"}, {"type": "divider", "block_id": "keep"}])
    message = response["message"]
    assert response["channel"] == CHANNEL and message["ts"] == response["ts"]
    assert (message["user"], message["bot_id"], message["text"]) == ("UBOT", "BBOT", "fallback")
    assert message["blocks"][0]["block_id"] and message["blocks"][1]["block_id"] == "keep"


async def test_thread_replies_come_back_oldest_first_with_authors(
    web_client: AsyncWebClient, slack: SlackStandIn
) -> None:
    """conversations.replies returns the parent then the replies, with user/bot_id and thread metadata."""
    question = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "How long do refunds take?"})
    first = await web_client.chat_postMessage(channel=CHANNEL, text="30 days", thread_ts=question["ts"])
    second = await web_client.chat_postMessage(channel=CHANNEL, text="See S1", thread_ts=question["ts"])
    await web_client.chat_postMessage(channel=CHANNEL, text="unrelated, not in the thread")

    replies = await web_client.conversations_replies(channel=CHANNEL, ts=question["ts"])

    messages = replies["messages"]
    assert [m["ts"] for m in messages] == [question["ts"], first["ts"], second["ts"]]
    assert messages[0]["user"] == "U0ASKER" and messages[0]["reply_count"] == 2
    assert messages[0]["reply_users"] == ["UBOT"] and messages[0]["latest_reply"] == second["ts"]
    assert all(m["bot_id"] == "BBOT" and m["thread_ts"] == question["ts"] for m in messages[1:])
    assert messages[1]["parent_user_id"] == "U0ASKER"
    assert slack.thread(CHANNEL, question["ts"]) == messages


async def test_replies_page_with_limit_and_cursor(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    """Long threads page like Slack's: has_more and response_metadata.next_cursor."""
    parent = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "q"})
    for i in range(4):
        await web_client.chat_postMessage(channel=CHANNEL, text=f"reply {i}", thread_ts=parent["ts"])

    first_page = await web_client.conversations_replies(channel=CHANNEL, ts=parent["ts"], limit=3)
    cursor = first_page["response_metadata"]["next_cursor"]
    second_page = await web_client.conversations_replies(channel=CHANNEL, ts=parent["ts"], limit=3, cursor=cursor)

    assert first_page["has_more"] is True and second_page["has_more"] is False
    texts = [m["text"] for m in first_page["messages"] + second_page["messages"]]
    assert texts == ["q", "reply 0", "reply 1", "reply 2", "reply 3"]


async def test_replies_of_an_unknown_thread_or_channel_fail_like_slack(web_client: AsyncWebClient) -> None:
    await web_client.chat_postMessage(channel=CHANNEL, text="something")
    with pytest.raises(SlackApiError) as unknown_thread:
        await web_client.conversations_replies(channel=CHANNEL, ts="1.000001")
    with pytest.raises(SlackApiError) as unknown_channel:
        await web_client.conversations_replies(channel="C0NOWHERE", ts="1.000001")
    assert unknown_thread.value.response["error"] == "thread_not_found"
    assert unknown_channel.value.response["error"] == "channel_not_found"


async def test_chat_update_edits_only_the_bots_own_messages(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    posted = await web_client.chat_postMessage(channel=CHANNEL, text="Working on it…")
    updated = await web_client.chat_update(channel=CHANNEL, ts=posted["ts"], text="Done")
    assert updated["ts"] == posted["ts"] and updated["message"]["text"] == "Done"
    assert slack.message(CHANNEL, posted["ts"])["edited"]["user"] == "UBOT"

    someone_elses = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "mine"})
    with pytest.raises(SlackApiError) as not_ours:
        await web_client.chat_update(channel=CHANNEL, ts=someone_elses["ts"], text="edited by the bot")
    with pytest.raises(SlackApiError) as missing:
        await web_client.chat_update(channel=CHANNEL, ts="1.000001", text="x")
    assert not_ours.value.response["error"] == "cant_update_message"
    assert missing.value.response["error"] == "message_not_found"


async def test_reactions_add_and_remove_with_slacks_errors(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    """The :eyes: working indicator: added once, removed once; doing either twice fails as in Slack."""
    question = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "q"})
    await web_client.reactions_add(channel=CHANNEL, timestamp=question["ts"], name="eyes")
    assert slack.reactions(CHANNEL, question["ts"]) == {"eyes": ["UBOT"]}
    with pytest.raises(SlackApiError) as twice:
        await web_client.reactions_add(channel=CHANNEL, timestamp=question["ts"], name="eyes")

    await web_client.reactions_remove(channel=CHANNEL, timestamp=question["ts"], name="eyes")
    assert slack.reactions(CHANNEL, question["ts"]) == {}
    with pytest.raises(SlackApiError) as gone:
        await web_client.reactions_remove(channel=CHANNEL, timestamp=question["ts"], name="eyes")
    with pytest.raises(SlackApiError) as no_message:
        await web_client.reactions_add(channel=CHANNEL, timestamp="1.000001", name="eyes")

    assert twice.value.response["error"] == "already_reacted"
    assert gone.value.response["error"] == "no_reaction"
    assert no_message.value.response["error"] == "message_not_found"


async def test_ephemeral_messages_stay_out_of_the_channel(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    response = await web_client.chat_postEphemeral(channel=CHANNEL, user="U0ASKER", text="only you")
    assert response["message_ts"]
    assert slack.messages(CHANNEL) == []
    assert [(e["user"], e["text"]) for e in slack.ephemerals(CHANNEL)] == [("U0ASKER", "only you")]


async def test_an_ephemeral_message_goes_only_to_a_member_and_a_click_on_it_carries_no_message(
        web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    slack.add_member(CHANNEL, "U0ASKER")
    blocks = [{"type": "actions", "elements": [{"type": "button", "action_id": "share", "value": "share",
                                                "text": {"type": "plain_text", "text": "Share"}}]}]
    shown = await web_client.chat_postEphemeral(channel=CHANNEL, user="U0ASKER", text="only you", blocks=blocks,
                                                thread_ts="1700000000.000100")
    with pytest.raises(SlackApiError) as outsider:
        await web_client.chat_postEphemeral(channel=CHANNEL, user="U0OUTSIDER", text="not a member")

    click = slack.ephemeral_action(CHANNEL, shown["message_ts"], "share", "share")
    assert outsider.value.response["error"] == "user_not_in_channel"
    assert "message" not in click
    assert click["container"] == {"type": "message", "message_ts": shown["message_ts"], "channel_id": CHANNEL,
                                  "is_ephemeral": True, "thread_ts": "1700000000.000100"}
    assert (click["user"]["id"], click["actions"][0]["action_id"]) == ("U0ASKER", "share")


async def test_users_channels_and_usergroups(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    slack.add_user("U0LEAD", real_name="Lee Lead", email="lee@example.com")
    slack.add_channel("G0PRIVATE", name="support-leads")
    slack.add_usergroup("S0LEADS", ["U0LEAD"])

    user = (await web_client.users_info(user="U0LEAD"))["user"]
    channel = (await web_client.conversations_info(channel="G0PRIVATE"))["channel"]
    members = (await web_client.usergroups_users_list(usergroup="S0LEADS"))["users"]

    assert (user["real_name"], user["profile"]["email"], user["is_bot"]) == ("Lee Lead", "lee@example.com", False)
    assert (channel["name"], channel["is_private"]) == ("support-leads", True)
    assert members == ["U0LEAD"]
    for call, error in [(web_client.users_info(user="U0NOBODY"), "user_not_found"),
                        (web_client.conversations_info(channel="C0NOWHERE"), "channel_not_found"),
                        (web_client.usergroups_users_list(usergroup="S0NONE"), "no_such_subteam")]:
        with pytest.raises(SlackApiError) as failure:
            await call
        assert failure.value.response["error"] == error


@pytest.mark.parametrize(
    ("token", "error"),
    [(None, "not_authed"), ("xoxb-wrong", "invalid_auth"), ("xapp-1-A0STANDIN-1-standin-app-token",
                                                             "not_allowed_token_type")],
)
async def test_bot_methods_need_the_bot_token(slack: SlackStandIn, token: str | None, error: str) -> None:
    client = AsyncWebClient(base_url=slack.api_url, token=token)
    with pytest.raises(SlackApiError) as failure:
        await client.chat_postMessage(channel=CHANNEL, text="hello")
    assert failure.value.response["error"] == error
    assert slack.messages(CHANNEL) == []


async def test_token_as_a_form_parameter_is_accepted(slack: SlackStandIn) -> None:
    """Old clients send ``token`` in the form body instead of the Authorization header; Slack takes both."""
    client = AsyncWebClient(base_url=slack.api_url)
    response = await client.api_call("auth.test", data={"token": slack.bot_token})
    assert response["user_id"] == "UBOT"


async def test_apps_connections_open_needs_the_app_level_token(slack: SlackStandIn, web_client: AsyncWebClient) -> None:
    opened = await web_client.apps_connections_open(app_token=slack.app_token)
    assert opened["url"].startswith(slack.base_url.replace("http://", "ws://") + "/socket?ticket=")
    with pytest.raises(SlackApiError) as with_bot_token:
        await web_client.apps_connections_open(app_token=slack.bot_token)
    assert with_bot_token.value.response["error"] == "not_allowed_token_type"


async def test_unknown_methods_are_refused(web_client: AsyncWebClient) -> None:
    with pytest.raises(SlackApiError) as failure:
        await web_client.api_call("chat.teleport", json={"channel": CHANNEL})
    assert failure.value.response["error"] == "unknown_method"


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"text": ""}, "no_text"),
        ({"text": "x" * 40_001}, "msg_too_long"),
        ({"text": "too many", "blocks": [{"type": "divider"}] * 51}, "invalid_blocks"),
        ({"text": "long section", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}]},
         "invalid_blocks"),
        ({"text": "long header", "blocks": [{"type": "header", "text": {"type": "plain_text", "text": "x" * 151}}]},
         "invalid_blocks"),
        ({"text": "no type", "blocks": [{"text": {"type": "mrkdwn", "text": "x"}}]}, "invalid_blocks"),
    ],
)
async def test_messages_breaking_slacks_limits_are_refused(
    web_client: AsyncWebClient, slack: SlackStandIn, kwargs: dict[str, object], error: str
) -> None:
    """What a renderer can get wrong fails here as it would in Slack, instead of passing silently."""
    with pytest.raises(SlackApiError) as failure:
        if kwargs["text"]:
            await web_client.chat_postMessage(channel=CHANNEL, **kwargs)
        else:
            await web_client.api_call("chat.postMessage", json={"channel": CHANNEL, **kwargs})
    assert failure.value.response["error"] == error
    if error == "invalid_blocks":
        assert failure.value.response["response_metadata"]["messages"][0].startswith("[ERROR] ")
    assert slack.messages(CHANNEL) == []


async def test_injected_failures_apply_to_the_next_calls_only(web_client: AsyncWebClient, slack: SlackStandIn) -> None:
    slack.fail("chat.postMessage", "channel_not_found", times=2)
    for _ in range(2):
        with pytest.raises(SlackApiError) as failure:
            await web_client.chat_postMessage(channel=CHANNEL, text="x")
        assert failure.value.response["error"] == "channel_not_found"
    assert (await web_client.chat_postMessage(channel=CHANNEL, text="third time"))["ok"] is True


async def test_wait_for_returns_the_value_or_ends_with_a_clear_message(slack: SlackStandIn) -> None:
    message = slack.add_message(CHANNEL, {"user": "U0ASKER", "text": "q"})
    found = await slack.wait_for(lambda: slack.thread(CHANNEL, message["ts"])[0])
    assert found == slack.message(CHANNEL, message["ts"])
    with pytest.raises(AssertionError, match="timed out after 0.05s waiting for a reply in the thread"):
        await slack.wait_for(lambda: slack.thread(CHANNEL, message["ts"])[1], timeout=0.05,
                             what="a reply in the thread")
