"""The Weaviate collection that holds chunks, and the small registry of what each document's current version is.

Schema (collection ``<name>``, one object per chunk, its UUID is the chunk id):

- verbatim fields returned to callers: ``chunk_id, document_id, version, content_hash, ordinal, title,
  section, page, url, updated_at, visibility, language, text`` — ``text`` is stored but not indexed;
- searchable fields, all holding title, section and text: ``body_stem`` (Snowball stems, for English,
  Russian and other space-separated languages), ``body`` (the words unstemmed, ``word`` tokenization) and
  ``body_ja`` (Japanese tokenization), so one collection serves queries in every language: the query's
  language picks the BM25 field (``bm25_query``);
- the vector: whatever embedder built the index; its name is recorded in the collection description
  and a different embedder on query is refused (``IndexMismatch``).

Sentences (collection ``<name>Sentence``, one object per sentence of every chunk): the sentence's
offsets in its chunk's text and its vector, in a flat (exact) vector index. Answering asks it which
sentences of the top chunks are closest to the question: that is the local reranker's signal, the
extractive composer's choice of quote, and a feature of the decision to abstain.

Registry (collection ``<name>Document``, one object per document): the content hash and version now
indexed, ``source_path``, the file it came from (what ``verbatim sync`` matches its paths against), and
``source``, the declared source it was synced from (``sources.toml``; what ``sync --source`` prunes within).
Both are absent for documents indexed before they were recorded, and added to an older registry's schema when it
is opened for writing. It is written last, after the new chunks are in and the old ones gone, so an
interrupted ingest is retried rather than skipped. Removing a document deletes its chunks and sentences
first and its registry entry last, so an interrupted removal is retried by the next sync.

Visibility: ``["*"]`` is stored for documents visible everywhere; a search for a set of channels sees ``"*"`` and
those channels' ids (one channel's, for a question asked in a channel; none, for public documents only).

Narrowing (a help channel's ``sources``, ``bot.channels``): a search given ``sources`` sees, of what its
visibility allows, only the documents whose id begins with one of them, or that were synced from a declared source
of that name (the registry's ``source``; a connector's ids also begin with ``NAME:``). It is one more filter in the
same Weaviate query, so the top-k is filled from those documents; it never shows a document the visibility hides.

On a Weaviate cluster (``Replication``): new collections are made with the replication factor, and every read and
write asks for the consistency level (QUORUM by default: with 3 replicas, one node may be down and nothing is
lost or refused). On one server both are no-ops.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, TypeVar

import numpy as np
from weaviate.classes.config import (
    Configure,
    ConsistencyLevel,
    DataType,
    Property,
    ReplicationDeletionStrategy,
    Tokenization,
    VectorDistances,
)
from weaviate.classes.data import DataObject
from weaviate.classes.query import Filter, HybridFusion, MetadataQuery
from weaviate.client import WeaviateAsyncClient
from weaviate.collections import CollectionAsync
from weaviate.exceptions import UnexpectedStatusCodeError, WeaviateBaseError

from retrieval.chunks import Chunk, ScoredChunk, SentenceHit, SentenceSpan, body_text
from retrieval.errors import RetrievalError, first_line
from retrieval.stemming import stem_text
from retrieval.transient import RETRY_DELAYS_S, is_transient, retrying

SCHEMA_VERSION = 3  # 2: sentence vectors; 3: stemmed BM25 field
EVERYONE = "*"
JA_TOKENIZATIONS = ("kagome_ja", "trigram", "gse")
SearchMode = Literal["hybrid", "bm25", "vector"]

_RETURNED = [
    "chunk_id", "document_id", "version", "content_hash", "ordinal", "title", "section", "page",
    "url", "updated_at", "visibility", "language", "text",
]
_SOURCE_PATH_PROPERTY = Property(name="source_path", data_type=DataType.TEXT, tokenization=Tokenization.FIELD,
                                 index_searchable=False)
_SOURCE_PROPERTY = Property(name="source", data_type=DataType.TEXT, tokenization=Tokenization.FIELD,
                            index_searchable=False)
# Added after the registry's first release: an older registry gets them when opened for writing.
_ADDED_REGISTRY_PROPERTIES = (_SOURCE_PATH_PROPERTY, _SOURCE_PROPERTY)
# A folder source's documents are found through the registry (their ids are paths); Weaviate's default
# QUERY_MAXIMUM_RESULTS. A connector's documents need no lookup: their ids begin with "NAME:".
_REGISTRY_READ_LIMIT = 10_000
_REGISTRY_NAMESPACE = uuid.UUID("0b5e3c2a-63a4-4f0e-9a57-2d0e6f1c8b44")
_SENTENCE_NAMESPACE = uuid.UUID("9f1d2c7e-0a4b-4c3d-8e5f-6a7b8c9d0e1f")

log = logging.getLogger(__name__)


T = TypeVar("T")


class StoreError(RetrievalError):
    """Weaviate refused an operation. One line: what failed and what to do."""


class IndexMismatch(StoreError):
    """The index was built with another embedder (or schema) than this run uses."""


class IndexMissing(StoreError):
    """Nothing has been ingested yet."""


@contextmanager
def _failed(what: str) -> Iterator[None]:
    """Weaviate's own errors become our ``StoreError`` here: none leaves ``retrieval`` (its callers catch one root)."""
    try:
        yield
    except WeaviateBaseError as error:
        raise StoreError(f"Weaviate failed to {what}: {first_line(error)}") from error


@dataclass(frozen=True, slots=True)
class IndexInfo:
    embedder: str
    dim: int
    ja_tokenization: str
    schema_version: int = SCHEMA_VERSION

    def to_description(self) -> str:
        return json.dumps(
            {"verbatim": {"embedder": self.embedder, "dim": self.dim, "ja_tokenization": self.ja_tokenization,
                          "schema_version": self.schema_version}},
            sort_keys=True,
        )

    @classmethod
    def from_description(cls, description: str | None) -> IndexInfo | None:
        try:
            data = json.loads(description or "")["verbatim"]
            return cls(str(data["embedder"]), int(data["dim"]), str(data["ja_tokenization"]), int(data["schema_version"]))
        except (ValueError, KeyError, TypeError):
            return None


@dataclass(frozen=True, slots=True)
class DocumentRecord:
    """What the registry holds for one document: the version now indexed, and the file it came from."""

    document_id: str
    content_hash: str
    version: str | None
    title: str
    chunk_count: int
    source_path: str | None = None  # None: indexed from memory, or before sources were recorded
    source: str | None = None  # the declared source (sources.toml) it was synced from; None: none declared


@dataclass(frozen=True, slots=True)
class IndexedChunk:
    """One chunk to write: the chunk, its sentences, and their vectors."""

    chunk: Chunk
    vector: Sequence[float]
    sentences: Sequence[SentenceSpan] = ()
    sentence_vectors: Sequence[Sequence[float]] = ()
    stemmed_body: str | None = None  # stem_text(body_text(chunk)), computed off the event loop by the ingest


@dataclass(frozen=True, slots=True)
class ReplaceOutcome:
    document_id: str
    error: str | None = None  # None when the document's chunks are now the new version's


def bm25_query(query: str, language: str, *, stemming: bool = True) -> tuple[str, str]:
    """(field, query text) for BM25: Japanese tokenized by Weaviate, others stemmed like the chunks."""
    if language == "ja":
        return "body_ja", query
    if stemming:
        return "body_stem", stem_text(query, language)
    return "body", query


def registry_uuid(document_id: str) -> str:
    return str(uuid.uuid5(_REGISTRY_NAMESPACE, document_id))


@dataclass(frozen=True, slots=True)
class SearchOptions:
    """How searches behave beyond what the answer path asks for; evaluation and ablations only.

    ``exclude_documents`` leaves documents out inside Weaviate, before fusion (a question asked with its own
    paragraph removed from the collection); ``stemming`` False searches the unstemmed BM25 field.
    """

    exclude_documents: tuple[str, ...] = ()
    stemming: bool = True


@dataclass(frozen=True, slots=True)
class Replication:
    """How collections live on a cluster: copies of each shard (for new collections) and the consistency level
    each read and write asks for."""

    factor: int = 1
    consistency: Literal["ONE", "QUORUM", "ALL"] = "QUORUM"

    def __post_init__(self) -> None:
        if self.factor < 1:
            raise ValueError(f"the replication factor must be 1 or more, got {self.factor}")


class ChunkStore:
    """Chunks in Weaviate: replace a document's chunks by version, and hybrid search with visibility.

    Implements ``retrieval.store_port.Store`` (what the answer path needs) and, for ingest and review, more.
    """

    def __init__(self, client: WeaviateAsyncClient, name: str, options: SearchOptions = SearchOptions(), *,
                 query_timeout_s: float = 30.0, replication: Replication = Replication()) -> None:
        self._client = client
        self.replication = replication
        self.name = name
        # The client retries an unreachable server for about a minute; the answer path waits this long at most.
        self.query_timeout_s = query_timeout_s
        self.registry_name = f"{name}Document"
        self.sentences_name = f"{name}Sentence"
        self.info: IndexInfo | None = None
        self.options = options

    def with_options(self, **changes: Any) -> ChunkStore:
        """The same index, searched with other ``SearchOptions`` (for benchmarks; the production path never)."""
        other = ChunkStore(self._client, self.name, replace(self.options, **changes),
                           query_timeout_s=self.query_timeout_s, replication=self.replication)
        other.info = self.info
        return other

    @property
    def _chunks(self) -> CollectionAsync:
        return self._use(self.name)

    @property
    def _sentences(self) -> CollectionAsync:
        return self._use(self.sentences_name)

    @property
    def _registry(self) -> CollectionAsync:
        return self._use(self.registry_name)

    def _use(self, name: str) -> CollectionAsync:
        return self._client.collections.use(name).with_consistency_level(
            ConsistencyLevel(self.replication.consistency))

    def _replication_config(self) -> dict[str, Any]:
        """``collections.create`` arguments for the replication factor (none on one server: its default)."""
        if self.replication.factor == 1:
            return {}
        # Time-based: a chunk deleted (its document replaced) while a replica was down stays deleted when that
        # replica comes back, instead of the replica's stale copy being copied back everywhere.
        return {"replication_config": Configure.replication(
            factor=self.replication.factor, deletion_strategy=ReplicationDeletionStrategy.TIME_BASED_RESOLUTION)}

    # -- schema --------------------------------------------------------------------------------

    async def open(self, embedder: str, dim: int, *, ja_tokenization: str = "kagome_ja", create: bool) -> IndexInfo:
        """Check (and with ``create``, make) the collections; refuse an index built by another embedder."""
        with _failed(f"open the collection '{self.name}'"):
            info = await self._open(embedder, dim, ja_tokenization, create)
        if info.embedder != embedder:
            raise IndexMismatch(
                f"the index '{self.name}' was built with the embedder '{info.embedder}' but this run uses "
                f"'{embedder}': set VERBATIM_EMBEDDER to match the index, or rebuild it with "
                "`verbatim ingest --rebuild PATH...`"
            )
        self.info = info
        return info

    async def _open(self, embedder: str, dim: int, ja_tokenization: str, create: bool) -> IndexInfo:
        try:
            exists = await self._client.collections.exists(self.name)
            if not exists:
                if not create:
                    raise IndexMissing(f"no documents are indexed in '{self.name}' yet: run `verbatim ingest PATH` first")
                info = IndexInfo(embedder=embedder, dim=dim, ja_tokenization=ja_tokenization)
                await self._create(info)
            else:
                config = await self._chunks.config.get()
                info = IndexInfo.from_description(config.description)
                if info is None:
                    raise IndexMismatch(
                        f"the Weaviate collection '{self.name}' was not made by Verbatim: "
                        "set VERBATIM_COLLECTION to another name"
                    )
                if info.schema_version != SCHEMA_VERSION:
                    raise IndexMismatch(
                        f"the index '{self.name}' has schema version {info.schema_version} but this version of "
                        f"Verbatim needs {SCHEMA_VERSION}: rebuild it with `verbatim ingest --rebuild PATH...`"
                    )
            if not await self._client.collections.exists(self.registry_name):
                await self._create_registry()
            elif create:
                await self._add_registry_properties()
            if not await self._client.collections.exists(self.sentences_name):
                await self._create_sentences()
        except UnexpectedStatusCodeError as error:
            raise StoreError(f"Weaviate refused to create the collection '{self.name}': {first_line(error)}") from error
        return info

    async def _create(self, info: IndexInfo) -> None:
        def text(name: str, *, searchable: bool = False, filterable: bool = False,
                 tokenization: Tokenization | None = None, array: bool = False) -> Property:
            return Property(
                name=name,
                data_type=DataType.TEXT_ARRAY if array else DataType.TEXT,
                index_searchable=searchable,
                index_filterable=filterable,
                tokenization=tokenization,
            )

        await self._client.collections.create(
            self.name,
            description=info.to_description(),
            **self._replication_config(),
            vector_config=Configure.Vectors.self_provided(
                vector_index_config=Configure.VectorIndex.hnsw(distance_metric=VectorDistances.COSINE),
            ),
            inverted_index_config=Configure.inverted_index(bm25_b=0.75, bm25_k1=1.2),
            properties=[
                text("chunk_id", filterable=True, tokenization=Tokenization.FIELD),
                text("document_id", filterable=True, tokenization=Tokenization.FIELD),
                text("version", filterable=True, tokenization=Tokenization.FIELD),
                text("content_hash", filterable=True, tokenization=Tokenization.FIELD),
                Property(name="ordinal", data_type=DataType.INT, index_filterable=False, index_range_filters=False),
                text("title"),
                text("section"),
                Property(name="page", data_type=DataType.INT, index_filterable=False, index_range_filters=False),
                text("url"),
                text("updated_at"),
                text("visibility", filterable=True, tokenization=Tokenization.FIELD, array=True),
                text("language", filterable=True, tokenization=Tokenization.FIELD),
                text("text"),
                text("body", searchable=True, tokenization=Tokenization.WORD),
                text("body_stem", searchable=True, tokenization=Tokenization.WHITESPACE),
                text("body_ja", searchable=True, tokenization=Tokenization(info.ja_tokenization)),
            ],
        )

    async def _create_registry(self) -> None:
        await self._client.collections.create(
            self.registry_name,
            description="Verbatim: the version of each document now indexed",
            **self._replication_config(),
            vector_config=Configure.Vectors.self_provided(),
            properties=[
                Property(name="document_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="content_hash", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="version", data_type=DataType.TEXT, tokenization=Tokenization.FIELD),
                Property(name="title", data_type=DataType.TEXT, index_searchable=False),
                Property(name="chunk_count", data_type=DataType.INT),
                *_ADDED_REGISTRY_PROPERTIES,
            ],
        )

    async def _add_registry_properties(self) -> None:
        """A registry made before sources were recorded gets the properties (its documents keep no source)."""
        config = await self._registry.config.get()
        present = {prop.name for prop in config.properties}
        for prop in _ADDED_REGISTRY_PROPERTIES:
            if prop.name not in present:
                await self._registry.config.add_property(prop)

    async def _create_sentences(self) -> None:
        await self._client.collections.create(
            self.sentences_name,
            description="Verbatim: sentence vectors of the chunks in " + self.name,
            **self._replication_config(),
            # Always searched within a handful of chunks: an exact flat index is both right and fast.
            vector_config=Configure.Vectors.self_provided(
                vector_index_config=Configure.VectorIndex.flat(distance_metric=VectorDistances.COSINE),
            ),
            properties=[
                Property(name="chunk_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_searchable=False),
                Property(name="document_id", data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_searchable=False),
                Property(name="content_hash", data_type=DataType.TEXT, tokenization=Tokenization.FIELD, index_searchable=False),
                Property(name="start", data_type=DataType.INT, index_filterable=False, index_range_filters=False),
                Property(name="end", data_type=DataType.INT, index_filterable=False, index_range_filters=False),
            ],
        )

    async def drop(self) -> None:
        """Delete the collections (``ingest --rebuild``)."""
        with _failed(f"delete the collection '{self.name}'"):
            for name in (self.name, self.sentences_name, self.registry_name):
                await self._client.collections.delete(name)
        self.info = None

    # -- writing ---------------------------------------------------------------------------------

    async def current(self, document_ids: Sequence[str]) -> dict[str, DocumentRecord]:
        """The registry records of these documents (absent: never ingested)."""
        if not document_ids:
            return {}
        records: dict[str, DocumentRecord] = {}
        ids = list(dict.fromkeys(document_ids))
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            with _failed("read the document registry"):
                response = await self._registry.query.fetch_objects(
                    filters=Filter.by_property("document_id").contains_any(batch), limit=len(batch)
                )
            for obj in response.objects:
                record = _record_from_properties(obj.properties)
                records[record.document_id] = record
        return records

    async def documents(self) -> list[DocumentRecord]:
        """Every document the registry holds (``verbatim documents list``, and what a sync compares with)."""
        with _failed("list the indexed documents"):
            return [_record_from_properties(obj.properties) async for obj in self._registry.iterator()]

    async def record_sources(self, records: Sequence[DocumentRecord]) -> None:
        """Rewrite these registry entries as given (an unchanged document found at another ``source_path``)."""
        if records:
            with _failed("record where documents came from"):
                await self._write_registry(records, {r.document_id: r.chunk_count for r in records})

    async def remove_documents(self, document_ids: Sequence[str]) -> None:
        """Delete these documents: their chunks and sentences, then their registry entries.

        Once this returns no chunk of theirs is searchable, so no answer can cite them. Ids that are not
        indexed are no-ops. ``StoreError`` when Weaviate fails part-way: run it again.
        """
        ids = list(dict.fromkeys(document_ids))
        try:
            for start in range(0, len(ids), 100):
                batch = ids[start : start + 100]
                for collection in (self._chunks, self._sentences):
                    await _delete_all(collection, Filter.by_property("document_id").contains_any(batch))
                await _delete_all(self._registry, Filter.by_id().contains_any([registry_uuid(i) for i in batch]))
        except WeaviateBaseError as error:
            raise StoreError(f"Weaviate failed while removing documents: {first_line(error)}; run it again") from error

    async def replace_documents(
        self, documents: Sequence[tuple[DocumentRecord, Sequence[IndexedChunk]]]
    ) -> list[ReplaceOutcome]:
        """Make each document's indexed chunks (and their sentences) exactly the given ones (its new version).

        New chunks go in first, then the document's chunks of any other version are deleted, then the
        registry is updated: a search never sees a document with no chunks, and once this returns no
        chunk of an old version is searchable. A document any of whose objects Weaviate rejects keeps
        its previous version and gets an error.
        """
        chunk_objects: list[DataObject[dict[str, Any], None]] = []
        chunk_owner: list[int] = []
        sentence_objects: list[DataObject[dict[str, Any], None]] = []
        sentence_owner: list[int] = []
        for doc_index, (_record, items) in enumerate(documents):
            for item in items:
                chunk = item.chunk
                chunk_objects.append(DataObject(properties=_chunk_properties(chunk, item.stemmed_body), uuid=chunk.chunk_id,
                                                vector=_floats(item.vector)))
                chunk_owner.append(doc_index)
                for span, vector in zip(item.sentences, item.sentence_vectors, strict=True):
                    sentence_objects.append(DataObject(
                        uuid=str(uuid.uuid5(_SENTENCE_NAMESPACE, f"{chunk.chunk_id}:{span.start}:{span.end}")),
                        properties={"chunk_id": chunk.chunk_id, "document_id": chunk.document_id,
                                    "content_hash": chunk.content_hash, "start": span.start, "end": span.end},
                        vector=_floats(vector),
                    ))
                    sentence_owner.append(doc_index)

        failed: dict[int, str] = {}
        for collection, objects, owner, what in (
            (self._chunks, chunk_objects, chunk_owner, "chunk"),
            (self._sentences, sentence_objects, sentence_owner, "sentence"),
        ):
            if not objects:
                continue
            try:
                errors = await _insert(collection, objects)
            except WeaviateBaseError as error:
                message = f"Weaviate rejected the batch: {first_line(error)}"
                return [ReplaceOutcome(record.document_id, message) for record, _ in documents]
            for index, message in errors.items():
                failed.setdefault(owner[index], f"Weaviate rejected a {what} of this document: {message}")

        ok = [record for i, (record, _) in enumerate(documents) if i not in failed]
        bad = [record for i, (record, _) in enumerate(documents) if i in failed]
        try:
            if bad:  # take back what did go in, so a failed document stays wholly at its old version
                await self._delete_where(bad, same_hash=True)
            if ok:
                await self._delete_where(ok, same_hash=False)
                await self._write_registry(ok, {r.document_id: len(c) for r, c in documents})
        except WeaviateBaseError as error:
            message = f"Weaviate failed while replacing old chunks: {first_line(error)}"
            return [ReplaceOutcome(record.document_id, message) for record, _ in documents]
        return [ReplaceOutcome(record.document_id, failed.get(i)) for i, (record, _) in enumerate(documents)]

    async def _delete_where(self, records: Sequence[DocumentRecord], *, same_hash: bool) -> None:
        for start in range(0, len(records), 100):
            clauses = []
            for record in records[start : start + 100]:
                hash_filter = Filter.by_property("content_hash")
                clauses.append(
                    Filter.by_property("document_id").equal(record.document_id)
                    & (hash_filter.equal(record.content_hash) if same_hash else hash_filter.not_equal(record.content_hash))
                )
            for collection in (self._chunks, self._sentences):
                result = await _delete_many(collection, Filter.any_of(clauses))
                if result.failed:
                    raise StoreError(f"Weaviate failed to delete {result.failed} old objects; run the ingest again")

    async def _write_registry(self, records: Sequence[DocumentRecord], chunk_counts: dict[str, int]) -> None:
        errors = await _insert(self._registry, [
            DataObject(
                uuid=registry_uuid(r.document_id),
                properties={"document_id": r.document_id, "content_hash": r.content_hash, "version": r.version,
                            "title": r.title, "chunk_count": chunk_counts[r.document_id],
                            "source_path": r.source_path, "source": r.source},
            )
            for r in records
        ])
        if errors:
            raise StoreError(f"Weaviate rejected the document registry update: {next(iter(errors.values()))}")

    # -- reading ---------------------------------------------------------------------------------

    async def search(
        self,
        query: str,
        vector: np.ndarray | None,
        *,
        language: str,
        channels: Collection[str],
        limit: int,
        alpha: float,
        mode: SearchMode = "hybrid",
        sources: Collection[str] | None = None,
    ) -> list[ScoredChunk]:
        """Hybrid (or pure BM25 / pure vector) search over the chunks visible everywhere or in one of ``channels``
        (and, given ``sources``, only of those documents: see "Narrowing"), within ``query_timeout_s``
        (``StoreError`` past it)."""
        return await self._within("search", self._search(query, vector, language=language, channels=channels,
                                                         limit=limit, alpha=alpha, mode=mode, sources=sources))

    async def _within(self, what: str, call: Awaitable[T]) -> T:
        try:
            return await asyncio.wait_for(call, self.query_timeout_s)
        except TimeoutError as error:
            raise StoreError(f"Weaviate did not answer the {what} within {self.query_timeout_s:g} s: check that it "
                             "is running (WEAVIATE_URL, or the embedded server's log)") from error

    async def _search(self, query: str, vector: np.ndarray | None, *, language: str, channels: Collection[str],
                      limit: int, alpha: float, mode: SearchMode,
                      sources: Collection[str] | None = None) -> list[ScoredChunk]:
        filters = Filter.by_property("visibility").contains_any([EVERYONE, *sorted(set(channels) - {EVERYONE})])
        if sources is not None:
            filters = filters & await self._narrowed_to(sources)
        for document_id in self.options.exclude_documents:
            filters = filters & Filter.by_property("document_id").not_equal(document_id)
        field, bm25_text = bm25_query(query, language, stemming=self.options.stemming)
        try:
            if mode == "bm25":
                response = await self._chunks.query.bm25(
                    query=bm25_text, query_properties=[field], limit=limit, filters=filters,
                    return_metadata=MetadataQuery(score=True), return_properties=_RETURNED,
                )
                scores = [float(o.metadata.score or 0.0) for o in response.objects]
            elif mode == "vector":
                assert vector is not None
                response = await self._chunks.query.near_vector(
                    near_vector=vector.tolist(), limit=limit, filters=filters,
                    return_metadata=MetadataQuery(distance=True), return_properties=_RETURNED,
                )
                scores = [1.0 - float(o.metadata.distance or 0.0) for o in response.objects]
            else:
                assert vector is not None
                response = await self._chunks.query.hybrid(
                    query=bm25_text, vector=vector.tolist(), alpha=alpha, query_properties=[field], limit=limit,
                    filters=filters, fusion_type=HybridFusion.RELATIVE_SCORE,
                    return_metadata=MetadataQuery(score=True), return_properties=_RETURNED,
                )
                scores = [float(o.metadata.score or 0.0) for o in response.objects]
        except WeaviateBaseError as error:
            raise StoreError(f"Weaviate search failed: {first_line(error)}") from error
        return [
            ScoredChunk(chunk=chunk_from_properties(o.properties), score=s, rank=i + 1)
            for i, (o, s) in enumerate(zip(response.objects, scores))
        ]

    async def _narrowed_to(self, sources: Collection[str]) -> Any:
        """The filter of "Narrowing": ids beginning with an entry, or documents the registry has from a source of
        that name. No entry (nothing allowed) matches no document."""
        entries = sorted(set(sources))
        document_id = Filter.by_property("document_id")
        clauses = [document_id.like(f"{entry}*") for entry in entries]
        if entries:
            try:
                response = await self._registry.query.fetch_objects(
                    filters=Filter.by_property("source").contains_any(entries), limit=_REGISTRY_READ_LIMIT,
                    return_properties=["document_id"])
            except WeaviateBaseError as error:
                raise StoreError(f"Weaviate failed to read the sources' documents: {first_line(error)}") from error
            named = sorted({str(o.properties["document_id"]) for o in response.objects})
            if named:
                clauses.append(document_id.contains_any(named))
        if not clauses:
            return document_id.equal("")  # no document has an empty id
        return clauses[0] if len(clauses) == 1 else Filter.any_of(clauses)

    async def sentence_hits(self, vector: np.ndarray, chunk_ids: Sequence[str], *, limit: int = 400) -> list[SentenceHit]:
        """The sentences of these chunks, most similar to ``vector`` first (exact cosine), within the timeout."""
        if not chunk_ids:
            return []
        return await self._within("sentence search", self._sentence_hits(vector, chunk_ids, limit))

    async def _sentence_hits(self, vector: np.ndarray, chunk_ids: Sequence[str], limit: int) -> list[SentenceHit]:
        try:
            response = await self._sentences.query.near_vector(
                near_vector=_floats(vector), limit=limit,
                filters=Filter.by_property("chunk_id").contains_any(list(dict.fromkeys(chunk_ids))),
                return_metadata=MetadataQuery(distance=True), return_properties=["chunk_id", "start", "end"],
            )
        except WeaviateBaseError as error:
            raise StoreError(f"Weaviate sentence search failed: {first_line(error)}") from error
        return [
            SentenceHit(str(o.properties["chunk_id"]), int(o.properties["start"]), int(o.properties["end"]),
                        1.0 - float(o.metadata.distance or 0.0))
            for o in response.objects
        ]

    async def ready(self) -> bool:
        """Whether a search would be served now: one object fetched over the same (gRPC, keyed) path."""
        try:
            await self._within("readiness check", self._chunks.query.fetch_objects(limit=1, return_properties=["chunk_id"]))
        except (WeaviateBaseError, StoreError):
            return False
        return True

    async def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        """Chunks by id, whatever their version (for review: the text a quote came from), within the timeout."""
        if not chunk_ids:
            return {}
        with _failed("read chunks"):
            response = await self._within("chunk read", self._chunks.query.fetch_objects(
                filters=Filter.by_property("chunk_id").contains_any(list(chunk_ids)),
                limit=len(chunk_ids), return_properties=_RETURNED,
            ))
        return {str(o.properties["chunk_id"]): chunk_from_properties(o.properties) for o in response.objects}

    async def count(self) -> int:
        with _failed("count the chunks"):
            response = await self._within("chunk count", self._chunks.aggregate.over_all(total_count=True))
        return int(response.total_count or 0)


async def _delete_all(collection: CollectionAsync, where: Any) -> None:
    """Delete every object matching ``where``: one call deletes at most the server's query limit, so repeat."""
    while True:
        result = await _delete_many(collection, where)
        if result.failed:
            raise StoreError(f"Weaviate failed to delete {result.failed} objects of '{collection.name}'; run it again")
        if not result.matches:
            return


async def _insert(collection: CollectionAsync, objects: Sequence[DataObject[dict[str, Any], None]],
                  delays: Sequence[float] = RETRY_DELAYS_S) -> dict[int, str]:
    """Insert ``objects``; the error of each one Weaviate rejects, by index, once transient rejections have been
    retried (a write's UUIDs are content-derived, so inserting an object again is harmless)."""
    pending = list(range(len(objects)))
    rejected: dict[int, str] = {}
    for delay in (*delays, None):
        batch = [objects[i] for i in pending]
        result = await retrying(partial(collection.data.insert_many, batch), f"write to '{collection.name}'")
        again = []
        for index, err in result.errors.items():
            if delay is not None and is_transient(err.message):
                again.append(pending[index])
            else:
                rejected[pending[index]] = err.message
        if not again:
            break
        log.warning("Weaviate failed to write %d objects to '%s' (retrying in %.1f s): %s", len(again),
                    collection.name, delay, next(iter(result.errors.values())).message[:300])
        await asyncio.sleep(delay or 0.0)
        pending = again
    return rejected


async def _delete_many(collection: CollectionAsync, where: Any) -> Any:
    return await retrying(lambda: collection.data.delete_many(where=where), f"delete from '{collection.name}'")


def _record_from_properties(p: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        document_id=str(p["document_id"]),
        content_hash=str(p["content_hash"]),
        version=_opt_str(p.get("version")),
        title=str(p.get("title") or ""),
        chunk_count=int(p.get("chunk_count") or 0),
        source_path=_opt_str(p.get("source_path")),
        source=_opt_str(p.get("source")),
    )


def _chunk_properties(chunk: Chunk, stemmed_body: str | None) -> dict[str, Any]:
    body = body_text(chunk)
    return {
        "chunk_id": chunk.chunk_id,
        "document_id": chunk.document_id,
        "version": chunk.version,
        "content_hash": chunk.content_hash,
        "ordinal": chunk.ordinal,
        "title": chunk.title,
        "section": chunk.section,
        "page": chunk.page,
        "url": chunk.url,
        "updated_at": chunk.updated_at,
        "visibility": list(chunk.visibility) if chunk.visibility is not None else [EVERYONE],
        "language": chunk.language,
        "text": chunk.text,
        "body": body,
        "body_stem": stemmed_body if stemmed_body is not None else stem_text(body, chunk.language),
        "body_ja": body,
    }


def chunk_from_properties(p: dict[str, Any]) -> Chunk:
    """A Weaviate object's properties as our ``Chunk`` (the only place that reads them)."""
    visibility = tuple(str(v) for v in (p.get("visibility") or [EVERYONE]))
    page = p.get("page")
    return Chunk(
        chunk_id=str(p["chunk_id"]),
        document_id=str(p["document_id"]),
        version=_opt_str(p.get("version")),
        content_hash=str(p.get("content_hash") or ""),
        ordinal=int(p.get("ordinal") or 0),
        title=str(p.get("title") or ""),
        section=_opt_str(p.get("section")),
        page=int(page) if page is not None else None,
        url=_opt_str(p.get("url")),
        updated_at=_opt_str(p.get("updated_at")),
        visibility=None if visibility == (EVERYONE,) else visibility,
        language=str(p.get("language") or "en"),
        text=str(p.get("text") or ""),
    )


def _floats(vector: Sequence[float] | np.ndarray) -> list[float]:
    return np.asarray(vector, dtype=np.float32).tolist()


def _opt_str(value: object) -> str | None:
    return None if value is None or value == "" else str(value)

