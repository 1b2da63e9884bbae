"""The bot's HTTP server as other tools and operators meet it: /api/ask, /healthz, start-up and shutdown."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest
from click.testing import CliRunner

from bot.answer.service import AnswerDeps
from bot.api.app import web_application
from bot.api.deps import ServerState
from bot.serve import api_deps, serve_command
from retrieval.store import ChunkStore
from storage.exchanges import list_exchanges
from tests.slack.harness import ANSWER, API_TOKEN, QUESTION, Bot, Database, started_bot
from tests.standins import SlackStandIn
from tests.standins._common import serve

CONTRACT_KEYS = {"status", "answer", "citations", "nearest", "exchange_id", "timings_ms"}
CITATION_KEYS = {"id", "claim", "exact_quote", "document_id", "chunk_id", "title", "section", "page", "version", "url"}


async def post_ask(url: str, body: object, token: str | None = API_TOKEN, scheme: str = "Bearer") -> tuple[int, dict]:
    headers = {"Authorization": f"{scheme} {token}"} if token is not None else {}
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{url}/api/ask", json=body, headers=headers) as response:
            return response.status, await response.json(content_type=None)


async def test_api_ask_answers_with_the_ask_json_object_and_logs_the_exchange(bot: Bot, demo_store: ChunkStore) -> None:
    status, payload = await post_ask(bot.running.url, {"question": QUESTION})
    async with bot.db.sessions() as session:
        logged = await list_exchanges(session)

    assert status == 200 and set(payload) == CONTRACT_KEYS and payload["status"] == "answered"
    assert payload["citations"] and all(set(c) == CITATION_KEYS for c in payload["citations"])
    chunks = await demo_store.get_chunks([c["chunk_id"] for c in payload["citations"]])
    assert all(c["exact_quote"] in chunks[c["chunk_id"]].text for c in payload["citations"])
    assert [(e.id, e.source, e.outcome) for e in logged] == [(payload["exchange_id"], "api", "answered")]


async def test_api_ask_logs_the_channel_whose_visibility_it_answered_for(bot: Bot) -> None:
    """An auditor must see why channel-restricted text was shown: the exchange carries the channel asked from."""
    status, payload = await post_ask(bot.running.url, {"question": "Up to how much can a team lead approve a goodwill "
                                                                    "credit?", "channel": "C0LEADS"})
    async with bot.db.sessions() as session:
        logged = await list_exchanges(session)
    assert status == 200 and payload["citations"][0]["document_id"] == "leads-escalation-matrix"
    assert [(e.id, e.channel_id) for e in logged] == [(payload["exchange_id"], "C0LEADS")]


@pytest.mark.parametrize(("token", "scheme"), [(None, "Bearer"), ("wrong-token", "Bearer"), (API_TOKEN, "Basic"),
                                               (API_TOKEN + "x", "Bearer"), ("", "Bearer")])
async def test_api_ask_without_the_right_bearer_token_is_refused_with_401(bot: Bot, token: str | None,
                                                                          scheme: str) -> None:
    status, payload = await post_ask(bot.running.url, {"question": "Refunds?"}, token=token, scheme=scheme)

    assert status == 401 and "Bearer" in payload["error"]


@pytest.mark.parametrize("body", ["not json", {"question": ""}, {"question": 3}, {"q": "Refunds?"},
                                  {"question": "Refunds?", "channel": 5}, ["Refunds?"]])
async def test_api_ask_with_a_bad_body_says_what_is_wrong_with_400(bot: Bot, body: object) -> None:
    status, payload = await post_ask(bot.running.url, body)

    assert status == 400 and payload["error"]


async def test_api_ask_is_not_served_when_no_api_token_is_set_and_health_answers(bot: Bot) -> None:
    application = web_application(api_deps(bot.deps), ServerState("http"), api_token=None)
    async with serve(application) as url, aiohttp.ClientSession() as session:
        async with session.post(f"{url}/api/ask", json={"question": "Refunds?"},
                                headers={"Authorization": "Bearer anything"}) as response:
            ask_status = response.status
        async with session.get(f"{url}/healthz") as response:
            health = (response.status, await response.json())

    assert ask_status == 404
    assert health == (200, {"status": "ok", "mode": "http", "in_flight": 0})


async def test_shutdown_lets_the_answer_in_flight_reach_the_thread_and_the_log(
        slack: SlackStandIn, answer_deps: AnswerDeps, database: Database) -> None:
    async with started_bot(slack, answer_deps, database) as bot:
        mention = await bot.ask("C0SUPPORT", QUESTION)
        await slack.wait_for(lambda: len(bot.deps.in_flight) > 0, what="the answer to start")
    # The server has stopped: the answer it had started is posted and logged all the same.
    replies = [m for m in slack.thread("C0SUPPORT", mention["ts"]) if m.get("bot_id")]
    async with database.sessions() as session:
        logged = await list_exchanges(session)

    assert len(replies) == 1 and ANSWER in str(replies[0]["blocks"])
    assert [(e.outcome, e.reply_ts) for e in logged] == [("answered", replies[0]["ts"])]


@pytest.mark.parametrize(("env", "says"), [
    ({}, "SLACK_BOT_TOKEN is not set"),
    ({"SLACK_BOT_TOKEN": "xoxb-1"}, "set SLACK_SIGNING_SECRET (HTTP mode"),
    ({"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_APP_TOKEN": "xoxb-not-an-app-token"}, "SLACK_APP_TOKEN must be an app-level"),
])
def test_serve_without_usable_slack_settings_exits_2_with_one_line_naming_the_variable(
        env: dict[str, str], says: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # no .env here
    for name in ("SLACK_BOT_TOKEN", "SLACK_SIGNING_SECRET", "SLACK_APP_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(serve_command, [], env=env)

    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0]


def test_serve_with_a_bad_channels_file_exits_2_with_one_line_naming_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    channels = tmp_path / "channels.toml"
    channels.write_text('[channels.C0HELP]\nmode = "every_question"\nhandoff = "oncall"\n', encoding="utf-8")
    env = {"SLACK_BOT_TOKEN": "xoxb-1", "SLACK_SIGNING_SECRET": "s", "CHANNELS_FILE": str(channels)}
    result = CliRunner().invoke(serve_command, [], env=env)

    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: {channels}:3: [channels.C0HELP] handoff: 'oncall' is not a user group id (S…) or user "
                     "ids (U…, W…)"]
