"""A topic's label: the few terms that tell its questions apart from every other no-support question. Pure.

Rules:

- Terms in English and Russian are words grouped by their Snowball stem (`retrieval.stemming`, the stems
  BM25 searches with), so "refund", "refunds" and "refunded" are one term, and «возврат», «возврата» another.
  The label shows the form the topic's questions used most (ties: the alphabetically first).
- Japanese has no spaces: a term is a run of kanji, of katakana or of Latin letters and digits (返金, ポリシー,
  SSO); hiragana runs are mostly particles and endings and are left out. Russian and English words inside a
  Japanese question are terms too.
- Question words and function words (a short list per language) and one-character terms are never terms.
- A term's score in a topic: the share of the topic's questions that use it × log(1 + all questions / the
  questions anywhere that use it) — common in the topic, rare elsewhere. Highest first; ties by the term.
- The label is the top `size` terms joined with " · "; a topic whose questions have no term at all is
  labelled by its first question, cut short.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.language import detect_language
from retrieval.stemming import stem_text

LABEL_TERMS = 3
LABEL_FALLBACK_CHARS = 60

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_JAPANESE_RUN = re.compile(
    r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff々]+"  # kanji (and the repetition mark)
    r"|[\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]+"  # katakana (and the prolonged sound mark)
    r"|[A-Za-z0-9\uff21-\uff3a\uff41-\uff5a\uff10-\uff19\u0400-\u04ff]+"  # Latin, full-width Latin, digits, Cyrillic
)
STOP_WORDS = frozenset(
    # English: question words, auxiliaries, pronouns, prepositions.
    "a all an and any are as at be been but by can could did do does for from get had has have how i if in is it its "
    "me my of on or our should so than that the their them then there these they this to was we were what when "
    "where which who whom whose why will with would you your about into also not no yes there".split()
    # Russian: question words, pronouns, prepositions, particles.
    + "а без бы был была были было в вам вас во вот все всё где да для до его ее её если есть ещё еще же за и из "
      "или им их к как какая какие какой ко когда кто ли либо меня мне можно мой мы на нам нас не нет ни но ну о "
      "об от по под при про с со так там то тоже только у уже чем что чтобы эта эти это этот я сколько почему "
      "зачем куда откуда ли нужно надо".split()
    # Japanese (kanji and katakana runs that ask rather than name).
    + "何 誰 何故 何処 何時 何年 何人 何月 何日 何歳 何回 何番目 何種類 方法 場合 理由 的".split()
)


@dataclass(frozen=True, slots=True)
class Term:
    """One term of a question: `key` is what is counted (a stem, or the Japanese run), `shown` what is printed."""

    key: str
    shown: str


def question_terms(text: str, language: str | None = None) -> list[Term]:
    """The terms of one question, in order, stop words and one-character terms left out."""
    language = language or detect_language(text)
    words = _JAPANESE_RUN.findall(text) if language == "ja" else _WORD.findall(text)
    terms: list[Term] = []
    for word in words:
        shown = word.lower().replace("ё", "е")
        if len(shown) < 2 or shown in STOP_WORDS or shown.isdigit():
            continue
        key = shown if language == "ja" and not shown.isascii() else stem_text(shown, language)
        if key:
            terms.append(Term(key, shown))
    return terms


def topic_label(topic: Sequence[Sequence[Term]], everywhere: Sequence[Sequence[Term]], *,
                size: int = LABEL_TERMS, fallback: str = "") -> str:
    """The label of a topic (its questions' terms) among all the questions' terms (`everywhere`, topic included)."""
    ranked = telling_terms(topic, everywhere)[:size]
    if not ranked:
        return fallback[:LABEL_FALLBACK_CHARS]
    return " · ".join(ranked)


def telling_terms(topic: Sequence[Sequence[Term]], everywhere: Sequence[Sequence[Term]]) -> list[str]:
    """The topic's terms, most telling first, each in the form its questions used most."""
    if not topic:
        return []
    in_topic = Counter(key for terms in topic for key in {term.key for term in terms})
    anywhere = Counter(key for terms in everywhere for key in {term.key for term in terms})
    total = max(len(everywhere), 1)
    forms: dict[str, Counter[str]] = {}
    for terms in topic:
        for term in terms:
            forms.setdefault(term.key, Counter())[term.shown] += 1

    def score(key: str) -> float:
        return in_topic[key] / len(topic) * math.log(1 + total / max(anywhere[key], in_topic[key]))

    keys = sorted(in_topic, key=lambda key: (-score(key), key))
    return [min(forms[key].items(), key=lambda item: (-item[1], item[0]))[0] for key in keys]
