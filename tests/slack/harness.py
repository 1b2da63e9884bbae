"""The bot as the tests run it: the real server (``bot.serve.running_bot``) with the real Bolt app and slack_sdk,
against the Slack stand-in, answering from the session's demo corpus into a real database.

``Bot.deliver`` sends an event the way the chosen mode does — a signed POST to /slack/events (HTTP) or an
envelope over the socket, waiting for its ack (Socket Mode) — so one test body can run in both modes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from pydantic import SecretStr
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.answer.service import AnswerDeps
from bot.exchange_log import ExchangeLog
from bot.serve import RunningBot, running_bot
from bot.settings import Settings
from bot.slack.deps import SlackDeps, SlackOptions, build_web_client
from bot.slack.visibility import Clock
from storage.exchanges import find_by_reply
from storage.journal import Journal
from storage.records import ExchangeRecord
from tests.standins import SlackStandIn

API_TOKEN = "test-api-token-0123456789"
METRICS_TOKEN = "test-metrics-token-9876543210"
LEAD = "U0LEAD"
# A question the demo corpus answers (accounts/password-reset.md), the words its quote holds, a follow-up that
# only makes sense with it, and what the follow-up's standalone query must then contain.
QUESTION = "How long is an account locked after 5 failed sign-in attempts?"
ANSWER = "15 minutes"
FOLLOW_UP = "Can support shorten it?"
TOPIC = "account locked after 5 failed sign-in attempts"
JsonDict = dict[str, Any]


@dataclass
class Database:
    url: str
    engine: AsyncEngine
    sessions: async_sessionmaker[AsyncSession]
    journal: Journal


def bot_settings(slack: SlackStandIn, *, mode: str = "http", api_token: str | None = API_TOKEN,
                 leads: str = LEAD, home: Path | None = None, metrics_token: str | None = METRICS_TOKEN,
                 log_questions: bool = False, **more: Any) -> Settings:
    """Settings as an admin would set them for this stand-in workspace (nothing read from .env)."""
    return Settings(  # type: ignore[call-arg]
        _env_file=None,
        slack_bot_token=SecretStr(slack.bot_token),
        slack_signing_secret=SecretStr(slack.signing_secret) if mode == "http" else None,
        slack_app_token=SecretStr(slack.app_token) if mode == "socket" else None,
        slack_api_url=slack.api_url,
        api_token=SecretStr(api_token) if api_token else None,
        metrics_token=SecretStr(metrics_token) if metrics_token else None,
        log_questions=log_questions,
        lead_user_ids=leads,
        lead_usergroup_id=None,
        **({"verbatim_home": home} if home is not None else {}),
        **more,
    )


@dataclass
class Bot:
    slack: SlackStandIn
    deps: SlackDeps
    db: Database
    settings: Settings
    running: RunningBot

    @property
    def mode(self) -> str:
        return self.running.mode

    @property
    def events_url(self) -> str:
        return f"{self.running.url}/slack/events"

    async def deliver(self, payload: JsonDict, *, retry: int = 0) -> JsonDict:
        """Deliver an event (or an envelope, for a retry of the same event id); returns the envelope."""
        envelope = payload if payload.get("type") == "event_callback" else self.slack.envelope(payload)
        if self.mode == "http":
            status, body = await self.slack.deliver_event(self.events_url, envelope, retry_num=retry or None)
            assert status == 200, (status, body)
        else:
            envelope_id = await self.slack.send_envelope("events_api", envelope, retry_attempt=retry,
                                                         retry_reason="timeout" if retry else "")
            await self.slack.wait_for_ack(envelope_id)
        return envelope

    async def ask(self, channel: str, text: str, **kwargs: Any) -> JsonDict:
        """@mention the bot with ``text``; returns the app_mention event."""
        mention = self.slack.app_mention(channel, text, **kwargs)
        await self.deliver(mention)
        return mention

    async def reply(self, channel: str, thread_ts: str, *, nth: int = 1) -> JsonDict:
        """The bot's ``nth`` reply in the thread, once it is there."""
        def replies() -> list[JsonDict]:
            return [m for m in self.slack.thread(channel, thread_ts) if m.get("bot_id") == self.slack.bot_id]

        return (await self.slack.wait_for(lambda: replies()[nth - 1], timeout=60,
                                          what=f"reply {nth} in thread {thread_ts}"))

    async def settle(self) -> None:
        """Let every event delivered so far be handled (listeners run after the ack)."""
        await asyncio.sleep(0.05)
        await self.slack.wait_for(lambda: len(self.deps.in_flight) == 0, timeout=60, what="answers in flight")
        await asyncio.sleep(0.05)
        await self.slack.wait_for(lambda: len(self.deps.in_flight) == 0, timeout=60, what="answers in flight")

    async def exchange_of(self, channel: str, reply_ts: str) -> ExchangeRecord:
        async def lookup() -> ExchangeRecord | None:
            async with self.db.sessions() as session:
                return await find_by_reply(session, channel, reply_ts)

        for _ in range(500):
            record = await lookup()
            if record is not None and record.outcome != "pending":
                return record
            await asyncio.sleep(0.02)
        raise AssertionError(f"no exchange logged for reply {reply_ts} in {channel}")

    async def click(self, channel: str, message_ts: str, action_id: str, value: str, *, user: str | None = None) -> None:
        """Click a button of a message, as the chosen mode delivers it (a form POST, or an interactive envelope)."""
        await self._interact(self.slack.block_action(channel, message_ts, action_id, value, user=user))

    async def click_ephemeral(self, channel: str, message_ts: str, action_id: str, value: str, *,
                              user: str | None = None) -> None:
        """Click a button of an ephemeral message (only its user sees it), as the chosen mode delivers it."""
        await self._interact(self.slack.ephemeral_action(channel, message_ts, action_id, value, user=user))

    async def _interact(self, payload: JsonDict) -> None:
        if self.mode == "http":
            status, body = await self.slack.deliver_interaction(self.events_url, payload)
            assert status == 200, (status, body)
        else:
            await self.slack.wait_for_ack(await self.slack.send_envelope("interactive", payload))

    def posts(self) -> list[JsonDict]:
        return self.slack.calls_to("chat.postMessage")


@asynccontextmanager
async def started_bot(slack: SlackStandIn, answer: AnswerDeps, db: Database, *, mode: str = "http",
                      settings: Settings | None = None, clock: Clock = time.monotonic) -> AsyncIterator[Bot]:
    settings = settings or bot_settings(slack, mode=mode)
    async with aiohttp.ClientSession() as session:
        deps = SlackDeps(answer=answer, log=ExchangeLog(db.sessions, db.journal),
                         client=build_web_client(settings, session), options=SlackOptions.from_settings(settings),
                         clock=clock)
        async with running_bot(settings, deps, host="127.0.0.1", port=0, replay_every_s=3600,
                               drain_timeout_s=60) as running:
            if running.mode == "socket":
                await slack.wait_socket_connected()
            yield Bot(slack, deps, db, settings, running)
