"""Is a message posted in a help channel a question? Pure: text in, yes or no.

Rules (each language's words are in its own script, so all of them are tried on every message):

- A question mark anywhere outside code: ``?``, the full-width ``？``, the Arabic-style ``؟`` and ``¿``.
- Or a sentence that opens, after a greeting ("hi team,", "привет,"), with an interrogative: English wh-words and
  auxiliaries ("how", "is", "does", "can" … but not "do not", nor "can't", "didn't": those open orders and
  reports), "anyone",
  "any idea"; Russian question words ("как", "где", "сколько" … not "как-то", "где-то"), "подскажите",
  "можно", and the particle "ли" anywhere ("есть ли").
- Or a Japanese sentence that ends in the question particle (か, かな, かしら, でしょう, の before 。 or the end)
  or holds "how do I" (どうすれば, どうやって, どうしたら) or "please tell me" (教えてください).
- Code (``…`` spans and blocks) and quoted lines (``>``) are not the asker's words: left out.
"""

from __future__ import annotations

import re

_MARKS = re.compile(r"[?？؟¿]")
_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_QUOTED = re.compile(r"^\s*(>|&gt;).*$", re.M)
_SENTENCES = re.compile(r"[.!。！\n]+")
_WORDS = re.compile(r"\w+(?:[-'’]\w+)*")

_GREETINGS = frozenset({
    "hi", "hey", "hello", "morning", "good", "team", "all", "folks", "everyone", "guys", "y'all", "quick",
    "question", "please", "sorry", "so", "ok", "okay", "um", "hmm",
    "привет", "здравствуйте", "коллеги", "всем", "добрый", "день", "утро", "вечер", "ребята", "вопрос",
})
_EN_OPENINGS = frozenset({  # not "can't", "didn't" …: "Can't log in", "Didn't work" open reports, not questions
    "what", "what's", "whats", "how", "how's", "why", "when", "where", "where's", "who", "who's", "whom", "whose",
    "which", "is", "are", "am", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will",
    "shall", "has", "have", "anyone", "anybody", "any",
})
_EN_NOT_AFTER = {"do": "not", "any": "more"}  # "Do not deploy…", "Any more of this…" open statements
_RU_OPENINGS = frozenset({
    "что", "чем", "чему", "как", "какой", "какая", "какое", "какие", "каким", "какую", "каких", "почему", "зачем",
    "когда", "где", "куда", "откуда", "кто", "кого", "кому", "сколько", "чей", "чья", "чьё", "можно", "нельзя",
    "подскажите", "подскажи", "скажите", "разве", "неужели",
})
_JA_ENDINGS = re.compile(r"(か|かな|かしら|でしょう|ですか|ますか|の)[\s」』)）]*$")
_JA_PHRASES = re.compile(r"どうすれば|どうやって|どうしたら|教えて(ください|下さい|くれ)")


def looks_like_question(text: str) -> bool:
    """Whether ``text`` (a cleaned Slack message) asks something, by the rules above."""
    words = _QUOTED.sub(" ", _CODE.sub(" ", text))
    if _MARKS.search(words) or _JA_PHRASES.search(words):
        return True
    return any(_sentence_asks(sentence.strip()) for sentence in _SENTENCES.split(words) if sentence.strip())


def _sentence_asks(sentence: str) -> bool:
    if _JA_ENDINGS.search(sentence) and re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", sentence):
        return True
    tokens = [t.lower().replace("’", "'") for t in _WORDS.findall(sentence)]
    if "ли" in tokens[1:]:
        return True
    rest = _skip_greeting(tokens)
    if not rest:
        return False
    first, second = rest[0], rest[1] if len(rest) > 1 else ""
    if first in _EN_OPENINGS:
        return _EN_NOT_AFTER.get(first) != second and len(rest) > 1
    return first in _RU_OPENINGS and len(rest) > 1


def _skip_greeting(tokens: list[str]) -> list[str]:
    at = 0
    while at < len(tokens) and tokens[at] in _GREETINGS:
        at += 1
    return tokens[at:]
