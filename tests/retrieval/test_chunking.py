"""Chunks follow the document's headings and paragraphs, and their text is always verbatim from it."""

from __future__ import annotations

import pytest

from retrieval.chunking import ChunkingConfig, chunk_document
from retrieval.chunks import Chunk, make_chunk_id
from retrieval.documents import Block, BlockKind, Document


def H(level: int, text: str) -> Block:
    return Block(BlockKind.HEADING, text, level=level)


def P(text: str, page: int | None = None) -> Block:
    return Block(BlockKind.PARAGRAPH, text, page=page)


def make_doc(*blocks: Block, **fields: object) -> Document:
    defaults: dict[str, object] = {"document_id": "doc.md", "title": "Doc", "source": "doc.md"}
    return Document(blocks=blocks, **(defaults | fields))  # type: ignore[arg-type]


def sentences(count: int, word: str = "Refunds", length: int = 60) -> str:
    """``count`` distinct English sentences of about ``length`` characters each."""
    return " ".join(f"{word} rule {i:03d} " + "x" * (length - len(word) - 15) + "." for i in range(count))


SMALL = ChunkingConfig(max_chars=200, min_chars=50, hard_max_chars=400)

# Documents in the three languages, with headings, lists, long and short paragraphs, pages.
FIXTURES: dict[str, Document] = {
    "en-handbook": make_doc(
        H(1, "Billing"),
        P("Invoices are sent on the first business day of each month."),
        P("Payment is due within 30 days."),
        H(2, "Refunds"),
        P("To request a refund:"),
        P("- Open Settings\n- Click Billing\n- Press Request refund"),
        P(sentences(12)),
        H(2, "Chargebacks"),
        P("We contest every chargeback. " * 30),
        H(1, "Security"),
        P("Passwords are hashed with Argon2id."),
    ),
    "ja-manual": make_doc(
        H(1, "請求"),
        P("請求書は毎月第1営業日に送付されます。お支払いは30日以内にお願いします。"),
        H(2, "返金"),
        P("返金の手順は次のとおりです："),
        P("1. 設定を開く\n2. 請求をクリック\n3. 返金を申請"),
        P("".join(f"返金規則{i}番は「重要。」と記載されています。" for i in range(40))),
        H(2, "長文"),
        P("あ" * 900),  # one "sentence" longer than hard_max_chars with no whitespace at all
    ),
    "ru-reglament": make_doc(
        H(1, "Оплата"),
        P("Счёт выставляется в первый рабочий день месяца, т. е. 1-го числа."),
        P("Оплата, т. е. перевод, должна поступить в течение 30 дн. с даты счёта."),
        H(2, "Возврат"),
        P(" ".join(f"Согласно п. {i}.2 договора возврат, и т. д., занимает до {i} дней." for i in range(1, 25))),
        H(2, "Контакты"),
        P("Пишите на стр. 5 регламента, г. Москва."),
        section="Регламент",
    ),
    "en-pdf-pages": make_doc(
        P("Page one intro.", page=1),
        P(sentences(6), page=1),
        P("Page two starts here.", page=2),
        P("word " * 200, page=2),  # one long "sentence" with no punctuation at all
        P("Short closing line on page three.", page=3),
        title="Handbook PDF",
    ),
    "blank-blocks": make_doc(
        P(""), H(1, "Only"), P("   "), P("Real text here."), P("\n"), P("More real text."), H(2, "  ")
    ),
}


@pytest.mark.parametrize("config", [ChunkingConfig(), SMALL], ids=["default", "small"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_chunk_is_verbatim_from_the_document(name: str, config: ChunkingConfig) -> None:
    """The promise the bot makes: a chunk's text is found, character for character, in the document."""
    doc = FIXTURES[name]
    chunks = chunk_document(doc, config)
    assert chunks
    for chunk in chunks:
        assert chunk.text in doc.text
        assert chunk.text == chunk.text.strip() and chunk.text


@pytest.mark.parametrize("config", [ChunkingConfig(), SMALL], ids=["default", "small"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_no_paragraph_text_is_lost(name: str, config: ChunkingConfig) -> None:
    """Every word of every paragraph is in some chunk, in reading order; headings are in none."""
    doc = FIXTURES[name]
    chunks = chunk_document(doc, config)
    joined = " ".join(chunk.text for chunk in chunks).split()
    expected = " ".join(b.text for b in doc.blocks if b.kind is BlockKind.PARAGRAPH).split()
    # Pieces cut inside a whitespace-free run are joined here with a space, so compare without spaces.
    assert "".join(joined) == "".join(expected)


@pytest.mark.parametrize("config", [ChunkingConfig(), SMALL], ids=["default", "small"])
@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_chunks_stay_within_hard_max_and_ids_are_ordinal(name: str, config: ChunkingConfig) -> None:
    doc = FIXTURES[name]
    chunks = chunk_document(doc, config)
    content_hash = doc.content_hash()
    assert [c.ordinal for c in chunks] == list(range(len(chunks)))
    assert [c.chunk_id for c in chunks] == [make_chunk_id(doc.document_id, content_hash, i) for i in range(len(chunks))]
    assert all(c.content_hash == content_hash for c in chunks)
    assert all(len(c.text) <= config.hard_max_chars for c in chunks)


def _sections(chunks: list[Chunk]) -> list[tuple[str | None, str]]:
    return [(c.section, c.text) for c in chunks]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            make_doc(H(1, "Billing"), P("Intro."), H(2, "Refunds"), P("Ask support."), H(3, "Cards"), P("Five days.")),
            [("Billing", "Intro."), ("Billing > Refunds", "Ask support."), ("Billing > Refunds > Cards", "Five days.")],
            id="nested headings build the path",
        ),
        pytest.param(
            make_doc(H(1, "Billing"), H(2, "Refunds"), P("A."), H(2, "Invoices"), P("B."), H(1, "Security"), P("C.")),
            [("Billing > Refunds", "A."), ("Billing > Invoices", "B."), ("Security", "C.")],
            id="a sibling or higher heading closes the open ones",
        ),
        pytest.param(
            make_doc(H(2, "Refunds"), P("A."), H(1, "Top"), P("B.")),
            [("Refunds", "A."), ("Top", "B.")],
            id="a document may start below level 1",
        ),
        pytest.param(
            make_doc(P("No headings at all."), P("Second paragraph.")),
            [(None, "No headings at all.\n\nSecond paragraph.")],
            id="no heading and no source section: None",
        ),
        pytest.param(
            make_doc(P("Intro."), H(1, "Refunds"), P("A."), section="Handbook"),
            [("Handbook", "Intro."), ("Handbook > Refunds", "A.")],
            id="the source's section prefixes the heading path",
        ),
        pytest.param(
            make_doc(H(1, "Оплата"), P("Счёт."), H(2, "Возврат"), P("Деньги.")),
            [("Оплата", "Счёт."), ("Оплата > Возврат", "Деньги.")],
            id="Russian headings",
        ),
        pytest.param(
            make_doc(H(1, "請求"), P("請求書です。"), H(2, "返金"), P("返金です。")),
            [("請求", "請求書です。"), ("請求 > 返金", "返金です。")],
            id="Japanese headings",
        ),
        pytest.param(
            make_doc(H(1, "Empty section"), H(1, "Full"), P("Text.")),
            [("Full", "Text.")],
            id="a heading with nothing under it makes no chunk",
        ),
    ],
)
def test_heading_path_becomes_section_and_is_not_in_the_text(
    doc: Document, expected: list[tuple[str | None, str]]
) -> None:
    assert _sections(chunk_document(doc, ChunkingConfig())) == expected


def test_short_paragraphs_under_one_heading_merge_up_to_max_chars() -> None:
    paragraphs = [f"Paragraph {i} " + "y" * 80 + "." for i in range(5)]  # ~94 chars each
    doc = make_doc(H(1, "Refunds"), *(P(p) for p in paragraphs))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=200, min_chars=10, hard_max_chars=400))
    assert [c.text for c in chunks] == [
        paragraphs[0] + "\n\n" + paragraphs[1],
        paragraphs[2] + "\n\n" + paragraphs[3],
        paragraphs[4],
    ]


def test_long_paragraph_is_cut_only_between_sentences() -> None:
    text = sentences(20)  # 20 sentences of ~60 characters
    doc = make_doc(P(text))
    chunks = chunk_document(doc, SMALL)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.endswith(".") and chunk.text.startswith("Refunds rule")
        assert len(chunk.text) <= SMALL.max_chars
    assert " ".join(c.text for c in chunks) == text


@pytest.mark.parametrize(
    ("text", "language", "end"),
    [
        ("".join(f"返金規則{i}番は「重要。」と記載されています。" for i in range(40)), "ja", "。"),
        (" ".join(f"Согласно п. {i}.2 договора возврат, т. е. отмена, занимает {i} дн." for i in range(30)), "ru", "."),
    ],
)
def test_long_paragraph_is_cut_between_sentences_in_japanese_and_russian(text: str, language: str, end: str) -> None:
    doc = make_doc(P(text), language=language)
    chunks = chunk_document(doc, SMALL)
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.text.endswith(end)
        assert chunk.language == language
    if language == "ru":  # never cut inside an abbreviation: every chunk starts a clause
        assert all(chunk.text.startswith("Согласно п.") for chunk in chunks)


def test_a_sentence_over_hard_max_is_cut_at_whitespace() -> None:
    words = " ".join(f"w{i:04d}" for i in range(200))  # 1199 characters, no sentence end
    doc = make_doc(P(words))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=100, min_chars=0, hard_max_chars=300))
    assert len(chunks) > 1
    for chunk in chunks:
        assert len(chunk.text) <= 100
        assert all(len(word) == 5 for word in chunk.text.split(" "))  # no word cut in half
    assert " ".join(c.text for c in chunks) == words


def test_a_whitespace_free_sentence_over_hard_max_is_cut_at_max_chars() -> None:
    doc = make_doc(P("あ" * 250), language="ja")
    chunks = chunk_document(doc, ChunkingConfig(max_chars=100, min_chars=0, hard_max_chars=200))
    assert [len(c.text) for c in chunks] == [100, 100, 50]


def test_a_sentence_between_max_and_hard_max_is_kept_whole() -> None:
    sentence = "A long sentence " + "z" * 250 + "."
    doc = make_doc(P("Short first one. " + sentence))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=100, min_chars=0, hard_max_chars=400))
    assert [c.text for c in chunks] == ["Short first one.", sentence]


@pytest.mark.parametrize(
    ("intro", "language"),
    [("To get a refund, do all of the following:", "en"), ("返金の手順は次のとおりです：", "ja"), ("Порядок возврата:", "ru")],
)
def test_a_paragraph_ending_with_colon_stays_with_what_follows(intro: str, language: str) -> None:
    """A condition is never separated from its rule, even when that pushes past max_chars."""
    filler = P("Earlier paragraph that fills the chunk. " * 3)
    steps = "\n".join(f"{i}. Step number {i} of the procedure." for i in range(1, 5))
    doc = make_doc(filler, P(intro), P(steps), language=language)
    chunks = chunk_document(doc, ChunkingConfig(max_chars=200, min_chars=0, hard_max_chars=400))
    assert any(intro + "\n\n" + steps in chunk.text for chunk in chunks)


def test_colon_glue_gives_way_at_hard_max() -> None:
    doc = make_doc(P("Rules:"), P("word " * 100))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=100, min_chars=0, hard_max_chars=150))
    assert all(len(c.text) <= 150 for c in chunks)
    assert chunks[0].text.startswith("Rules:\n\nword")


def test_a_short_trailing_piece_joins_the_previous_chunk() -> None:
    big = "B" * 180 + "."
    doc = make_doc(H(1, "Refunds"), P(big), P("Tail."), H(1, "Other"), P("Alone."))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=185, min_chars=50, hard_max_chars=400))
    assert _sections(chunks) == [("Refunds", big + "\n\nTail."), ("Other", "Alone.")]


def test_a_short_piece_is_not_merged_past_hard_max() -> None:
    big = "B" * 180 + "."
    doc = make_doc(P(big), P("Tail."))
    chunks = chunk_document(doc, ChunkingConfig(max_chars=181, min_chars=50, hard_max_chars=185))
    assert [c.text for c in chunks] == [big, "Tail."]


def test_page_is_the_page_of_the_chunks_first_block() -> None:
    doc = make_doc(P("One.", page=1), P("Two.", page=2), P("Three.", page=2))
    split = chunk_document(doc, ChunkingConfig())
    assert [(c.page, c.text) for c in split] == [(1, "One."), (2, "Two.\n\nThree.")]
    together = chunk_document(doc, ChunkingConfig(split_at_page_breaks=False))
    assert [(c.page, c.text) for c in together] == [(1, "One.\n\nTwo.\n\nThree.")]


def test_page_falls_back_to_the_documents_page() -> None:
    doc = make_doc(P("From a JSONL line."), page=7)
    assert [c.page for c in chunk_document(doc, ChunkingConfig())] == [7]
    assert [c.page for c in chunk_document(make_doc(P("No page.")), ChunkingConfig())] == [None]


def test_one_document_has_one_language() -> None:
    """An English sentence inside a Russian document is still indexed as Russian."""
    doc = make_doc(
        H(1, "Оплата"), P("Счёт выставляется первого числа каждого месяца."), H(1, "API"), P("Use the REST API.")
    )
    assert {c.language for c in chunk_document(doc, ChunkingConfig())} == {"ru"}
    given = make_doc(P("Use the REST API."), language="ja")
    assert [c.language for c in chunk_document(given, ChunkingConfig())] == ["ja"]


def test_chunks_carry_the_documents_metadata() -> None:
    doc = make_doc(
        H(1, "Refunds"),
        P("Ask support."),
        document_id="billing/refunds.md",
        title="Refund policy",
        url="https://wiki.example.com/refunds",
        version="3",
        updated_at="2024-05-01",
        visibility=("C1", "C2"),
    )
    [chunk] = chunk_document(doc, ChunkingConfig())
    assert chunk == Chunk(
        chunk_id=make_chunk_id("billing/refunds.md", doc.content_hash(), 0),
        document_id="billing/refunds.md",
        version="3",
        content_hash=doc.content_hash(),
        ordinal=0,
        title="Refund policy",
        section="Refunds",
        page=None,
        url="https://wiki.example.com/refunds",
        updated_at="2024-05-01",
        visibility=("C1", "C2"),
        language="en",
        text="Ask support.",
    )


def test_chunk_ids_are_stable_and_change_with_the_content() -> None:
    first = [c.chunk_id for c in chunk_document(make_doc(P("Same.")), ChunkingConfig())]
    again = [c.chunk_id for c in chunk_document(make_doc(P("Same.")), ChunkingConfig())]
    edited = [c.chunk_id for c in chunk_document(make_doc(P("Changed.")), ChunkingConfig())]
    assert first == again
    assert first != edited


def test_a_document_without_paragraphs_has_no_chunks() -> None:
    assert chunk_document(make_doc(H(1, "Only a heading")), ChunkingConfig()) == []
    assert chunk_document(make_doc(), ChunkingConfig()) == []


@pytest.mark.parametrize(
    "sizes",
    [
        {"max_chars": 100, "min_chars": 200, "hard_max_chars": 400},
        {"max_chars": 500, "min_chars": 10, "hard_max_chars": 400},
        {"max_chars": 0, "min_chars": 0, "hard_max_chars": 0},
        {"max_chars": 100, "min_chars": -1, "hard_max_chars": 400},
    ],
)
def test_inconsistent_sizes_are_refused(sizes: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="min_chars <= max_chars <= hard_max_chars"):
        ChunkingConfig(**sizes)
