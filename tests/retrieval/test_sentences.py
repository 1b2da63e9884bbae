"""Sentences come out whole, in order, with offsets that point at exactly their text in the input."""

from __future__ import annotations

import threading

import pytest

from retrieval.sentences import Sentence, split_sentences


def _texts(text: str, language: str) -> list[str]:
    return [sentence.text for sentence in split_sentences(text, language)]


def _assert_invariants(text: str, sentences: list[Sentence]) -> None:
    """Each sentence is its own slice, stripped, non-empty, in order, and no text is lost."""
    previous_end = 0
    for sentence in sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip() and sentence.text
        assert sentence.start >= previous_end
        assert not text[previous_end : sentence.start].strip(), "text between sentences was lost"
        previous_end = sentence.end
    assert not text[previous_end:].strip(), "text after the last sentence was lost"


ENGLISH = [
    (
        "Refunds take 14 days. Contact support if it takes longer.",
        ["Refunds take 14 days.", "Contact support if it takes longer."],
    ),
    (
        "Mr. Smith paid $3.50 for it, e.g. by card. Really? Yes!",
        ["Mr. Smith paid $3.50 for it, e.g. by card.", "Really?", "Yes!"],
    ),
    ("See section 3.2 of the U.S. policy. Done.", ["See section 3.2 of the U.S. policy.", "Done."]),
    ("Hi. Hi. Hi.", ["Hi.", "Hi.", "Hi."]),  # pysbd's own spans can misplace repeated sentences
    ("He said \"Stop.\" Then he left.", ["He said \"Stop.\"", "Then he left."]),
    ("  Leading and trailing spaces.  ", ["Leading and trailing spaces."]),
    ("No final punctuation", ["No final punctuation"]),
    # A line ending without punctuation ends a sentence: headings and list items stand alone.
    ("Refunds\nWe refund within 14 days.", ["Refunds", "We refund within 14 days."]),
    ("- Open Settings\n- Click Billing\n- Press Refund", ["- Open Settings", "- Click Billing", "- Press Refund"]),
    ("| plan | price |\n| Pro | $10 |", ["| plan | price |", "| Pro | $10 |"]),
    # ...but a line wrapped mid-sentence goes on (next line lowercase, or a number after a word).
    (
        "This sentence is wrapped\nover two lines. Next one.",
        ["This sentence is wrapped\nover two lines.", "Next one."],
    ),
    ("Refunds are issued within\n14 days of the request.", ["Refunds are issued within\n14 days of the request."]),
    ("Steps:\n1. Open Settings.\n2. Click Billing.", ["Steps:", "1. Open Settings.", "2. Click Billing."]),
    ("One.\n\nTwo.", ["One.", "Two."]),
    ("", []),
    ("   \n\n  ", []),
]

RUSSIAN = [
    ("Возврат занимает 14 дней. Напишите в поддержку.", ["Возврат занимает 14 дней.", "Напишите в поддержку."]),
    ("Оплата, т. е. перевод, делается сразу. Далее.", ["Оплата, т. е. перевод, делается сразу.", "Далее."]),
    ("Счета, акты и т. д. хранятся в архиве. Далее.", ["Счета, акты и т. д. хранятся в архиве.", "Далее."]),
    ("Бумаги, акты и т. д. Следующее.", ["Бумаги, акты и т. д.", "Следующее."]),  # "и т. д." can end a sentence
    ("Согласно п. 3.2 договора срок 5 дней. Да.", ["Согласно п. 3.2 договора срок 5 дней.", "Да."]),
    ("В 2020 г. офис переехал. Да.", ["В 2020 г. офис переехал.", "Да."]),
    ("Офис в г. Москва открыт. Да.", ["Офис в г. Москва открыт.", "Да."]),
    ("Итог на стр. 5 отчёта. Конец.", ["Итог на стр. 5 отчёта.", "Конец."]),
    ("Подробности в разд. 4 инструкции. Да.", ["Подробности в разд. 4 инструкции.", "Да."]),  # razdel cuts this
    ("См. рис. 3 и табл. 2 ниже. Далее.", ["См. рис. 3 и табл. 2 ниже.", "Далее."]),
    ("Он сказал: «Стоп.» Потом ушёл.", ["Он сказал: «Стоп.»", "Потом ушёл."]),
    ("Сумма 100 руб. Оплата сразу.", ["Сумма 100 руб.", "Оплата сразу."]),
    ("Возврат\nДеньги вернутся за 14 дней.", ["Возврат", "Деньги вернутся за 14 дней."]),
    ("Деньги вернутся\nв течение 14 дней.", ["Деньги вернутся\nв течение 14 дней."]),
]

JAPANESE = [
    ("返金は14日以内に行います。詳細はサポートへ。", ["返金は14日以内に行います。", "詳細はサポートへ。"]),
    ("本当ですか？はい！わかりました", ["本当ですか？", "はい！", "わかりました"]),
    ("「規約を読んでください。」次へ進みます。", ["「規約を読んでください。」", "次へ進みます。"]),
    ("彼は「やめて。」と言った。次です。", ["彼は「やめて。」と言った。", "次です。"]),  # quoted speech goes on
    ("注意（重要。）次へ。", ["注意（重要。）", "次へ。"]),
    ("本当？！すごい。", ["本当？！", "すごい。"]),
    ("Slack を開きます. Then click OK. 完了。", ["Slack を開きます.", "Then click OK.", "完了。"]),
    ("バージョン2.5を使います。", ["バージョン2.5を使います。"]),  # ASCII '.' inside a number is not an end
    ("返金について\n返金は14日以内です。", ["返金について", "返金は14日以内です。"]),
    ("- 設定を開く\n- 請求をクリック", ["- 設定を開く", "- 請求をクリック"]),
]


@pytest.mark.parametrize(("text", "expected"), ENGLISH)
def test_english_sentences(text: str, expected: list[str]) -> None:
    sentences = split_sentences(text, "en")
    assert [s.text for s in sentences] == expected
    _assert_invariants(text, sentences)


@pytest.mark.parametrize(("text", "expected"), RUSSIAN)
def test_russian_sentences_keep_abbreviations_inside(text: str, expected: list[str]) -> None:
    sentences = split_sentences(text, "ru")
    assert [s.text for s in sentences] == expected
    _assert_invariants(text, sentences)


@pytest.mark.parametrize(("text", "expected"), JAPANESE)
def test_japanese_sentences_keep_closing_brackets(text: str, expected: list[str]) -> None:
    sentences = split_sentences(text, "ja")
    assert [s.text for s in sentences] == expected
    _assert_invariants(text, sentences)


@pytest.mark.parametrize(
    ("text", "language", "expected"),
    [
        ("  Hi there.  Bye.", "en", [Sentence(2, 11, "Hi there."), Sentence(13, 17, "Bye.")]),
        ("A.\n\n  B.", "en", [Sentence(0, 2, "A."), Sentence(6, 8, "B.")]),
        ("Да. Нет.", "ru", [Sentence(0, 3, "Да."), Sentence(4, 8, "Нет.")]),
        ("はい。 いいえ。", "ja", [Sentence(0, 3, "はい。"), Sentence(4, 8, "いいえ。")]),
        ("見出し\n本文です。", "ja", [Sentence(0, 3, "見出し"), Sentence(4, 9, "本文です。")]),
    ],
)
def test_offsets_point_at_the_sentence(text: str, language: str, expected: list[Sentence]) -> None:
    assert split_sentences(text, language) == expected


@pytest.mark.parametrize("language", ["en", "ru", "ja", "de", ""])
def test_no_text_is_lost_on_messy_input(language: str) -> None:
    """Odd spacing, CRLF line ends, repeats and symbols: every character is still in some sentence."""
    text = (
        "Title\r\n\r\n  Step 1.  Step 1.  Step 1.\t\n"
        "Цена 5 руб.   Итого.\n返金。返金。\n"
        "URL: https://example.com/a.b?c=d. Done!!! ??? ... (see above.)\n\n\n"
    )
    _assert_invariants(text, split_sentences(text, language))


@pytest.mark.parametrize("language", ["en", "ru", "ja"])
def test_a_long_paragraph_splits_the_same_all_the_way_through(language: str) -> None:
    """Long input is read in windows internally; no sentence is split or joined at a window's edge."""
    # (No "plan {i}." endings in English: pysbd reads "plan 1. ... plan 2." as an inline numbered list.)
    words = {"en": "Refund rule {i} applies to every plan.", "ru": "Правило {i} действует для тарифа {i}.",
             "ja": "規則{i}は料金プラン{i}に適用されます。"}[language]
    expected = [words.format(i=i) for i in range(1500)]
    text = " ".join(expected)
    assert len(text) > 30_000
    sentences = split_sentences(text, language)
    assert [s.text for s in sentences] == expected
    _assert_invariants(text, sentences)


def test_unknown_language_uses_english_rules() -> None:
    assert _texts("Mr. Smith left. He paid.", "de") == ["Mr. Smith left.", "He paid."]


def test_threads_can_split_at_the_same_time() -> None:
    """The ingest may split in worker threads: each gets the same answer as a single thread."""
    text = " ".join(f"Sentence number {i} is here." for i in range(200))
    expected = split_sentences(text, "en")
    results: list[list[Sentence]] = []

    def work() -> None:
        results.append(split_sentences(text, "en"))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 4
