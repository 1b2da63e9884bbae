"""What operators scrape at ``GET /metrics``: Prometheus metrics, one registry per running app.

    verbatim_questions_total{source, outcome}        every recorded exchange (slack, api, cli, eval; answered,
                                                     no_support, error)
    verbatim_stage_seconds{stage}                    histogram: search, rerank, compose, verify, total
    verbatim_slack_event_to_reply_seconds            histogram: the question's Slack ts to the reply's Slack ts
    verbatim_flags_total{kind, action}               reactions recorded on answers: kind answer|citation, added|removed
    verbatim_answer_errors_total{cause}              error exchanges: store, embedder, timeout, delivery, other
    verbatim_database_errors_total{operation}        the exchange log refused or timed out: record, claim, lease,
                                                     flag, metrics
    verbatim_fallbacks_total{part}                   a Cohere call failed and the local part answered: query,
                                                     rerank, compose
    verbatim_journal_backlog                         exchanges waiting in the journal for the database
    verbatim_journal_dead_letters                    exchanges the database refused, set aside in the journal's
                                                     dead-letter file (`verbatim review list --errors` lists them)
    verbatim_pending_exchanges                       questions claimed and not yet recorded (in any instance)

``Metrics.create()`` builds a fresh registry; the server builds one at start-up and hands it to the Slack edge
and the HTTP server (``SlackDeps.metrics``). Nothing is registered at import time, so two apps in one process
(the tests) never mix their counts. The three gauges are read when scraped (``refresh``), each read bounded.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.process_collector import ProcessCollector
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.answer.ask import Recorded
from storage.claims import pending_count
from storage.journal import DATABASE_DOWN, Journal

log = logging.getLogger(__name__)

STAGES = ("search", "rerank", "compose", "verify", "total")
# Seconds: answers take tens of milliseconds locally and seconds with Cohere or a struggling store.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)
REPLY_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 1800.0)
CONTENT_TYPE = CONTENT_TYPE_LATEST
READ_BOUND_S = 2.0  # a scrape must answer even when the database hangs


@dataclass(frozen=True, slots=True)
class Metrics:
    registry: CollectorRegistry
    questions: Counter
    stage_seconds: Histogram
    event_to_reply_seconds: Histogram
    flags: Counter
    answer_errors: Counter
    database_errors: Counter
    fallbacks: Counter
    journal_backlog: Gauge
    journal_dead_letters: Gauge
    pending_exchanges: Gauge
    source_documents: Gauge
    source_last_success: Gauge
    source_lag: Gauge
    source_failures: Counter

    @classmethod
    def create(cls) -> Metrics:
        registry = CollectorRegistry(auto_describe=True)
        ProcessCollector(registry=registry)  # memory, CPU, open files of this process

        def counter(name: str, doc: str, labels: tuple[str, ...] = ()) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        return cls(
            registry=registry,
            questions=counter("verbatim_questions", "Questions recorded, by front end and outcome.",
                              ("source", "outcome")),
            stage_seconds=Histogram("verbatim_stage_seconds", "Time spent in each stage of the answer path.",
                                    ("stage",), buckets=LATENCY_BUCKETS, registry=registry),
            event_to_reply_seconds=Histogram("verbatim_slack_event_to_reply_seconds",
                                             "From a Slack question's timestamp to the bot's reply's timestamp.",
                                             buckets=REPLY_BUCKETS, registry=registry),
            flags=counter("verbatim_flags", "Flag reactions recorded on answers (whole answer or one citation).",
                          ("kind", "action")),
            answer_errors=counter("verbatim_answer_errors", "Questions that ended in an error reply, by cause.",
                                  ("cause",)),
            database_errors=counter("verbatim_database_errors",
                                    "Exchange-log operations the database refused or did not answer in time.",
                                    ("operation",)),
            fallbacks=counter("verbatim_fallbacks", "Cohere calls that failed, answered by the local part instead.",
                              ("part",)),
            journal_backlog=Gauge("verbatim_journal_backlog", "Exchanges waiting in the journal for the database.",
                                  registry=registry),
            journal_dead_letters=Gauge("verbatim_journal_dead_letters",
                                       "Exchanges the database refused, kept in the journal's dead-letter file.",
                                       registry=registry),
            pending_exchanges=Gauge("verbatim_pending_exchanges",
                                    "Questions claimed and not yet recorded, across instances.", registry=registry),
            source_documents=Gauge("verbatim_source_documents", "Documents in the index, by declared source.",
                                   ("source",), registry=registry),
            source_last_success=Gauge("verbatim_source_last_success_timestamp_seconds",
                                      "When each declared source last synced to the end (Unix time).", ("source",),
                                      registry=registry),
            source_lag=Gauge("verbatim_source_lag_seconds",
                             "Seconds since each declared source last synced to the end, at its last attempt.",
                             ("source",), registry=registry),
            source_failures=counter("verbatim_source_sync_failures", "Scheduled syncs of a source that failed.",
                                    ("source",)),
        )

    def exchange_recorded(self, recorded: Recorded) -> None:
        """Count one recorded exchange: outcome, stage timings, error cause, fallbacks, a journaled write."""
        record = recorded.record
        self.questions.labels(record.source, record.outcome).inc()
        for stage in STAGES:
            if stage in record.timings_ms:
                self.stage_seconds.labels(stage).observe(record.timings_ms[stage] / 1000)
        if recorded.cause is not None:
            self.answer_errors.labels(recorded.cause.value).inc()
        for fallback in recorded.fallbacks:
            self.fallbacks.labels(fallback.part.value).inc()
        if not recorded.in_database:
            self.database_errors.labels("record").inc()

    def replied(self, question_ts: str, reply_ts: str | None) -> None:
        """A Slack reply was posted: observe the time between the two Slack timestamps."""
        try:
            elapsed = float(reply_ts or "") - float(question_ts)
        except ValueError:
            return
        self.event_to_reply_seconds.observe(max(elapsed, 0.0))

    async def refresh(self, journal: Journal, sessions: async_sessionmaker[AsyncSession]) -> None:
        """Read the journal's backlog, its dead letters and the pending exchanges; a gauge that cannot be read
        keeps its value."""
        self.journal_backlog.set(await asyncio.to_thread(journal.pending))
        # A gauge of the file, not a counter of this process: it survives restarts and counts every instance's.
        self.journal_dead_letters.set(await asyncio.to_thread(journal.dead_lettered))
        try:
            async with asyncio.timeout(READ_BOUND_S), sessions() as session:
                self.pending_exchanges.set(await pending_count(session))
        except DATABASE_DOWN as error:
            self.database_errors.labels("metrics").inc()
            log.warning("cannot count pending exchanges for /metrics (%s)", type(error).__name__)

    def exposition(self) -> bytes:
        """The registry in Prometheus' text format."""
        return generate_latest(self.registry)
