"""Our hand-written helpers against the well-kept libraries that do the same job (#23 part 5), timed side by side.

    python -m bench.libraries        (the candidates importable: pip install --target DIR cachetools tenacity
                                      python-json-logger jinja2 scipy, then PYTHONPATH=.:DIR)

Each pair is run on the same input, and checked to give the same result before it is timed; the decision and
the numbers are in docs/architecture.md ("Libraries we use, and helpers we keep"). The best of five repeats is
printed, so a busy machine's noise counts as little as it can.
"""

from __future__ import annotations

import importlib.util
import logging
import subprocess
import sys
import timeit
from collections.abc import Callable

import numpy as np

from bot.log_format import FIELDS, JsonFormatter
from bot.review.clustering import cluster
from bot.review.html_safe import fmt, join
from bot.slack.seen import Seen


def best(call: Callable[[], object], number: int) -> float:
    """Seconds per call, best of five repeats of ``number`` calls."""
    return min(timeit.repeat(call, number=number, repeat=5)) / number


def import_ms(module: str) -> float:
    """A cold import of ``module`` in a fresh interpreter, in ms (what a process pays at start-up)."""
    code = f"import time; t = time.perf_counter(); import {module}; print((time.perf_counter() - t) * 1000)"
    return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)


def seen_pair() -> None:
    from cachetools import LRUCache

    keys = [f"Ev{i:08d}" for i in range(50_000)]

    def ours() -> None:
        seen = Seen(10_000)
        for key in keys:
            seen.first_time(key, "C1:" + key)

    def theirs() -> None:
        cache: LRUCache[str, None] = LRUCache(10_000)
        for key in keys:
            if key not in cache and "C1:" + key not in cache:
                cache[key] = cache["C1:" + key] = None

    print(f"seen events, 50,000 first_time calls: ours {best(ours, 3) * 1e3:.1f} ms, "
          f"cachetools.LRUCache {best(theirs, 3) * 1e3:.1f} ms")


def json_log_pair() -> None:
    from pythonjsonlogger.json import JsonFormatter as TheirFormatter

    record = logging.LogRecord("bot.slack.answering", logging.INFO, __file__, 1, "question event=%s outcome=%s",
                               ("Ev1", "answered"), None)
    setattr(record, FIELDS, {"event": "question", "exchange_id": "x" * 36, "outcome": "answered",
                             "timings_ms": {"total": 12.5}})
    ours = JsonFormatter()
    # Theirs writes every attribute ``extra`` set, so the one dict of named fields is what it gets too.
    theirs = TheirFormatter("{asctime}{levelname}{name}{message}", style="{", rename_fields={"levelname": "level"})
    assert '"outcome": "answered"' in ours.format(record) and "answered" in theirs.format(record)
    print(f"JSON log line: ours {best(lambda: ours.format(record), 20_000) * 1e6:.1f} µs, "
          f"python-json-logger {best(lambda: theirs.format(record), 20_000) * 1e6:.1f} µs")


def clustering_pair() -> None:
    from scipy.cluster.hierarchy import fcluster, linkage

    generator = np.random.default_rng(7)
    centres = generator.normal(size=(40, 384))
    vectors = np.concatenate([c + 0.35 * generator.normal(size=(25, 384)) for c in centres])
    threshold = 0.85

    def theirs() -> list[int]:
        labels = fcluster(linkage(vectors, method="average", metric="cosine"), t=1 - threshold, criterion="distance")
        numbers: dict[int, int] = {}
        return [numbers.setdefault(int(label), len(numbers)) for label in labels]

    assert cluster(vectors, threshold) == theirs(), "the same groups"
    print(f"gaps, average linkage of 1,000 vectors (384 dims): ours {best(lambda: cluster(vectors, threshold), 1):.2f}"
          f" s, scipy {best(theirs, 1) * 1e3:.0f} ms")


def template_pair() -> None:
    import jinja2

    rows = [{"id": f"{i:08x}", "question": f"How do I <reset> my password #{i}?", "outcome": "no_support"}
            for i in range(1000)]
    template = jinja2.Environment(autoescape=True).from_string(
        "<table>{% for r in rows %}<tr><td><a href=\"/exchanges/{{ r.id }}\">{{ r.question }}</a></td>"
        "<td>{{ r.outcome }}</td></tr>{% endfor %}</table>")
    row = '<tr><td><a href="/exchanges/{id}">{question}</a></td><td>{outcome}</td></tr>'

    def ours() -> str:
        return fmt("<table>{rows}</table>", rows=join(fmt(row, **r) for r in rows))

    # The same page but for how each escapes a quote mark (html.escape: &#x27;, MarkupSafe: &#39;).
    assert ours().replace("&#x27;", "&#39;") == template.render(rows=rows)
    print(f"review queue page, 1,000 rows: ours {best(ours, 20) * 1e3:.2f} ms, "
          f"Jinja2 {best(lambda: template.render(rows=rows), 20) * 1e3:.2f} ms")


def main() -> None:
    for name, pair in (("cachetools", seen_pair), ("pythonjsonlogger", json_log_pair), ("scipy", clustering_pair),
                       ("jinja2", template_pair)):
        if importlib.util.find_spec(name) is None:
            print(f"{name}: not installed, skipped")
            continue
        pair()
    for module in ("tenacity", "structlog", "jinja2", "cachetools", "pythonjsonlogger", "scipy.cluster.hierarchy"):
        if importlib.util.find_spec(module.split(".")[0]) is not None:
            print(f"import {module}: {import_ms(module):.0f} ms")


if __name__ == "__main__":
    main()
