"""What the HTTP API is given at start-up, and the server's state it reports.

Built once by the server (``bot.serve``) from the parts it also gives the Slack edge: the same answer
service, recorder, answer slots, metrics and count of work in flight, so both front ends share them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.ask import Limits, Recorder
from bot.answer.service import AnswerDeps
from bot.in_flight import InFlight
from bot.metrics import Metrics
from storage.journal import Journal


@dataclass(frozen=True, slots=True)
class ApiDeps:
    answer: AnswerDeps
    recorder: Recorder  # the exchange log (or the journal while it is down), as for Slack
    limits: Limits  # the answer timeout and the answer slots Slack's questions use too
    sessions: async_sessionmaker[AsyncSession]  # /readyz pings it; /metrics counts pending exchanges in it
    journal: Journal  # /metrics reads its backlog and dead letters
    metrics: Metrics
    in_flight: InFlight  # a shutdown waits for /api/ask answers too; /healthz reports the count
    log_questions: bool = False  # LOG_QUESTIONS: the per-question log line carries the question's text


@dataclass
class ServerState:
    mode: str  # how Slack's events arrive: "http" (/slack/events) or "socket"
    draining: bool = False  # set when shutting down: /healthz and /readyz answer 503
