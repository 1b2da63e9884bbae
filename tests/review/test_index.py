"""Against the real Weaviate: each quote shown inside its chunk's text, and a citation going stale when a new
version of its document is ingested."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

from rich.console import Console

from bot.review import desk
from bot.review.model import NOTE_CHUNK_GONE, VersionState
from bot.review.text import REMOVED_LINE, review_lines
from retrieval.chunking import ChunkingConfig
from retrieval.chunks import make_chunk_id
from retrieval.documents import Block, BlockKind, Document
from retrieval.embedders.local import E5Embedder
from retrieval.ingest import Status, ingest
from retrieval.store import ChunkStore
from storage.exchanges import record_exchange
from storage.records import ExchangeRecord
from tests.storage.builders import citation, exchange
from tests.storage.database import Database

POLICY_V1 = (
    "This policy applies to every plan sold on the website. Annual plans can be refunded in full within 30 days "
    "of purchase. After 30 days, an annual plan is refunded pro rata for the unused whole months, minus a 10% "
    "processing fee. Monthly plans are not refunded."
)
POLICY_V2 = POLICY_V1.replace("within 30 days", "within 14 days")
QUOTE = "Annual plans can be refunded in full within 30 days of purchase."


def policy(version: str, text: str) -> Document:
    return Document(
        document_id="refund-policy", title="Refund policy", source=f"memory:refund-policy@{version}",
        blocks=(Block(BlockKind.HEADING, "Eligibility", level=2), Block(BlockKind.PARAGRAPH, text)),
        url="https://docs.example.com/refunds", version=version,
    )


async def ingest_policy(store: ChunkStore, embedder: E5Embedder, version: str, text: str) -> str:
    """Ingest one version; the id of its chunk that holds the refund sentence."""
    report = await ingest([policy(version, text)], store=store, embedder=embedder, chunking=ChunkingConfig())
    assert [outcome.status for outcome in report.outcomes] in ([Status.INGESTED], [Status.REPLACED]), report.outcomes
    indexed = (await store.current(["refund-policy"]))["refund-policy"]
    ids = [make_chunk_id("refund-policy", indexed.content_hash, ordinal) for ordinal in range(indexed.chunk_count)]
    chunks = await store.get_chunks(ids)
    return next(chunk_id for chunk_id, chunk in chunks.items() if "refunded in full" in chunk.text)


async def record_citing(db: Database, chunk_id: str) -> ExchangeRecord:
    record = exchange(citations=(
        citation(1, claim="Annual plans: full refund within 30 days.", exact_quote=QUOTE, chunk_id=chunk_id,
                 version="v1", section="Eligibility"),
        citation(2, kept=False, reason="not_found", claim="Refunds within 90 days.",
                 exact_quote="Annual plans can be refunded in full within 90 days of purchase.", chunk_id=chunk_id,
                 version="v1"),
    ))
    async with db.sessions() as session:
        await record_exchange(session, record)
    return record


async def test_quote_is_shown_in_its_chunk_then_marked_stale_after_a_new_version(
    store: ChunkStore, embedder: E5Embedder, sqlite_log: Database
) -> None:
    chunk_v1 = await ingest_policy(store, embedder, "v1", POLICY_V1)
    record = await record_citing(sqlite_log, chunk_v1)

    before = await desk.review_exchange(*await desk.read_exchange(sqlite_log.sessions, record.id), store)
    (cited,) = before.kept
    assert before.index_unavailable is None
    assert cited.state is VersionState.CURRENT and cited.indexed_version == "v1"
    assert cited.excerpt is not None and cited.excerpt.exact
    assert cited.excerpt.quote == QUOTE
    assert cited.excerpt.before.endswith("This policy applies to every plan sold on the website. ")
    assert cited.excerpt.after.startswith(" After 30 days, an annual plan is refunded pro rata")
    (rejected,) = before.rejected
    assert rejected.excerpt is None and rejected.note == "the quote does not occur in this chunk's text"

    await ingest_policy(store, embedder, "v2", POLICY_V2)
    after = await desk.review_exchange(*await desk.read_exchange(sqlite_log.sessions, record.id), store)
    (stale,) = after.kept
    assert stale.state is VersionState.STALE and stale.indexed_version == "v2" and after.stale
    assert stale.excerpt is None and stale.note == NOTE_CHUNK_GONE  # v1's chunks were replaced
    assert stale.citation.exact_quote == QUOTE  # what the log holds is still shown


async def test_show_on_the_terminal_reads_the_chunk_from_weaviate(
    store: ChunkStore, embedder: E5Embedder, sqlite_log: Database, cli_env: dict[str, str], tmp_path: Path
) -> None:
    chunk_v1 = await ingest_policy(store, embedder, "v1", POLICY_V1)
    record = await record_citing(sqlite_log, chunk_v1)
    env = cli_env | {"VERBATIM_COLLECTION": store.name, "DATABASE_URL": sqlite_log.url, "COLUMNS": "200"}

    def show(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "bot.review", "show", record.id, *extra], env=env,
                              capture_output=True, text=True, timeout=180, cwd=tmp_path)

    text = await asyncio.to_thread(show)
    assert text.returncode == 0, text.stderr
    assert f"website. [[{QUOTE}]] After 30 days" in text.stdout
    assert "version v1 (current)" in text.stdout
    assert "chunk text unavailable" not in text.stdout

    await ingest_policy(store, embedder, "v2", POLICY_V2)
    data = json.loads((await asyncio.to_thread(show, "--json")).stdout)
    first = data["citations"][0]
    assert (first["version_state"], first["indexed_version"], first["in_chunk"]) == ("stale", "v2", None)


async def test_a_citation_of_a_removed_document_is_marked_removed(
    store: ChunkStore, embedder: E5Embedder, sqlite_log: Database
) -> None:
    chunk_v1 = await ingest_policy(store, embedder, "v1", POLICY_V1)
    record = await record_citing(sqlite_log, chunk_v1)
    await store.remove_documents(["refund-policy"])  # what `verbatim sync` does when its file is gone

    review = await desk.review_exchange(*await desk.read_exchange(sqlite_log.sessions, record.id), store)
    (removed,) = review.kept
    assert removed.state is VersionState.REMOVED and removed.indexed_version is None
    assert review.removed and not review.stale
    assert removed.excerpt is None and removed.note == NOTE_CHUNK_GONE
    console = Console(width=200, record=True, file=io.StringIO())
    console.print(review_lines(review, plain=True))
    shown = console.export_text()
    assert REMOVED_LINE in shown and "version v1 (the document is no longer indexed)" in shown
    assert f"[[{QUOTE}]]" in shown  # what the log holds is still shown
