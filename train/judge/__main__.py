"""Train the answer judge and write the file that ships: ``python -m train.judge``.

    1. pairs     train.judge.data: (question, sentence) → answers it or not, from ../shared, fixed seed
    2. states    the wheel's lower layers (int8, as they run in the judge) over every pair, once (``--states``: in
                 shared runs, or each pair alone as the service runs it): cached under bench/.cache/judge/ by each
                 pair's tokens, in parts, so an interrupted run resumes and another recipe computes only its new
                 pairs' states
    3. train     the upper layers and the head in JAX (AdamW; a checkpoint every 300 steps and when SIGINT or
                 SIGTERM stops the run, which exits 130 / 143 after its step; the same command resumes)
    4. write     retrieval/encoder/judge/judge.npz (tuned tensors: int8 where the graph runs them in int8, else
                 float16) and judge.json (the card: command, seed, data digest, held-out metrics); the ONNX graph's
                 logits are checked against JAX's first

Needs the ``train`` extra (``make train`` installs it; JAX and optax, CPU only). ``--tiny`` trains a few steps on a
few pairs into a folder of your choice (the tests do). The decision's threshold is set afterwards by
``python -m bench.answers`` on the FIT halves of the shared sets.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import pickle
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import onnxruntime as ort
import optax

from bench.common import CachedEmbedder
from retrieval.embedders.local import E5Embedder
from retrieval.encoder import graph
from retrieval.encoder.judge import JUDGE_DIR, Judge, JudgeCard, pair_ids, read_judge, write_tuned
from retrieval.encoder.runtime import E5Encoder, length_groups, session_options
from retrieval.encoder.weights import Weights
from train.judge import data
from train.judge.batches import batches, group_max, pad, pad_tags, unit_batch, units
from train.judge.mined import E5Closeness
from train.judge.model import initial_params, logits, logits_and_tokens, tag_loss, unit_loss
from train.judge.stopping import StopRequest
from train.judge.tags import answer_tags

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / "bench" / ".cache" / "judge"
PART = 2000  # pairs per cached part of states
BATCH = 32  # the shipped recipe's; another is named in the version (it trains another judge on the same pairs)
GROUP_TOKENS = 4096  # padded tokens per shared run of the lower layers


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _state_key(ids: list[int]) -> bytes:
    return hashlib.blake2b(np.asarray(ids, np.int32).tobytes(), digest_size=16).digest()


def lower_states(encoder: E5Encoder, ids: list[list[int]], lower: int, folder: Path, threads: int, *,
                 alone: bool = False) -> list[np.ndarray]:
    """Each pair's states after the ``lower`` frozen layers, float16 ``[length, hidden]``: in shared runs of about
    ``GROUP_TOKENS`` padded tokens, or (``alone``) each pair in a run of its own, as the service runs a candidate —
    the int8 graph quantizes activations per run, so run-mates move a pair's states (docs/benchmarks.md, "Lower-layer
    states computed as the service computes them", measured both).

    Cached by the pair's token ids, in parts of ``PART`` pairs, so a recipe that changes some pairs (more negatives
    of one kind, another source) computes only the new ones' states; every part is written whole (atomically), so
    an interrupted run resumes after its last part."""
    folder.mkdir(parents=True, exist_ok=True)
    where: dict[bytes, list[int]] = {}
    for i, x in enumerate(ids):
        where.setdefault(_state_key(x), []).append(i)
    out: list[np.ndarray | None] = [None] * len(ids)

    def place(part: dict[bytes, np.ndarray]) -> None:
        for key, states in part.items():
            for i in where.get(key, ()):
                out[i] = states

    for path in sorted(folder.glob("part-*.pickle")):
        with open(path, "rb") as handle:
            place(pickle.load(handle))  # our own cache, written below: {key: states}
    missing = [key for key, rows in where.items() if out[rows[0]] is None]
    _log(f"states: {len(ids) - sum(len(where[k]) for k in missing)} of {len(ids)} pairs cached, "
         f"{len(missing)} to compute")
    if missing:
        session = ort.InferenceSession(graph.build(encoder.model, Weights.INT8, layers=lower).SerializeToString(),
                                       session_options(), providers=["CPUExecutionProvider"])
    for start in range(0, len(missing), PART):
        keys = missing[start:start + PART]
        part_ids = [ids[where[k][0]] for k in keys]
        computed: dict[bytes, np.ndarray] = {}

        def run(group: list[int]) -> None:
            embeddings, mask = encoder.inputs([part_ids[i] for i in group])
            (result,) = session.run(["states"], {"embeddings": embeddings, "mask": mask})
            for row, i in enumerate(group):
                computed[keys[i]] = result[row, :len(part_ids[i])].astype(np.float16)

        runs = ([[i] for i in range(len(part_ids))] if alone
                else length_groups([len(x) for x in part_ids], GROUP_TOKENS))
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(run, runs))
        path = folder / f"part-{hashlib.blake2b(b''.join(keys), digest_size=8).hexdigest()}.pickle"
        with open(path.with_suffix(".tmp"), "wb") as handle:
            pickle.dump(computed, handle, protocol=5)
        path.with_suffix(".tmp").rename(path)
        place(computed)
        _log(f"states: {min(start + PART, len(missing))} / {len(missing)} computed")
    return out  # type: ignore[return-value]  # every entry was filled above


def _auc(scores: np.ndarray, labels: np.ndarray) -> float:
    positive, negative = scores[labels == 1], scores[labels == 0]
    if not len(positive) or not len(negative):
        return float("nan")
    ranks = np.argsort(np.argsort(np.concatenate([positive, negative]))) + 1
    return float((ranks[:len(positive)].sum() - len(positive) * (len(positive) + 1) / 2) / (len(positive) * len(negative)))


def _count(text: str) -> int | None:
    """A count of queries, or 'all' (None: no limit)."""
    if text == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count: give a whole number or 'all'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text} is below 0: give a whole number or 'all'")
    return value


def sizes_for(args: argparse.Namespace) -> data.Sizes:
    """How many questions each source gives. Without ``--nomiracl``: none of NoMIRACL-more's, but every query where
    ``--nomiracl-groups`` reads them (as its recipes were measured, so their cards' commands still make them)."""
    if args.tiny:
        return data.Sizes(squad=24, jaquad=12, nomiracl=2, fit_sets=4)
    nomiracl = getattr(args, "nomiracl", None if args.nomiracl_groups else data.Sizes().nomiracl)
    return data.Sizes(squad=args.squad, jaquad=args.jaquad, nomiracl=nomiracl)


def version_name(digest: str, lower: int, adapter: int, epochs: float, lr: float, batch: int, tags: str = "") -> str:
    """The judge's version: its pairs (their digest), the recipe's settings and the graph whose states it was trained
    on — a judge retrained another way must never be read through decision models fitted on the old one's logits.
    The shipped recipe's defaults add no tag (``tags``: the states', the answer-token loss's and the batches'
    order's), so its version stays what its decision models name."""
    batch_tag = f"-b{batch}" if batch != BATCH else ""
    return f"judge-{digest[:8]}-l{lower}-a{adapter}-e{epochs:g}-lr{lr:g}{tags}{batch_tag}-g{graph.BUILDER_VERSION}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=JUDGE_DIR, help="folder to write judge.npz and judge.json")
    parser.add_argument("--lower", type=int, default=7,
                        help="the wheel's layers left frozen (the rest are tuned; docs/benchmarks.md: five tuned "
                        "layers read the gold-removed case better than three or four, and still fit 20 MB)")
    parser.add_argument("--adapter", type=int, default=0, help="width of the new layer over e5's states (0: none)")
    parser.add_argument("--epochs", type=float, default=1.0, help="passes over the pairs (docs/benchmarks.md: runs "
                        "of 1.5 and 2 at --lr 2e-4 read better on held-out pairs, and why they do not ship)")
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument("--lr", type=float, default=2e-4, help="the tuned layers' peak rate (the head's is 25x)")
    parser.add_argument("--seed", type=int, default=13, help="picks the pairs, the head's first weights and the "
                        "order of the batches")
    parser.add_argument("--order-seed", type=int, default=None, metavar="N",
                        help="the order of the batches alone (default: --seed): the same pairs and first weights, "
                        "so two runs differ only as training's chance makes them (docs/benchmarks.md: the spread "
                        "between such runs, the yardstick for a recipe's gain)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--squad", type=int, default=data.Sizes().squad)
    parser.add_argument("--jaquad", type=int, default=data.Sizes().jaquad)
    parser.add_argument("--nomiracl", type=_count, default=argparse.SUPPRESS, metavar="N",
                        help="NoMIRACL-more queries a language and subset whose non-relevant passages give negatives "
                        "(default 0: none, so the judge meets its nine languages only through e5's transfer, as it "
                        "meets German or Indonesian; negatives alone taught it those languages never answer; 'all': "
                        "every query, the recipe of the judges before judge-b03d3076, and the default with "
                        "--nomiracl-groups, as its recipes were measured)")
    parser.add_argument("--easy-negatives", action=argparse.BooleanOptionalAction, default=True,
                        help="one easy negative per question too (train/judge/data.py says why)")
    parser.add_argument("--other-paragraph", type=int, default=2, metavar="N",
                        help="negatives per question from the article's other paragraphs (the gold-removed case)")
    parser.add_argument("--swapped-names", action=argparse.BooleanOptionalAction, default=False,
                        help="one more negative per question: the question with a name its answer holds swapped for "
                        "another of its article's (train/judge/data.py says why; measured, not shipped)")
    parser.add_argument("--nomiracl-groups", type=int, default=0, metavar="K",
                        help="NoMIRACL-more as one group of K candidates a query, both subsets, the loss on each "
                        "group's highest logit (train/judge/data.py says why); 0: its non-relevant queries' two "
                        "closest sentences as negatives")
    parser.add_argument("--nomiracl-groups-beside", type=int, default=None, metavar="N",
                        help="with --nomiracl-groups: groups of only N queries a language and subset, beside the "
                        "non-relevant queries' negatives rather than in their place (measured, not shipped: "
                        "docs/benchmarks.md)")
    parser.add_argument("--mined-by", choices=("terms", "e5"), default="terms",
                        help="how the QA sets' hard negatives are ranked: by the share of the question's terms they "
                        "hold, or as the service ranks its quotes (e5 similarity and its term bonus, among every "
                        "other paragraph of the article; train/judge/mined.py)")
    parser.add_argument("--states", choices=("shared", "alone"), default="shared",
                        help="the lower layers' states in shared runs (the shipped judge's), or each pair alone as the "
                        "service runs it (measured, not shipped: docs/benchmarks.md)")
    parser.add_argument("--span-weight", type=float, default=0.0, metavar="W",
                        help="a second loss, W times the first: which of an answering pair's tokens hold its answer "
                        "(train/judge/tags.py; training only, the shipped graph is the same; 0: none; measured, "
                        "not shipped: docs/benchmarks.md)")
    parser.add_argument("--tiny", action="store_true", help="a few pairs and steps: a smoke run (the tests')")
    parser.add_argument("--cache", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    if args.tiny and args.out.resolve() == JUDGE_DIR.resolve():
        parser.error("--tiny would overwrite the shipped judge: give --out a folder of your own")

    if args.tiny:  # a few steps on few pairs must still move: a higher rate, all on the same pairs
        args.batch, args.lr = 8, 1e-3
    if args.nomiracl_groups > args.batch:
        parser.error(f"--nomiracl-groups {args.nomiracl_groups} is more than a batch holds: at most --batch "
                     f"({args.batch}{', as --tiny sets it' if args.tiny else ''})")
    if args.nomiracl_groups_beside is not None and not args.nomiracl_groups:
        parser.error("--nomiracl-groups-beside needs --nomiracl-groups K: how many candidates a group holds")
    sizes = sizes_for(args)
    # The pairs take minutes to build (sentence splitting): cached by what they are built from.
    grouped = f"g{args.nomiracl_groups}" if args.nomiracl_groups else ""  # absent: the earlier recipes' caches hold
    if args.nomiracl_groups_beside is not None:
        grouped += f"b{args.nomiracl_groups_beside}"
    swaps = "s" if args.swapped_names else ""
    mined = "" if args.mined_by == "terms" else f"m{args.mined_by}-{graph.BUILDER_VERSION}"  # e5's: by its graph
    recipe = hashlib.sha1(f"{sizes}{args.seed}{args.easy_negatives}{args.other_paragraph}{grouped}{swaps}{mined}"
                          .encode() + Path(data.__file__).read_bytes()).hexdigest()[:12]
    pairs_path = args.cache / f"pairs-{recipe}.pickle"
    if pairs_path.exists():
        with open(pairs_path, "rb") as handle:
            examples = pickle.load(handle)  # our own cache, written below
    else:
        _log("pairs: building")
        closeness = E5Closeness(CachedEmbedder(E5Embedder(threads=args.threads))) if args.mined_by == "e5" else None
        try:
            examples = data.examples(sizes, seed=args.seed, easy=args.easy_negatives, others=args.other_paragraph,
                                     groups=args.nomiracl_groups, beside=args.nomiracl_groups_beside,
                                     swaps=args.swapped_names, closeness=closeness)
        finally:
            if closeness is not None:
                closeness.close()
        args.cache.mkdir(parents=True, exist_ok=True)
        with open(pairs_path.with_suffix(".tmp"), "wb") as handle:  # whole or not at all: a stop here loses nothing
            pickle.dump(examples, handle)
        pairs_path.with_suffix(".tmp").rename(pairs_path)
    digest = data.digest(examples)
    labels = np.array([e.label for e in examples], np.float32)
    # Held out from training (by a hash of the question, so a question's pairs stay together): the card's metrics.
    held = np.array([int(hashlib.sha1(e.pair.question.encode()).hexdigest(), 16) % 25 == 0 for e in examples])
    _log(f"pairs: {len(examples)} ({int(labels.sum())} answering), digest {digest}, {int(held.sum())} held out")

    encoder = E5Encoder(threads=args.threads)
    ids = pair_ids(encoder.tokenizer, [e.pair for e in examples])
    lower = args.lower
    # A recipe's name for its states: "" for the shared runs (the caches and versions from before the choice hold).
    alone = args.states == "alone"
    tag = "-alone" if alone else ""
    states = lower_states(encoder, ids, lower, args.cache / f"states{tag}-l{lower}-b{graph.BUILDER_VERSION}",
                          args.threads, alone=alone)
    lengths = np.array([len(s) for s in states])
    shape = encoder.model.shape
    layers = range(lower, shape.layers)

    spans = args.span_weight > 0
    params = {k: jnp.asarray(v)
              for k, v in initial_params(encoder.model, lower, args.seed, args.adapter, spans).items()}
    tags = (answer_tags(encoder.tokenizer, [e.pair for e in examples], [e.answer for e in examples], list(lengths))
            if spans else [None] * len(examples))
    if spans:
        _log(f"tags: the answer's tokens found in {sum(t is not None for t in tags)} of {int(labels.sum())} "
             f"answering pairs")
    order = args.seed if args.order_seed is None else args.order_seed
    order_tag = f"-o{order}" if order != args.seed else ""  # absent: the shipped run's folder and version hold
    rng = np.random.default_rng(order)
    train_units = units(examples, np.flatnonzero(~held))
    per_epoch = len(batches(lengths, train_units, args.batch, np.random.default_rng(0)))
    total = max(1, int(round(per_epoch * args.epochs))) if not args.tiny else 40
    schedule = {rate: optax.warmup_cosine_decay_schedule(0.0, rate, max(1, total // 20), total, rate * 0.05)
                for rate in (args.lr, args.lr * 25)}
    optimizer = optax.multi_transform(
        {"layers": optax.adamw(schedule[args.lr], weight_decay=0.01),
         "head": optax.adamw(schedule[args.lr * 25], weight_decay=0.01)},
        {k: ("head" if k.startswith("head.") else "layers") for k in params})
    state = optimizer.init(params)

    def loss_fn(p, x, mask, segment, y, real, token_tags, tagged):
        z, tokens = logits_and_tokens(p, x, mask, layers=layers, heads=shape.heads, eps=shape.eps)
        loss = unit_loss(z, segment, y, real)
        return loss + args.span_weight * tag_loss(p, tokens, token_tags, tagged, mask) if spans else loss

    @jax.jit
    def step(p, s, x, mask, segment, y, real, token_tags, tagged):
        loss, grads = jax.value_and_grad(loss_fn)(p, x, mask, segment, y, real, token_tags, tagged)
        updates, s = optimizer.update(grads, s, p)
        return optax.apply_updates(p, updates), s, loss

    score = jax.jit(lambda p, x, mask: logits(p, x, mask, layers=layers, heads=shape.heads, eps=shape.eps))

    # The graph's version too: a run on another graph's states must not resume this one's checkpoint.
    span_tag = f"-sp{args.span_weight:g}" if spans else ""
    run_dir = args.cache / (f"run-{digest}{tag}-l{lower}-g{graph.BUILDER_VERSION}-a{args.adapter}-e{args.epochs}"
                            f"-b{args.batch}-lr{args.lr}-s{args.seed}{order_tag}{span_tag}")
    checkpoint = run_dir / "checkpoint.pickle"
    done, losses, earlier = 0, [], 0.0  # earlier: the seconds that runs stopped before this one trained
    if checkpoint.exists():
        with open(checkpoint, "rb") as handle:
            saved = pickle.load(handle)  # our own checkpoint
        params, state, done, losses = saved["params"], saved["state"], saved["step"], saved["losses"]
        earlier = saved.get("seconds", 0.0)  # 0 for checkpoints written before the seconds were kept
        _log(f"train: resumed at step {done} / {total}")
    plan = [b for _ in range(int(np.ceil(total / per_epoch)) + 1) for b in batches(lengths, train_units, args.batch, rng)]

    def save(steps: int) -> None:
        run_dir.mkdir(parents=True, exist_ok=True)
        with open(checkpoint.with_suffix(".tmp"), "wb") as handle:
            pickle.dump({"params": jax.device_get(params), "state": jax.device_get(state), "step": steps,
                         "losses": losses, "seconds": earlier + time.perf_counter() - started}, handle)
        checkpoint.with_suffix(".tmp").rename(checkpoint)

    started = time.perf_counter()
    with StopRequest() as stop:
        _log(f"train: from step {done} / {total} (SIGINT or SIGTERM stops it after a step, checkpointed)")
        for number in range(done, total):
            rows, segment, unit_labels, real = unit_batch(train_units, plan[number], labels, args.batch)
            x, mask = pad(states, rows, args.batch)
            token_tags, tagged = pad_tags(tags, rows, mask.shape)
            params, state, loss = step(params, state, *map(jnp.asarray, (x, mask, segment, unit_labels, real,
                                                                         token_tags, tagged)))
            losses.append(float(loss))
            if (number + 1) % 50 == 0 or number + 1 == total:
                rate = (number + 1 - done) * args.batch / (time.perf_counter() - started)
                _log(f"train: step {number + 1} / {total}, loss {np.mean(losses[-50:]):.4f}, {rate:.1f} pairs/s")
            stopping = stop.received is not None and number + 1 < total  # at the last step: write the judge
            if (number + 1) % 300 == 0 or stopping:
                save(number + 1)
            if stopping:
                _log(f"train: stopped by {stop.received.name} at step {number + 1} / {total}; checkpoint in "
                     f"{run_dir}: the same command resumes from there")
                encoder.close()
                return stop.exit_code

    tenth = max(1, len(losses) // 10)  # the loss over the first and the last tenth of the steps
    held_all = np.flatnonzero(held)
    held_idx = np.array([i for i in held_all if not examples[i].group], int)  # pairs with labels of their own
    held_groups = np.array([i for i in held_all if examples[i].group], int)

    def scores(indices: np.ndarray) -> np.ndarray:
        """The trained judge's logits for these pairs, 64 or so at a time."""
        if not len(indices):
            return np.zeros(0)
        return np.concatenate([np.asarray(score(params, *map(jnp.asarray, pad(states, b))))
                               for b in np.array_split(indices, max(1, len(indices) // 64))])

    held_scores = scores(held_idx)
    metrics: dict[str, object] = {"held_out_pairs": int(len(held_idx)), "auc": round(_auc(held_scores, labels[held_idx]), 4),
                                  "accuracy_at_0.5": round(float(((held_scores > 0) == (labels[held_idx] == 1)).mean()), 4) if len(held_idx) else None,
                                  "first_loss": round(float(np.mean(losses[:tenth])), 4),
                                  "last_loss": round(float(np.mean(losses[-tenth:])), 4)}
    by_origin: dict[str, list[int]] = {}
    for row, i in enumerate(held_idx):
        by_origin.setdefault(examples[i].origin.split("/")[0], []).append(row)
    metrics["auc_by_set"] = {k: round(_auc(held_scores[v], labels[held_idx][v]), 4) for k, v in sorted(by_origin.items())}
    if len(held_groups):  # a NoMIRACL group answers when its best candidate does: the query-level AUC
        best, group_labels = group_max(scores(held_groups), examples, held_groups)
        metrics["nomiracl_groups"] = {"held_out": int(len(best)), "auc_of_best": round(_auc(best, group_labels), 4)}

    args.out.mkdir(parents=True, exist_ok=True)
    write_tuned(args.out / "judge.npz", {k: np.asarray(v) for k, v in jax.device_get(params).items()
                                         if not k.startswith("head.tag.")})  # the answer-token reading teaches only
    version = version_name(digest, lower, args.adapter, args.epochs, args.lr, args.batch, tag + span_tag + order_tag)
    previous = json.loads((args.out / "judge.json").read_text(encoding="utf-8")) if (args.out / "judge.json").exists() else {}
    card = JudgeCard(version=version, lower_layers=lower, threshold=float(previous.get("threshold", 0.5)),
                     candidates=int(previous.get("candidates", 4)),
                     trained={"command": " ".join(["python -m train.judge", *(argv if argv is not None else sys.argv[1:])]),
                              "seed": args.seed, **({"order_seed": order} if order_tag else {}),
                              "data_digest": digest, "pairs": len(examples), "steps": total,
                              "epochs": args.epochs, "batch": args.batch, "lr": args.lr, "sizes": asdict(sizes), "metrics": metrics,
                              "seconds": round(earlier + time.perf_counter() - started)})  # every sitting
    (args.out / "judge.json").write_text(json.dumps(card.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")

    # What ONNX Runtime will compute must be what was trained: compare on a few held-out pairs.
    judge = Judge(encoder, *read_judge(args.out))
    sample = list(held_idx[:8]) or list(range(min(8, len(ids))))
    onnx_logits = judge.logits([ids[i] for i in sample])
    jax_logits = scores(np.array(sample))
    metrics["onnx_vs_jax_max_logit_diff"] = round(float(np.abs(onnx_logits - jax_logits).max()), 4)
    card = JudgeCard(card.version, card.lower_layers, card.threshold, card.candidates, {**card.trained, "metrics": metrics})
    (args.out / "judge.json").write_text(json.dumps(card.to_json(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    _log(f"wrote {args.out}: {json.dumps(metrics)}")
    encoder.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
