"""The benches' caches: vectors (and the answer bench's harvests) of one e5 graph are never read for another graph
or another int8 kernel (the disk outlives a session's machine, and both change the vectors), and are read back
otherwise."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import answers, common
from retrieval.embedders.local import E5Embedder

QUESTION = "How much does standard shipping cost?"


@pytest.mark.parametrize(("flags", "machine", "kernel"), [
    ({"avx2", "fma", "avx512f", "avx512_vnni"}, "x86_64", "vnni"),
    ({"avx2", "fma", "avx_vnni"}, "x86_64", "vnni"),
    ({"avx2", "fma"}, "x86_64", "avx2"),  # the AMD EPYCs without VNNI: sums saturate
    (set(), "aarch64", "aarch64"),
])
def test_the_int8_kernel_is_named_by_the_cpu_s_flags(flags: set[str], machine: str, kernel: str) -> None:
    assert common.int8_kernel(flags, machine) == kernel


async def test_vectors_of_another_graph_version_are_embedded_again_not_read(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(common, "CACHE", tmp_path)
    inner = E5Embedder(threads=1)
    try:
        first = common.CachedEmbedder(inner)
        real = await first.embed_query(QUESTION)
        # A planted vector stands for what an older graph wrote: read back while the graph is the same...
        first._db.execute("UPDATE v SET v = ?", (np.zeros(first.dim, np.float32).tobytes(),))
        first._db.commit()
        first._db.close()
        same = common.CachedEmbedder(inner)
        assert not (await same.embed_query(QUESTION)).any()
        same._db.close()
        # ...and never once the graph's version is another.
        monkeypatch.setattr(common, "BUILDER_VERSION", common.BUILDER_VERSION + 1)
        other = common.CachedEmbedder(inner)
        assert np.allclose(await other.embed_query(QUESTION), real, atol=1e-6)
        assert len(list(tmp_path.glob("vectors-*.sqlite3"))) == 2
        other._db.close()
    finally:
        await inner.aclose()


def test_an_answer_harvest_is_named_by_the_graph_and_kernel_that_computed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The answer bench's harvest (and the judge's scores, cached under its name) holds what this graph retrieved:
    another graph version or another CPU's int8 kernel harvests again rather than read it."""
    here = answers.harvest_path("xquad-en")
    monkeypatch.setattr(common, "BUILDER_VERSION", common.BUILDER_VERSION + 1)
    newer = answers.harvest_path("xquad-en")
    monkeypatch.setattr(common, "this_int8_kernel", lambda: "elsewhere")
    elsewhere = answers.harvest_path("xquad-en")
    assert len({here, newer, elsewhere}) == 3
    assert {p.parent for p in (here, newer, elsewhere)} == {answers.HARVEST}
    assert all(p.name.startswith("xquad-en-") for p in (here, newer, elsewhere))
