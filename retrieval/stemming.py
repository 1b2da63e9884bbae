"""Words cut to their Snowball stems, for BM25 in English and Russian.

Weaviate's ``word`` tokenization does no stemming, so "refunds" misses "refund" and «вторую линию» misses
«вторая линия» — a large loss in Russian, whose nouns and adjectives change their endings with case.
The chunk's text is stored stemmed in its own field (``body_stem``, whitespace tokenization) and the
query is stemmed the same way. Japanese is tokenized by Weaviate (``body_ja``) and is not stemmed here.
"""

from __future__ import annotations

import re
import threading

import Stemmer

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_ALGORITHMS = {"en": "english", "ru": "russian"}
_local = threading.local()  # PyStemmer objects keep a cache and are not thread-safe


def _stemmer(language: str) -> Stemmer.Stemmer:
    cache = getattr(_local, "stemmers", None)
    if cache is None:
        cache = _local.stemmers = {}
    if language not in cache:
        cache[language] = Stemmer.Stemmer(_ALGORITHMS[language])
    return cache[language]


def stem_text(text: str, language: str) -> str:
    """``text`` as lower-cased stems separated by spaces (English rules for languages without a stemmer).

    Cyrillic words go through the Russian stemmer and the rest through the English one, so product names
    in Russian text and Russian words in English text are both cut right.
    """
    words = _WORD.findall(text.lower().replace("ё", "е"))
    english, russian = _stemmer("en"), _stemmer("ru")
    return " ".join(russian.stemWord(w) if _is_cyrillic(w) else english.stemWord(w) for w in words)


def _is_cyrillic(word: str) -> bool:
    return "\u0400" <= word[0] <= "\u04ff"
