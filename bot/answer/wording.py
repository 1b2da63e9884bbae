"""Everything the bot says in words, in English, Japanese and Russian, kept together.

The answer reads naturally in the asker's language: the quote, then where it is from
(«Инструкция для первой линии», раздел «Эскалация») — built from index metadata, never model text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Wording:
    no_support: str
    nearest: str
    nothing_found: str
    error: str
    page: str  # format with {page}
    version: str  # format with {version}
    open_quote: str
    close_quote: str
    title_open: str
    title_close: str
    section: str  # format with {section}
    separator: str


WORDING = {
    "en": Wording(
        no_support="The documents I can search do not answer this.",
        nearest="Nearest fragments I found:",
        nothing_found="I found no documents to search for this question.",
        error="Sorry — I could not answer this because of a problem on my side. It has been logged; please try again later.",
        page="p. {page}", version="version {version}",
        open_quote="\u201c", close_quote="\u201d", title_open="", title_close="",
        section="{section}", separator=", ",
    ),
    "ru": Wording(
        no_support="В документах, по которым я ищу, нет ответа на этот вопрос.",
        nearest="Ближайшие найденные фрагменты:",
        nothing_found="Я не нашёл документов, по которым можно ответить на этот вопрос.",
        error="Не удалось ответить из-за ошибки на моей стороне. Ошибка записана; попробуйте позже.",
        page="стр. {page}", version="версия {version}",
        open_quote="«", close_quote="»", title_open="«", title_close="»",
        section="раздел «{section}»", separator=", ",
    ),
    "ja": Wording(
        no_support="検索できるドキュメントには、この質問への回答が見つかりませんでした。",
        nearest="最も近い箇所:",
        nothing_found="この質問に関係するドキュメントが見つかりませんでした。",
        error="申し訳ありません。内部の問題により回答できませんでした。記録済みですので、後でもう一度お試しください。",
        page="{page}ページ", version="版 {version}",
        open_quote="「", close_quote="」", title_open="『", title_close="』",
        section="{section}", separator="、",
    ),
}


def wording_for(language: str) -> Wording:
    return WORDING.get(language, WORDING["en"])


def source_line(language: str, title: str, section: str | None, page: int | None, version: str | None) -> str:
    """Where a quote is from, e.g. 'Refund policy, Eligibility, p. 3, version 2026-09'."""
    w = wording_for(language)
    parts = [f"{w.title_open}{title}{w.title_close}"]
    if section:
        parts.append(w.section.format(section=section))
    if page is not None:
        parts.append(w.page.format(page=page))
    if version:
        parts.append(w.version.format(version=version))
    return w.separator.join(parts)
