"""Hostile and malformed requests against the real server: each gets a 4xx (a short JSON error on /api/ask, the
status Slack expects on /slack/events), never a 500 or a traceback, nothing half-written, and the bot goes on."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time

import aiohttp
import pytest

from storage.exchanges import list_exchanges
from tests.slack.harness import API_TOKEN, Bot


def signed(secret: str, body: bytes, timestamp: str | None = None) -> dict[str, str]:
    stamp = timestamp or str(int(time.time()))
    digest = hmac.new(secret.encode(), b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={digest}", "Content-Type": "application/json"}


NESTED = "[" * 100_000 + "]" * 100_000
AUTH = {"Authorization": f"Bearer {API_TOKEN}", "Content-Type": "application/json"}

# (name, method, path, body, headers: "signed" / "auth" / a dict, expected status, JSON error expected)
CASES = [
    ("events: non-numeric timestamp", "POST", "/slack/events", b"{}",
     {"X-Slack-Request-Timestamp": "soon", "X-Slack-Signature": "v0=00", "Content-Type": "application/json"},
     401, False),
    ("events: signed malformed JSON", "POST", "/slack/events", b'{"type": "event_callback", ', "signed", 400, False),
    ("events: signed non-UTF-8 body", "POST", "/slack/events", b'{"text": "\xff\xfe"}', "signed", 400, False),
    ("events: signed JSON array", "POST", "/slack/events", b"[1, 2, 3]", "signed", 400, False),
    ("events: wrong method", "GET", "/slack/events", b"", {}, 405, False),
    ("ask: lone surrogate", "POST", "/api/ask", b'{"question": "refund \\ud800?"}', "auth", 400, True),
    ("ask: deeply nested JSON", "POST", "/api/ask", NESTED.encode(), "auth", 400, True),
    ("ask: non-UTF-8 body", "POST", "/api/ask", b'{"question": "\xff"}', "auth", 400, True),
    ("ask: JSON array", "POST", "/api/ask", b'["refunds?"]', "auth", 400, True),
    ("ask: one-megabyte question", "POST", "/api/ask",
     json.dumps({"question": "x" * 1_000_000}).encode(), "auth", 413, True),
    ("ask: wrong method", "GET", "/api/ask", b"", "auth", 405, True),
    ("ask: unknown path under /api", "POST", "/api/nothing", b"{}", "auth", 404, True),
]


@pytest.mark.parametrize(("name", "method", "path", "body", "headers", "status", "json_error"), CASES,
                         ids=[c[0] for c in CASES])
async def test_a_hostile_request_gets_a_4xx_and_the_bot_goes_on(
        bot: Bot, caplog: pytest.LogCaptureFixture, name: str, method: str, path: str, body: bytes,
        headers: dict[str, str] | str, status: int, json_error: bool) -> None:
    sent = signed(bot.slack.signing_secret, body) if headers == "signed" else AUTH if headers == "auth" else headers
    caplog.set_level(logging.DEBUG)
    async with aiohttp.ClientSession() as session:
        async with session.request(method, f"{bot.running.url}{path}", data=body, headers=sent) as response:
            got, text, content_type = response.status, await response.text(), response.content_type
        async with session.get(f"{bot.running.url}/healthz") as health:
            alive = health.status
    assert got == status, text
    if json_error:
        assert content_type == "application/json" and isinstance(json.loads(text).get("error"), str)
        assert len(text) < 300
    assert alive == 200
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]
    async with bot.db.sessions() as session:
        assert await list_exchanges(session) == []  # nothing half-written


async def test_a_huge_header_is_refused_and_the_bot_goes_on(bot: Bot) -> None:
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{bot.running.url}/api/ask", data=b"{}",
                                headers=AUTH | {"X-Padding": "x" * 100_000}) as response:
            assert 400 <= response.status < 500
        async with session.get(f"{bot.running.url}/healthz") as health:
            assert health.status == 200
