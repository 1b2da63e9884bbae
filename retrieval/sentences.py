"""Split text into sentences with exact character offsets into the original text.

Rules of this module:

- Every ``Sentence`` satisfies ``original[s.start:s.end] == s.text``; ``text`` has no surrounding
  whitespace and is never empty. Sentences are in order and do not overlap, and together they cover
  every non-whitespace character of the input, so nothing is lost when a caller cuts at them.
- A line break ends a sentence when the line ends without punctuation (list items, headings, table
  rows), in every language. The one exception is a line wrapped mid-sentence: when the next line
  starts with a lowercase letter, or with a digit after a line ending in a lowercase letter or comma
  (but not a numbered list item), the break is taken as a soft wrap and the sentence goes on.
- English and any other language: pysbd. Russian: razdel, plus a merge for abbreviations it cut.
  Japanese: a rule on 。！？ (and ASCII . ! ? before whitespace), keeping closing brackets and quotes
  with the sentence they close.

Splitter objects are built on first use, one per language and thread (pysbd keeps per-call state on
the segmenter, so one instance must not be shared between threads).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pysbd
import razdel

__all__ = ["Sentence", "split_sentences"]


@dataclass(frozen=True, slots=True)
class Sentence:
    """One sentence: ``original_text[start:end] == text``; ``text`` is stripped and never empty."""

    start: int
    end: int
    text: str


def split_sentences(text: str, language: str) -> list[Sentence]:
    """Split ``text`` into sentences, using the rules for ``language`` ("en", "ru", "ja"; others as "en")."""
    boundaries_in = _BOUNDARY_FINDERS.get(language, _english_boundaries)
    sentences: list[Sentence] = []
    for run_start, run_end in _line_runs(text):
        # Soft-wrapped line breaks inside a run become spaces (same length, so offsets hold):
        # the splitters would otherwise treat them as sentence ends.
        flat = text[run_start:run_end].translate(_FLATTEN)
        cuts = [0, *boundaries_in(flat), len(flat)]
        for piece_start, piece_end in zip(cuts, cuts[1:]):
            sentence = _stripped(text, run_start + piece_start, run_start + piece_end)
            if sentence is not None:
                sentences.append(sentence)
    return sentences


_FLATTEN = str.maketrans({"\n": " ", "\r": " "})


def _stripped(text: str, start: int, end: int) -> Sentence | None:
    """The sentence ``text[start:end]`` without its surrounding whitespace, or None if it is blank."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    lead = len(piece) - len(piece.lstrip())
    return Sentence(start + lead, start + lead + len(stripped), stripped)


# --- line breaks -------------------------------------------------------------------------------

_NUMBERED_ITEM = re.compile(r"\d+[.)]\s")


def _is_soft_wrap(line: str, next_line: str) -> bool:
    """True when the break between ``line`` and ``next_line`` only wraps a sentence that goes on."""
    current = line.rstrip()
    following = next_line.lstrip()
    if not current or not following:
        return False
    first = following[0]
    if first.islower():
        return True
    if first.isdigit() and not _NUMBERED_ITEM.match(following):
        return current[-1].islower() or current[-1] == ","
    return False


def _line_runs(text: str) -> list[tuple[int, int]]:
    """Spans of ``text`` that may hold sentences: lines, with soft-wrapped lines kept together."""
    runs: list[tuple[int, int]] = []
    lines = text.split("\n")
    run_start = 0
    position = 0
    for index, line in enumerate(lines):
        line_end = position + len(line)
        last = index == len(lines) - 1
        if last or not _is_soft_wrap(line, lines[index + 1]):
            runs.append((run_start, line_end))
            run_start = line_end + 1
        position = line_end + 1
    return runs


# --- English (and the default): pysbd ----------------------------------------------------------

_local = threading.local()


def _pysbd_segmenter(language: str) -> pysbd.Segmenter:
    cache: dict[str, pysbd.Segmenter] | None = getattr(_local, "segmenters", None)
    if cache is None:
        cache = _local.segmenters = {}
    segmenter = cache.get(language)
    if segmenter is None:
        segmenter = pysbd.Segmenter(language=language, clean=False, char_span=True)
        cache[language] = segmenter
    return segmenter


# pysbd's span search is quadratic in the length of its input (each sentence is searched for from
# the start of the text), so long runs are fed to it in windows of about this many characters.
_PYSBD_WINDOW = 5_000


def _english_boundaries(text: str) -> list[int]:
    """Sentence end offsets in ``text`` according to pysbd, read in windows of ``_PYSBD_WINDOW``.

    In a window that does not reach the end of the text, the last sentence may be cut by the
    window, so its end is not taken; the next window starts at the end of the sentence before it.
    A window with no complete sentence (one sentence longer than the window) adds no boundary.
    """
    boundaries: list[int] = []
    start = 0
    while start < len(text):
        stop = min(len(text), start + _PYSBD_WINDOW)
        ends = [start + end for end in _pysbd_ends(text[start:stop])]
        if stop == len(text):
            boundaries.extend(ends)
            break
        complete = ends[:-1]
        boundaries.extend(complete)
        start = complete[-1] if complete else stop
    return boundaries


def _pysbd_ends(text: str) -> list[int]:
    """Sentence end offsets in ``text`` according to pysbd.

    pysbd's own spans come from searching each sentence's text in the whole input again, so a
    sentence that repeats earlier text can be placed at the earlier occurrence, and a sentence it
    cannot find is dropped. We only take the sentence texts from it and find them ourselves, in
    order, from the end of the previous one; a sentence we cannot find just merges with a neighbour.
    """
    ends: list[int] = []
    cursor = 0
    for span in _pysbd_segmenter("en").segment(text):
        needle = span.sent.strip()
        if not needle:
            continue
        found = text.find(needle, cursor)
        if found < 0:
            continue
        cursor = found + len(needle)
        ends.append(cursor)
    return ends


# --- Russian: razdel, plus a merge for abbreviations -------------------------------------------

# Abbreviations that are followed by a number or a lowercase word inside a sentence ("п. 3.2",
# "стр. 5", "разд. 4", "т. е. перевод"). razdel knows most of them; the list catches the rest.
_RU_ABBREVIATION_END = re.compile(
    r"(?:^|[\s(«\"„])(?:т\.\s?[едп]|и\s?др|пп?|стр|с|гг?|ст|ч|рис|табл|прил|гл|разд|см|напр|ул|д|"
    r"тел|руб|коп|тыс|млн|млрд|им|проф|доц|акад|вкл|искл|мин|макс|ок|пр|кв|корп|оф|эт)\.$",
    re.IGNORECASE,
)


def _russian_boundaries(text: str) -> list[int]:
    """Sentence end offsets in ``text`` according to razdel, with abbreviation cuts undone."""
    spans = [(s.start, s.stop) for s in razdel.sentenize(text)]
    merged: list[tuple[int, int]] = []
    for start, stop in spans:
        if merged and _continues_russian(text[merged[-1][0] : merged[-1][1]], text[start:stop]):
            merged[-1] = (merged[-1][0], stop)
        else:
            merged.append((start, stop))
    return [stop for _, stop in merged]


def _continues_russian(previous: str, following: str) -> bool:
    """True when ``following`` is the rest of ``previous``, cut after an abbreviation."""
    first = following.lstrip()[:1]
    if not first:
        return False
    # A Russian sentence never starts with a lowercase letter, so such a cut is always wrong.
    if first.islower():
        return True
    return first.isdigit() and _RU_ABBREVIATION_END.search(previous.rstrip()) is not None


# --- Japanese: punctuation rule ----------------------------------------------------------------

_JA_CLOSERS = "」』）)”’】〕〉》]\"'"
# A quoted sentence followed by と/って (「やめて。」と言った) is reported speech inside a longer
# sentence, not its end. The atomic group stops the regex from backing off to split before 」.
_JA_SENTENCE_END = re.compile(
    rf"(?>[。！？]+[!?！？]*[{re.escape(_JA_CLOSERS)}]*)(?!と|って)"
    rf"|[.!?]+[{re.escape(_JA_CLOSERS)}]*(?=\s|$)"
)


def _japanese_boundaries(text: str) -> list[int]:
    """Sentence end offsets in ``text``: after 。！？ (or . ! ? before whitespace) and any closers."""
    return [match.end() for match in _JA_SENTENCE_END.finditer(text)]


_BOUNDARY_FINDERS: dict[str, Callable[[str], list[int]]] = {
    "en": _english_boundaries,
    "ru": _russian_boundaries,
    "ja": _japanese_boundaries,
}
