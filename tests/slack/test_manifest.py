"""The Slack app manifest an admin installs from: minimal scopes, every event it subscribes is handled, and its
Agent View variant (the commented lines, uncommented as the manifest says) is a whole manifest too."""

from __future__ import annotations

from collections.abc import AsyncIterator
import re
from pathlib import Path

import pytest
import yaml

from bot.answer.service import AnswerDeps
from tests.slack.harness import Bot, Database, started_bot
from tests.standins import SlackStandIn

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"


def manifest() -> dict:
    return yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))


_AGENT_VIEW_LINE = re.compile(r"^(\s*)# ((agent_view|  agent_description|  suggested_prompts|    - title|      message"
                              r"|- app_context_changed)\b.*)$")


def agent_view_manifest() -> dict:
    """The manifest as its comments say to switch it to Agent View: assistant_view out, the agent lines in."""
    lines, skipping = [], False
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        if line.startswith("  assistant_view:"):
            skipping = True
            continue
        if skipping and line.startswith("    "):
            continue
        skipping = False
        commented = _AGENT_VIEW_LINE.match(line)
        lines.append(commented.group(1) + commented.group(2) if commented else line)
    return yaml.safe_load("\n".join(lines))


def test_the_agent_view_variant_swaps_the_feature_and_adds_only_app_context_changed() -> None:
    base, agent = manifest(), agent_view_manifest()
    assert "assistant_view" not in agent["features"] and "agent_view" not in base["features"]
    view = agent["features"]["agent_view"]
    assert view["agent_description"] == base["features"]["assistant_view"]["assistant_description"]
    assert view["suggested_prompts"] and all(set(p) == {"title", "message"} and len(p["title"]) <= 75
                                             for p in view["suggested_prompts"])
    assert sorted(agent["settings"]["event_subscriptions"]["bot_events"]) == sorted(
        [*base["settings"]["event_subscriptions"]["bot_events"], "app_context_changed"])
    assert agent["oauth_config"] == base["oauth_config"], "Agent View needs no other scope"


def test_the_manifest_asks_for_the_minimal_scopes_and_events() -> None:
    app = manifest()

    assert sorted(app["oauth_config"]["scopes"]["bot"]) == sorted([
        "app_mentions:read", "chat:write", "channels:history", "groups:history", "reactions:read", "reactions:write",
        "im:history", "assistant:write", "users:read", "channels:read", "groups:read"])
    assert sorted(app["settings"]["event_subscriptions"]["bot_events"]) == sorted([
        "app_mention", "message.channels", "message.groups", "reaction_added", "reaction_removed", "message.im",
        "assistant_thread_started", "assistant_thread_context_changed"])
    assert app["settings"]["interactivity"]["is_enabled"] is True, "the feedback buttons need interactivity"
    assert app["settings"]["interactivity"]["request_url"] == app["settings"]["event_subscriptions"]["request_url"]
    assert "assistant_view" in app["features"]
    added = ("im:history", "assistant:write", "users:read", "channels:read", "groups:read", "message.im",
             "assistant_thread_started", "assistant_thread_context_changed")
    lines = {line.split("#")[0].strip().removeprefix("- "): line
             for line in MANIFEST.read_text(encoding="utf-8").splitlines() if line.strip().startswith("- ")}
    assert all("#" in lines[name] for name in added), "each scope and event added for issue 15 says why"
    assert app["settings"]["socket_mode_enabled"] is False
    assert app["settings"]["event_subscriptions"]["request_url"].endswith("/slack/events")
    assert "usergroups:read" in MANIFEST.read_text(encoding="utf-8"), "the optional scope is explained"


@pytest.fixture
async def socket_bot(slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> AsyncIterator[Bot]:
    async with started_bot(slack, answer_deps, database, mode="socket") as running:
        yield running


async def test_every_subscribed_event_is_acknowledged_over_socket_mode(socket_bot: Bot) -> None:
    """Bolt's socket adapter acks only what a listener handled; an unacked event would be sent again and again."""
    slack = socket_bot.slack
    posted = slack.add_message("C0SUPPORT", {"user": "U0ASKER", "text": "hello"})
    samples = {
        "app_mention": slack.app_mention("C0SUPPORT", "<@UBOT>", user="B0OTHERBOT") | {"bot_id": "B0OTHER"},
        "message.channels": slack.user_message("C0SUPPORT", "hello everyone"),
        "message.groups": slack.user_message("G0PRIVATE", "hello team"),
        "reaction_added": slack.reaction_added("C0SUPPORT", posted["ts"], "x"),
        "reaction_removed": slack.reaction_removed("C0SUPPORT", posted["ts"], "x"),
        "message.im": slack.direct_message(""),  # nothing asked: nothing answered, but acked
        "assistant_thread_started": slack.assistant_thread_started(),
        "assistant_thread_context_changed": slack.assistant_thread_context_changed(slack.new_ts()),
        "app_context_changed": slack.app_context_changed(viewing="C0SUPPORT"),  # the Agent View variant's
    }
    assert sorted(samples) == sorted({*manifest()["settings"]["event_subscriptions"]["bot_events"],
                                      *agent_view_manifest()["settings"]["event_subscriptions"]["bot_events"]})
    for event in samples.values():
        await socket_bot.deliver(event)  # waits for the ack
    await socket_bot.settle()

    assert socket_bot.posts() == []
