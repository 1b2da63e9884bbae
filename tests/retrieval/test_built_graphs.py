"""Built graphs kept on disk: a later start loads e5 (its graph and its tokenizer's model; and the judge) from the
cache folder without building or importing ``onnx``, and gets the same vectors; a file that does not load is built
again over; a folder that cannot be written only costs the build."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from retrieval.encoder.judge import Judge, Pair, read_judge
from retrieval.encoder.runtime import E5Encoder

TEXTS = ["After 5 failed sign-in attempts the account is locked for 30 minutes.",
         "年額プランの返金は購入から30日以内に申請できます。",
         "Пароль можно сбросить на странице входа, ссылка действует 24 часа."]


def _vectors(cache_dir: Path | None) -> np.ndarray:
    encoder = E5Encoder(threads=1, cache_dir=cache_dir)
    try:
        return encoder.embed(TEXTS, "passage")
    finally:
        encoder.close()


def test_a_second_start_loads_the_kept_graph_without_importing_onnx(tmp_path: Path, encoder: E5Encoder) -> None:
    first = _vectors(tmp_path)
    kept = sorted(tmp_path.glob("e5-int8-*.onnx"))
    assert len(kept) == 1 and kept[0].stat().st_size > 10_000_000
    assert len(list(tmp_path.glob("e5-tokenizer-*.model"))) == 1
    probe = ("import sys; from pathlib import Path; from retrieval.encoder.runtime import E5Encoder; "
             f"e = E5Encoder(threads=1, cache_dir=Path({str(tmp_path)!r})); v = e.embed({TEXTS!r}, 'passage'); "
             "print(int('onnx' in sys.modules)); print(' '.join(repr(float(x)) for x in v.ravel()))")
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split("\n")
    assert out[0] == "0"  # loaded, not built: the half second of importing onnx is not paid
    again = np.array([float(x) for x in out[1].split()], np.float32).reshape(first.shape)
    np.testing.assert_allclose(again, first, atol=1e-6)
    np.testing.assert_allclose(first, encoder.embed(TEXTS, "passage"), atol=1e-6)  # what an uncached start gets


def test_a_kept_file_that_does_not_load_is_built_again(tmp_path: Path, encoder: E5Encoder,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    _vectors(tmp_path)
    (kept,) = tmp_path.glob("e5-int8-*.onnx")
    kept.write_bytes(kept.read_bytes()[:1000])  # cut short, as by a full disk
    with caplog.at_level(logging.WARNING, logger="retrieval.encoder.built"):
        vectors = _vectors(tmp_path)
    assert "does not load" in caplog.text and str(kept) in caplog.text
    np.testing.assert_allclose(vectors, encoder.embed(TEXTS, "passage"), atol=1e-6)
    assert kept.stat().st_size > 10_000_000  # written whole again
    assert not list(tmp_path.glob("*.tmp"))  # no half-written file left beside it


def test_a_kept_tokenizer_model_that_does_not_load_is_made_again(tmp_path: Path, encoder: E5Encoder,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    _vectors(tmp_path)
    (kept,) = tmp_path.glob("e5-tokenizer-*.model")
    whole = kept.read_bytes()
    kept.write_bytes(b"not a sentencepiece model")
    with caplog.at_level(logging.WARNING, logger="retrieval.encoder.built"):
        vectors = _vectors(tmp_path)
    assert "does not load" in caplog.text and str(kept) in caplog.text
    np.testing.assert_allclose(vectors, encoder.embed(TEXTS, "passage"), atol=1e-6)
    assert kept.read_bytes() == whole


def test_a_cache_folder_that_cannot_be_written_only_costs_the_build(tmp_path: Path, encoder: E5Encoder) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be", encoding="utf-8")
    vectors = _vectors(blocked / "models")
    np.testing.assert_allclose(vectors, encoder.embed(TEXTS, "passage"), atol=1e-6)


def test_the_judge_is_kept_apart_from_e5_and_by_its_own_weights(tmp_path: Path, encoder: E5Encoder) -> None:
    cached = E5Encoder(threads=1, cache_dir=tmp_path)
    card, tuned = read_judge()
    pair = [Pair("How long is an account locked?", TEXTS[0], title="Sign-in")]
    try:
        shipped = Judge(cached, card, tuned).probabilities(pair)
        assert len(list(tmp_path.glob("judge-int8-*.onnx"))) == 1
        np.testing.assert_allclose(Judge(cached, card, tuned).probabilities(pair), shipped, atol=1e-6)  # loaded
        np.testing.assert_allclose(Judge(encoder, card, tuned).probabilities(pair), shipped, atol=1e-6)  # built
        other = {name: value * 0.5 if name.startswith("head.") else value for name, value in tuned.items()}
        retrained = Judge(cached, card, other).probabilities(pair)
        assert len(list(tmp_path.glob("judge-int8-*.onnx"))) == 2  # another judge never reads the first's file
        assert not np.allclose(retrained, shipped)
    finally:
        cached.close()
