"""Content terms of a text, per language, for cheap lexical evidence: which of the question's words
does a sentence contain? English and Russian: lower-cased words without stop words, cut to a short
stem (Russian inflects heavily); Japanese: character bigrams of kanji and katakana runs.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_JA_CONTENT = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf\u30a0-\u30ffー0-9０-９A-Za-z]+")

_STOP_EN = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being do does did "
    "have has had i you he she it we they me my your our their this that these those what which who whom "
    "whose when where why how can could would should will shall may might must not no yes so than then "
    "there here about into over under after before up down out off again more most some any each all both "
    "few other such only own same too very just also get got".split()
)
_STOP_RU = frozenset(
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было "
    "вот от меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас "
    "нибудь опять уж вам ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их "
    "чем была сам чтоб без будто чего раз тоже себе под будет ж тогда кто этот того потому этого какой "
    "совсем ним здесь этом один почти мой тем чтобы нее сейчас были куда зачем всех никогда можно при "
    "наконец два об другой хоть после над больше тот через эти нас про всего них какая много разве три "
    "эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя такой им более всегда конечно "
    "всю между сколько каком какие".split()
)


def content_terms(text: str, language: str) -> frozenset[str]:
    if language == "ja":
        terms: set[str] = set()
        for run in _JA_CONTENT.findall(text):
            if len(run) == 1:
                terms.add(run)
            terms.update(run[i : i + 2] for i in range(len(run) - 1))
        return frozenset(terms)
    stop = _STOP_RU if language == "ru" else _STOP_EN
    stem = 5 if language == "ru" else 6
    return frozenset(w[:stem] for w in (m.lower() for m in _WORD.findall(text)) if w not in stop and (len(w) > 2 or w.isdigit()))


def coverage(question_terms: frozenset[str], text: str, language: str) -> float:
    """The share of the question's content terms found in ``text`` (0 when the question has none)."""
    return share(question_terms, content_terms(text, language))


def share(question_terms: frozenset[str], present: frozenset[str]) -> float:
    """``coverage`` over terms already extracted from the text."""
    return len(question_terms & present) / len(question_terms) if question_terms else 0.0
