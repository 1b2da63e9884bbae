"""The built engine's one-pass span pooling (``e5_embed_spans``), which bench.sentence_vectors measures against
the standalone sentence vectors that ship: its passage rows are the engine's own, and each span's vector comes
from that span's tokens, in English, Japanese and Russian (byte offsets of multi-byte text)."""

from __future__ import annotations

import numpy as np
import pytest

from bench.sentence_vectors import embed_spans
from retrieval.embedders.local import built_engine, load_e5
from retrieval.sentences import split_sentences

# Three sentences on unrelated topics each: each sentence, embedded alone, must be nearest its own pooled span.
PASSAGES = [
    ("en", "The export runs nightly at 02:00 UTC. Cats sleep for most of the day. "
           "The treaty was signed in Vienna in 1815."),
    ("ja", "エクスポートは毎晩2時に実行されます。猫は一日の大半を寝て過ごします。条約は1815年にウィーンで署名された。"),
    ("ru", "Экспорт запускается каждую ночь в 02:00. Кошки спят большую часть дня. "
           "Договор был подписан в Вене в 1815 году."),
]


@pytest.fixture(scope="module")
def model() -> object:
    engine = built_engine()
    assert engine is not None, "make install compiles retrieval/embedders/native/e5.c (setup.py); it did not"
    return load_e5(engine=engine)


def _spans(language: str, text: str) -> list[tuple[int, int]]:
    spans = [(s.start, s.end) for s in split_sentences(text, language)]
    assert len(spans) == 3, spans
    return spans


def test_the_passage_rows_are_the_engines_passage_vectors(model: object) -> None:
    texts = [text for _, text in PASSAGES]
    passages, spans, pooled = embed_spans(model, texts, [_spans(lang, text) for lang, text in PASSAGES])
    assert np.abs(passages - np.asarray(model.passage(texts))).max() < 1e-5  # type: ignore[attr-defined]
    assert pooled.all() and spans.shape == (9, 384)
    assert np.allclose(np.linalg.norm(spans, axis=1), 1.0, atol=1e-4)


@pytest.mark.parametrize(("language", "text"), PASSAGES)
def test_each_sentence_is_nearest_its_own_pooled_span(model: object, language: str, text: str) -> None:
    spans = _spans(language, text)
    _, pooled, _ = embed_spans(model, [text], [spans])
    standalone = np.asarray(model.passage([text[s:e] for s, e in spans]))  # type: ignore[attr-defined]
    similarity = pooled @ standalone.T
    assert list(similarity.argmax(axis=0)) == [0, 1, 2], similarity  # wrong offsets would pool another sentence


def test_a_text_longer_than_one_window_is_left_out_and_said_so(model: object) -> None:
    long = " ".join(["The export runs nightly and keeps thirty days of history."] * 60)
    passages, spans, pooled = embed_spans(model, ["Short one.", long, "Another one."], [[(0, 10)], [(0, 20)], [(0, 12)]])
    assert list(pooled) == [True, False, True]
    assert np.isnan(passages[1]).all() and np.isnan(spans[1]).all()
    assert np.abs(passages[[0, 2]] - np.asarray(model.passage(["Short one.", "Another one."]))).max() < 1e-5  # type: ignore[attr-defined]
