"""Guess the language of a text: ``"ja"``, ``"ru"`` or ``"en"``.

Only the three languages the sentence splitter knows are told apart, by script alone:

- any hiragana or katakana, or CJK ideographs making up most of the letters -> ``"ja"``;
- Cyrillic making up a meaningful share of the letters -> ``"ru"``;
- anything else (including text with no letters at all) -> ``"en"``.

This runs per chunk and per query, so it is a few regular-expression scans and no model.
"""

from __future__ import annotations

import re

__all__ = ["detect_language"]

# Hiragana, katakana (incl. the prolonged sound mark), katakana phonetic extensions, half-width katakana.
_KANA = re.compile(r"[\u3040-\u309f\u30a0-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
# CJK unified ideographs, extension A, compatibility ideographs.
_IDEOGRAPH = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_CYRILLIC = re.compile(r"[\u0400-\u04ff]")
# A letter in any script: a word character that is neither a digit nor an underscore.
_LETTER = re.compile(r"[^\W\d_]")

# Russian support text is full of Latin product names and codes ("Slack", "API", "SSO"), so a
# Cyrillic share well under half still means Russian; a stray Russian word in an English paragraph does not.
_CYRILLIC_SHARE = 0.3
_IDEOGRAPH_SHARE = 0.5


def detect_language(text: str) -> str:
    """Return ``"ja"``, ``"ru"`` or ``"en"`` for ``text`` (``"en"`` when there is nothing to go on)."""
    if _KANA.search(text):
        return "ja"
    letters = len(_LETTER.findall(text))
    if letters == 0:
        return "en"
    if len(_IDEOGRAPH.findall(text)) / letters > _IDEOGRAPH_SHARE:
        return "ja"
    if len(_CYRILLIC.findall(text)) / letters >= _CYRILLIC_SHARE:
        return "ru"
    return "en"
