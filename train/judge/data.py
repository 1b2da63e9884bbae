"""The judge's training pairs, built from ``../shared`` with a fixed seed: (question, sentence) → answers it or not.

Positives: the sentence of a question's paragraph that holds its answer (SQuAD 1.1 train, JaQuAD train, and the
FIT halves of the shared XQuAD en/ru and SQuAD 2.0 sets — the halves ``bench.answers`` fits on, never the halves it
reports). Negatives that teach the hard case — a sentence *about* the question that does not answer it:
- the other sentence of the gold paragraph with most of the question's words;
- with ``easy`` (``--easy-negatives``, the shipped recipe's default): one easy negative per question too, any
  other sentence of the gold paragraph or a sentence of another article (without them every negative is about the
  question, and a sentence about nothing in it is a case the judge never sees: it rated an unrelated sentence above
  the answer. Term overlap itself is not learned as a sign against: positives hold 0.56-0.65 of the question's
  terms, these negatives 0.27-0.45);
- the sentences with most of the question's words among other paragraphs of the same article (same names, same
  topic; the "gold removed" case the bench measures, and the one the bot gets wrong most: ``others`` of them,
  ``--other-paragraph``);
- with ``swaps`` (``--swapped-names``; measured, not shipped: docs/benchmarks.md): the question with one of the
  names its answering sentence holds (a number, a capitalised name, a katakana word) swapped for a name of the same
  kind from the article's other paragraphs that its own paragraph never mentions, against that same sentence — the
  entity-swap case of SQuAD 2.0's adversarial questions (a question about something its sentence does not say,
  however close), made from every answerable question instead of the few adversarial ones there are;
- SQuAD 2.0's adversarial unanswerable questions (FIT half): their paragraph's closest sentences;
- unless ``Sizes.nomiracl`` is 0 (``--nomiracl N``; the shipped recipe takes none): NoMIRACL's all-non-relevant
  queries (nine languages, human-judged), their passages' closest sentences. Negatives only, in languages that
  nothing else teaches, they taught a shortcut, not the near miss: the judge learned those nine languages as
  "never answers" (relevant and non-relevant queries alike read 0.002-0.003; docs/benchmarks.md).
A negative whose sentence or previous sentence holds the question's answer text is dropped (it may answer).
"Closest" is by the share of the question's terms a sentence holds, unless a ``Closeness`` is given
(``--mined-by e5``: ``mined.E5Closeness``, the composer's own score, which ranks the QA sets' negatives — the
other-paragraph ones among every other paragraph of the article, as the service's search sees the article).

NoMIRACL as groups (``groups`` > 0, ``--nomiracl-groups``): its labels are a query's, not a sentence's — "one of
these ten passages answers it" or "none does" — and which passage is relevant is not recorded. So each query
(both subsets) gives one *group*: the closest sentence of each of its ``groups`` closest passages, labelled with
the query's label, and the training loss reads the group's highest logit (answer when some candidate answers;
abstain when none does: the near-miss case in nine languages, with its answerable twin, which the negatives alone
never showed: they taught that those languages never answer). Read so in place of the non-relevant queries'
negatives, the groups cost the QA sets' pair-level reading more than they gave (docs/benchmarks.md); ``beside``
(``--nomiracl-groups-beside N``) keeps those negatives and adds groups of only N queries a language and subset; it
lost on FIT too.
"""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from bench.data import EVAL_DATA as EVAL  # where ../shared's sets are: bench.data says, for both
from bench.data import TRAIN_DATA as TRAIN
from bot.answer.lexical import content_terms, share
from retrieval.encoder.judge import Pair
from retrieval.sentences import Sentence, split_sentences


@dataclass(frozen=True, slots=True)
class Example:
    pair: Pair
    label: float  # 1: the candidate answers the question
    language: str
    origin: str  # the set and kind it was built from, e.g. "squad1.1/other-paragraph"
    group: str = ""  # a NoMIRACL group's query id: the label is the group's (its highest logit), not this pair's
    answer: str = ""  # an answering pair's answer text, where its set gives one (``tags.answer_tags``)


@dataclass(frozen=True, slots=True)
class Sizes:
    """How many questions each source contributes (None: all)."""

    squad: int | None = 9000
    jaquad: int | None = 9000
    nomiracl: int | None = 0  # NoMIRACL-more queries a language and subset (0: none; the module says why)
    fit_sets: int | None = None  # per shared FIT half


def _jsonl(path: Path) -> Iterator[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            yield json.loads(line)


@dataclass(frozen=True, slots=True)
class Question:
    id: str
    text: str
    passage: str
    answers: tuple[tuple[str, int], ...]  # (text, start); start -1 where the set gives none
    answerable: bool


def read_qa(folder: Path, prefix: str = "") -> tuple[dict[str, tuple[str, str]], list[Question]]:
    """Passages ``id -> (title, text)`` and questions of a folder in the house format."""
    passages = {p["passage_id"]: (p["title"].replace("_", " "), p["text"])
                for p in _jsonl(folder / f"{prefix}passages.jsonl.gz")}
    questions = []
    for q in _jsonl(folder / f"{prefix}qa.jsonl.gz"):
        raw = q.get("answers") or []
        if isinstance(raw, str):
            raw = ast.literal_eval(raw) if raw.strip() else []  # as bench.data reads them
        answers = tuple((a["text"], int(a.get("answer_start", -1))) for a in raw)
        questions.append(Question(str(q["id"]), q["question"], q["passage_id"], answers,
                                   str(q.get("is_impossible", "False")) != "True"))
    return passages, questions


def _previous(sentences: list[Sentence], index: int) -> str:
    return sentences[index - 1].text if index > 0 else ""


# How close a sentence is to a question, per sentence: the hard negatives are the closest that do not answer.
Closeness = Callable[[str, str, list[Sentence]], list[float]]


def term_closeness(question: str, language: str, sentences: list[Sentence]) -> list[float]:
    """The share of the question's terms each sentence holds (the default; ``mined.E5Closeness`` is the other)."""
    terms = content_terms(question, language)
    return [share(terms, content_terms(s.text, language)) for s in sentences]


def _closest(question: str, language: str, sentences: list[Sentence], exclude: set[int],
             closeness: Closeness = term_closeness) -> list[int]:
    """Indices of ``sentences`` but ``exclude``, closest to the question first (the earliest of equals)."""
    scores = closeness(question, language, sentences)
    scored = [(scores[i], i) for i in range(len(sentences)) if i not in exclude]
    return [i for _, i in sorted(scored, key=lambda t: (-t[0], t[1]))]


def _holds_answer(text: str, answers: tuple[tuple[str, int], ...]) -> bool:
    folded = text.casefold()
    return any(a.casefold() in folded for a, _ in answers if a)


class _Splitter:
    """Sentences of each passage, split once (the same splitter the index uses)."""

    def __init__(self, language: str) -> None:
        self.language = language
        self._cache: dict[str, list[Sentence]] = {}

    def __call__(self, key: str, text: str) -> list[Sentence]:
        if key not in self._cache:
            self._cache[key] = split_sentences(text, self.language)
        return self._cache[key]


def _easy_negative(rng: random.Random, passages: dict[str, tuple[str, str]], ids: list[str], split: _Splitter,
                   title: str, sentences: list[Sentence], gold: int) -> tuple[int, list[Sentence], str] | None:
    """Any other sentence of the gold paragraph, or any sentence of another article's paragraph (half each)."""
    if rng.random() < 0.5:
        rest = [i for i in range(len(sentences)) if i != gold]
        return (rng.choice(rest), sentences, title) if rest else None
    other = rng.choice(ids)
    other_title, other_text = passages[other]
    found = split(other, other_text) if other_title != title else []
    return (rng.randrange(len(found)), found, other_title) if found else None


# What a question can name: numbers (by their digits' count, so a year swaps for a year), capitalised words and
# their runs (en/ru), katakana words (ja's loanwords and foreign names).
_OPENS = {"", ".", "!", "?", ":", ";", '"', "“", "«", "(", "。", "？", "！"}  # what a sentence may start after
_NAMES = re.compile(r"(?P<number>\d+(?:[.,]\d+)*)|(?P<name>[A-ZА-ЯЁ][\w'’-]*(?: [A-ZА-ЯЁ][\w'’-]*)*)|(?P<kana>[ァ-ヺー]{2,})")


def names(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of each name in ``text``. A sentence's first word is capitalised whatever it is, so it
    is no name (a run it starts keeps the rest: "Which Tokyo office" names "Tokyo")."""
    out = []
    for match in _NAMES.finditer(text):
        kind, start, end = match.lastgroup or "", match.start(), match.end()
        if kind == "name" and (start == 0 or text[:start].rstrip()[-1:] in _OPENS):
            space = text.find(" ", start, end)
            if space < 0:
                continue
            start = space + 1
        out.append((f"number{end - start}" if kind == "number" else kind, start, end))
    return out


def swapped(question: str, paragraph: str, sentence: str, pool: set[tuple[str, str]], rng: random.Random,
            ) -> str | None:
    """``question`` with one of the names that ``sentence`` holds replaced by a name of the same kind from ``pool``
    (kind, name) that ``paragraph`` never mentions: a question the sentence no longer answers. None when there is
    no such name or no such replacement."""
    held = [(kind, start, end) for kind, start, end in names(question)
            if question[start:end].casefold() in sentence.casefold()]
    rng.shuffle(held)
    folded = paragraph.casefold()
    for kind, start, end in held:
        options = sorted(n for k, n in pool if k == kind and n.casefold() not in folded)
        if options:
            return question[:start] + rng.choice(options) + question[end:]
    return None


def qa_examples(name: str, language: str, passages: dict[str, tuple[str, str]], questions: list[Question],
                rng: random.Random, limit: int | None, easy: bool = False, others: int = 1, swaps: bool = False,
                closeness: Closeness | None = None) -> list[Example]:
    """Positives and hard negatives of an extractive QA set (see the module's docstring). ``closeness`` ranks the
    hard negatives (None: by the question's terms, and the other-paragraph ones among the two paragraphs that hold
    most of them; given: among every other paragraph of the article, as the service's search would see them)."""
    close = closeness or term_closeness
    by_title: dict[str, list[str]] = defaultdict(list)
    for pid, (title, _) in passages.items():
        by_title[title].append(pid)
    ids = sorted(passages)
    chosen = list(questions)
    rng.shuffle(chosen)
    if limit is not None:
        chosen = chosen[:limit]
    split = _Splitter(language)

    @functools.cache
    def named(passage: str) -> frozenset[tuple[str, str]]:
        """A passage's names as (kind, name), found once."""
        text = passages[passage][1]
        return frozenset((kind, text[start:end]) for kind, start, end in names(text))

    out: list[Example] = []
    for q in chosen:
        title, text = passages[q.passage]
        sentences = split(q.passage, text)
        if not sentences:
            continue
        if q.answerable and q.answers:
            answer, start = q.answers[0]
            start = start if start >= 0 and text[start:start + len(answer)] == answer else text.find(answer)
            gold = next((i for i, s in enumerate(sentences) if s.start <= start < s.end), None)
            if start < 0 or gold is None:
                continue
            out.append(Example(Pair(q.text, sentences[gold].text, title, _previous(sentences, gold)), 1.0, language,
                               f"{name}/answer", answer=answer))
            # The gold paragraph's closest other sentence: about the question, most often not its answer.
            for i in _closest(q.text, language, sentences, {gold}, close)[:1]:
                if not _holds_answer(sentences[i].text + _previous(sentences, i), q.answers):
                    out.append(Example(Pair(q.text, sentences[i].text, title, _previous(sentences, i)), 0.0,
                                       language, f"{name}/same-paragraph"))
            # An easy negative (the module says why); drawn only when asked, so a recipe without them keeps its pairs.
            drawn = _easy_negative(rng, passages, ids, split, title, sentences, gold) if easy else None
            if drawn is not None:
                i, found_in, found_title = drawn
                if not _holds_answer(found_in[i].text + _previous(found_in, i), q.answers):
                    out.append(Example(Pair(q.text, found_in[i].text, found_title, _previous(found_in, i)), 0.0,
                                       language, f"{name}/unrelated"))
            if swaps:  # its own generator: the other pairs stay those of the recipe without swaps
                pool = set().union(*(named(p) for p in by_title[title] if p != q.passage))
                question = swapped(q.text, text, sentences[gold].text, pool, random.Random(q.id))
                if question is not None:
                    out.append(Example(Pair(question, sentences[gold].text, title, _previous(sentences, gold)), 0.0,
                                       language, f"{name}/swapped"))
            # The ``others`` closest sentences of the article's two other paragraphs closest to the question (by its
            # terms), or of all of them (a given closeness): the gold-removed case. (By terms only those two are
            # split: sentence splitting is the slow part here.)
            terms = content_terms(q.text, language)
            nearby = sorted((p for p in by_title[title] if p != q.passage),
                            key=lambda p: (-share(terms, content_terms(passages[p][1], language)), p))
            pool = [(p, i) for p in (nearby if closeness else nearby[:2]) for i in range(len(split(p, passages[p][1])))]
            flat = [split(p, passages[p][1])[i] for p, i in pool]
            for i in _closest(q.text, language, flat, set(), close)[:others]:
                p, j = pool[i]
                if not _holds_answer(flat[i].text + _previous(split(p, passages[p][1]), j), q.answers):
                    out.append(Example(Pair(q.text, flat[i].text, title, _previous(split(p, passages[p][1]), j)),
                                       0.0, language, f"{name}/other-paragraph"))
        elif not q.answerable:  # adversarial: written to look answerable from this paragraph
            for i in _closest(q.text, language, sentences, set(), close)[:2]:
                out.append(Example(Pair(q.text, sentences[i].text, title, _previous(sentences, i)), 0.0, language,
                                   f"{name}/unanswerable"))
    return out


_ENDS = re.compile(r"(?<=[.!?।؟۔])\s+")


def _plain_sentences(text: str) -> list[Sentence]:
    """Sentences cut after . ! ? and the Devanagari/Arabic stops: NoMIRACL's nine languages have no splitter
    of their own here (the index's English rules would do the same, far slower)."""
    out, start = [], 0
    for match in [*_ENDS.finditer(text), None]:
        end = match.start() if match else len(text)
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append(Sentence(start + lead, start + lead + len(piece.strip()), piece.strip()))
        start = match.end() if match else len(text)
    return out


def nomiracl_examples(rng: random.Random, limit: int | None) -> list[Example]:
    """The closest two sentences of each all-non-relevant NoMIRACL query's passages (human-judged near misses)."""
    out: list[Example] = []
    for path in sorted((TRAIN / "nomiracl-more").glob("*.jsonl.gz")):
        rows = [r for r in _jsonl(path) if not r["should_answer"]]
        rng.shuffle(rows)
        for row in rows[:limit]:
            language = row["lang"]
            flat, context = [], []
            for passage in row["passages"]:
                sentences = _plain_sentences(passage["text"])
                for i, s in enumerate(sentences):
                    flat.append(s)
                    context.append((passage["title"], _previous(sentences, i)))
            for i in _closest(row["query"], language, flat, set())[:2]:
                out.append(Example(Pair(row["query"], flat[i].text, *context[i]), 0.0, language,
                                   "nomiracl-more/non-relevant"))
    return out


_WORDS = re.compile(r"\w+")


def _grams(text: str) -> frozenset[str]:
    """Character trigrams of the casefolded words: a closeness that needs no word splitter (Thai has no spaces,
    and ``content_terms`` knows en/ja/ru only)."""
    words = " ".join(_WORDS.findall(text.casefold()))
    return frozenset(words[i:i + 3] for i in range(len(words) - 2))


def nomiracl_group(row: dict, size: int) -> list[Example]:
    """A NoMIRACL query's group: the closest sentence (by the query's trigrams) of each of its ``size`` closest
    passages, every pair labelled with the query's label."""
    grams = _grams(row["query"])
    best = []  # per passage: (closeness, its closest sentence's pair)
    for passage in row["passages"]:
        sentences = _plain_sentences(passage["text"])
        if sentences:
            closeness = [share(grams, _grams(s.text)) for s in sentences]
            i = max(range(len(sentences)), key=closeness.__getitem__)  # the closest, the earliest of equals
            best.append((closeness[i], Pair(row["query"], sentences[i].text, passage["title"],
                                            _previous(sentences, i))))
    subset = "relevant" if row["should_answer"] else "non-relevant"
    return [Example(pair, 1.0 if row["should_answer"] else 0.0, row["lang"], f"nomiracl-more/group-{subset}",
                    f"{row['lang']}/{subset}/{row['query_id']}")
            for _, pair in sorted(best, key=lambda t: -t[0])[:size]]


def nomiracl_groups(rng: random.Random, limit: int | None, size: int) -> list[Example]:
    """One group per NoMIRACL query of both subsets (``limit`` of each per language)."""
    out: list[Example] = []
    for path in sorted((TRAIN / "nomiracl-more").glob("*.jsonl.gz")):
        rows = list(_jsonl(path))
        rng.shuffle(rows)
        for row in [r for r in rows if r["should_answer"]][:limit] + [r for r in rows if not r["should_answer"]][:limit]:
            out += nomiracl_group(row, size)
    return out


def nomiracl_pairs(rng: random.Random, limit: int | None, groups: int = 0, beside: int | None = None) -> list[Example]:
    """NoMIRACL-more's pairs: its non-relevant queries' negatives (``groups`` 0), its queries as groups of that many
    candidates in their place, or (``beside``) the negatives and groups of that many queries a language and subset."""
    out = nomiracl_examples(rng, limit) if not groups or beside is not None else []
    if groups:
        out += nomiracl_groups(rng, limit if beside is None else beside, groups)
    return out


def fit_half(passages: dict[str, tuple[str, str]]) -> set[str]:
    """The passages of the FIT half of a shared set's articles: ``bench.answers.fit_passages``'s rule."""
    titles = set(sorted({title for title, _ in passages.values()})[::2])
    return {pid for pid, (title, _) in passages.items() if title in titles}


def examples(sizes: Sizes = Sizes(), seed: int = 13, easy: bool = False, others: int = 1, groups: int = 0,
             beside: int | None = None, swaps: bool = False, closeness: Closeness | None = None) -> list[Example]:
    """Every source's pairs, shuffled; ``groups`` > 0: NoMIRACL as groups of that many candidates a query (both
    subsets), in place of its non-relevant queries' single negatives — or, with ``beside``, as well as them, from
    that many queries a language and subset; ``closeness``: how the QA sets' hard negatives are ranked
    (``qa_examples``; NoMIRACL's stay ranked by terms)."""
    rng = random.Random(seed)
    out = []
    passages, questions = read_qa(TRAIN / "squad1.1-train")
    out += qa_examples("squad1.1", "en", passages, questions, rng, sizes.squad, easy, others, swaps, closeness)
    passages, questions = read_qa(TRAIN / "jaquad-train")
    out += qa_examples("jaquad", "ja", passages, questions, rng, sizes.jaquad, easy, others, swaps, closeness)
    for name, language, folder, prefix in (("xquad-en-fit", "en", "xquad-ru-en", "en."),
                                           ("xquad-ru-fit", "ru", "xquad-ru-en", "ru."),
                                           ("squad2-fit", "en", "squad2-dev-half", "")):
        passages, questions = read_qa(EVAL / folder, prefix)
        fit = fit_half(passages)
        out += qa_examples(name, language, passages, [q for q in questions if q.passage in fit], rng, sizes.fit_sets,
                           easy, others, swaps, closeness)
    out += nomiracl_pairs(rng, sizes.nomiracl, groups, beside)
    rng.shuffle(out)
    return out


def digest(items: list[Example]) -> str:
    """A hash of the pairs and labels: the card records it, and the state cache is keyed by it."""
    h = hashlib.sha256()
    for e in items:
        h.update(json.dumps([e.pair.question, e.pair.candidate, e.pair.title, e.pair.previous, e.label,
                             *([e.group] if e.group else [])], ensure_ascii=False).encode())
    return h.hexdigest()[:16]
