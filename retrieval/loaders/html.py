"""HTML (``.html``, ``.htm``) parsed with BeautifulSoup's built-in ``html.parser``.

What a reader sees becomes blocks: ``h1``–``h6`` are headings; ``p``, ``li``, ``pre``, ``blockquote``,
``dt``, ``dd`` and any other block element are paragraphs; a table is one paragraph with one line per
row, cells joined by ``" | "``; ``<br>`` is a line break. HTML whitespace is not significant, so runs
of it become one space, except inside ``<pre>``. Scripts, styles and page chrome (``nav``, ``header``,
``footer`` …) are dropped. Title: ``<title>``, else the first ``<h1>``, else the file name.

``anchor``, when given, turns a heading's ``id`` attribute into its fragment on the document's web page (a Google
Doc's ``h.xyz`` is ``heading=h.xyz``), or ``None``; a plain HTML file gets none.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from bs4 import BeautifulSoup
from bs4.element import NavigableString, Tag

from retrieval.documents import Block, BlockKind, Document

__all__ = ["parse_html"]

_DROPPED = frozenset(
    {"script", "style", "noscript", "nav", "header", "footer", "template", "head", "svg", "iframe", "object"}
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
# Elements that start and end a paragraph; anything else (a, b, span, code …) flows inline.
_BLOCK_ELEMENTS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "caption", "center", "dd", "details",
        "dialog", "div", "dl", "dt", "fieldset", "figcaption", "figure", "form", "hgroup", "hr",
        "html", "legend", "li", "main", "menu", "ol", "p", "section", "summary", "ul",
    }
)  # fmt: skip
_WHITESPACE = re.compile(r"\s+")


def parse_html(text: str, *, source: str, document_id: str, stem: str,
               anchor: Callable[[str], str | None] | None = None) -> Document:
    """An HTML document as heading and paragraph blocks, in reading order."""
    soup = BeautifulSoup(text, "html.parser")
    title = _title(soup) or stem
    collector = _Collector(anchor)
    collector.walk(soup)
    collector.flush()
    return Document(document_id=document_id, title=title, blocks=tuple(collector.blocks), source=source)


def _title(soup: BeautifulSoup) -> str | None:
    for name in ("title", "h1"):
        tag = soup.find(name)
        if isinstance(tag, Tag):
            found = _inline_text(tag)
            if found:
                return found
    return None


def _is_text(node: NavigableString) -> bool:
    """Plain text, not a comment, doctype, CDATA or processing instruction (all strings in bs4)."""
    return type(node) is NavigableString


def _collapse(text: str) -> str:
    return _WHITESPACE.sub(" ", text).strip()


# Both walks below keep their own stack instead of recursing: badly closed HTML (tag soup from
# word processors) can nest thousands of levels deep, past Python's recursion limit.
_SPACE = object()  # on a walk's stack: "this element ended", a space in inline text
_END_OF_BLOCK = object()  # on the collector's stack: "this block element ended", a paragraph break


def _inline_text(tag: Tag) -> str:
    """The visible text of ``tag`` on one line: nested blocks, cells and ``<br>`` read as spaces."""
    parts: list[str] = []
    stack: list[object] = list(reversed(tag.contents))
    while stack:
        node = stack.pop()
        if node is _SPACE:
            parts.append(" ")
        elif isinstance(node, NavigableString):
            if _is_text(node):
                parts.append(str(node))
        elif isinstance(node, Tag) and node.name not in _DROPPED:
            if node.name in _SPACED:
                parts.append(" ")
                stack.append(_SPACE)
            stack.extend(reversed(node.contents))
    return _collapse("".join(parts))


_SPACED = _BLOCK_ELEMENTS | _HEADINGS | {"br", "pre", "table", "tr", "td", "th"}


class _Collector:
    """Walks the tree once, gathering inline text into the paragraph being built."""

    def __init__(self, anchor: Callable[[str], str | None] | None = None) -> None:
        self.blocks: list[Block] = []
        self._anchor = anchor
        self._lines: list[list[str]] = [[]]  # the open paragraph: lines split by <br>, each as parts

    def walk(self, root: Tag) -> None:
        stack: list[object] = list(reversed(root.contents))
        while stack:
            node = stack.pop()
            if node is _END_OF_BLOCK:
                self.flush()
            elif isinstance(node, NavigableString):
                if _is_text(node):
                    self._lines[-1].append(str(node))
            elif isinstance(node, Tag) and node.name not in _DROPPED:
                stack.extend(self._element(node))

    def _element(self, tag: Tag) -> list[object]:
        """Handle ``tag``; return what the walk should visit next, last first (a stack)."""
        name = tag.name
        if name == "br":
            self._lines.append([])
        elif name in _HEADINGS:
            self.flush()
            heading = _inline_text(tag)
            if heading:
                found = tag.get("id")
                fragment = self._anchor(found) if self._anchor is not None and isinstance(found, str) else None
                self.blocks.append(Block(BlockKind.HEADING, heading, level=int(name[1]), anchor=fragment))
        elif name == "pre":
            self.flush()
            # Whitespace in <pre> is content: keep it, less the blank lines at either end.
            code = tag.get_text().strip("\n").rstrip()
            if code.strip():
                self.blocks.append(Block(BlockKind.PARAGRAPH, code))
        elif name == "table":
            self.flush()
            self._table(tag)
        elif name in _BLOCK_ELEMENTS:
            self.flush()
            return [_END_OF_BLOCK, *reversed(tag.contents)]
        else:
            return list(reversed(tag.contents))
        return []

    def _table(self, table: Tag) -> None:
        caption = table.find("caption")
        if isinstance(caption, Tag) and caption.find_parent("table") is table and _inline_text(caption):
            self.blocks.append(Block(BlockKind.PARAGRAPH, _inline_text(caption)))
        rows: list[str] = []
        for row in table.find_all("tr"):
            if row.find_parent("table") is not table:
                continue  # a row of a nested table is read as part of its cell's text
            cells = [_inline_text(cell) for cell in row.find_all(["td", "th"], recursive=False)]
            if any(cells):
                rows.append(" | ".join(cells))
        if rows:
            self.blocks.append(Block(BlockKind.PARAGRAPH, "\n".join(rows)))

    def flush(self) -> None:
        """End the open paragraph, adding it as a block when it has any text."""
        lines = [_collapse("".join(parts)) for parts in self._lines]
        paragraph = "\n".join(line for line in lines if line)
        if paragraph:
            self.blocks.append(Block(BlockKind.PARAGRAPH, paragraph))
        self._lines = [[]]
