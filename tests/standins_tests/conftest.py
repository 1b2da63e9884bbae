"""Fixtures for the stand-ins' own tests: one fresh stand-in per test, and the real SDK clients pointed at it.

These tests check the stand-ins' protocol, the behaviour the rest of the suite relies on (signing, retries'
headers, pages, scripted answers, Slack's refusals); what slack_sdk, Bolt or cohere do by themselves (their
retries, error classes, self-event filter) is theirs to test, not ours.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from tests.standins import CohereStandIn, SlackStandIn


@pytest.fixture
async def slack() -> AsyncIterator[SlackStandIn]:
    async with SlackStandIn() as stand_in:
        yield stand_in


@pytest.fixture
def web_client(slack: SlackStandIn) -> AsyncWebClient:
    """The real slack_sdk client, talking to the stand-in with the bot token."""
    return AsyncWebClient(base_url=slack.api_url, token=slack.bot_token)


@pytest.fixture
def bolt_app(web_client: AsyncWebClient, slack: SlackStandIn) -> AsyncApp:
    """A real Bolt app with the stand-in's signing secret; each test adds its listeners."""
    return AsyncApp(client=web_client, signing_secret=slack.signing_secret)


@pytest.fixture
async def co_api() -> AsyncIterator[CohereStandIn]:
    async with CohereStandIn() as stand_in:
        yield stand_in


@pytest.fixture
async def handler(bolt_app: AsyncApp, slack: SlackStandIn) -> AsyncIterator[AsyncSocketModeHandler]:
    """Bolt's Socket Mode handler, connected to the stand-in through apps.connections.open on the app's client."""
    socket_handler = AsyncSocketModeHandler(bolt_app, slack.app_token)
    try:
        yield socket_handler
    finally:
        await socket_handler.close_async()
