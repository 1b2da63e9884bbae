"""Files and folders in, ``Document`` values (or ``LoadError`` values) out.

``iter_documents`` walks the paths it is given, folders recursively in sorted order (hidden files
and folders, whose names start with ".", are skipped), and hands each file to the loader for its
extension: ``.md``/``.markdown``, ``.txt``, ``.html``/``.htm``, ``.pdf``, ``.jsonl``.

It never raises for bad input. Each of these yields one ``LoadError`` and the walk goes on: a
missing path, an unknown extension, an unreadable, empty or too large file, a binary or non-UTF-8
text file, a malformed file (front matter, PDF, or one JSONL line), a document with no text or
more text than ``max_document_chars``. (Two documents claiming one ``document_id`` are caught by
the ingest, which sees every source of documents, not here.)

A file's ``document_id`` is its path relative to the folder argument it was found under, in POSIX
form (``"billing/refunds.md"``), or its name when the file itself was an argument; Markdown front
matter may override it, and JSONL lines carry their own.

Each document and each error also carries its ``source_path``: the file (or folder) it came from, absolute, with
the folder argument resolved and the path below it kept as walked (``source_path``). A sync of a path owns the
documents recorded at or below ``source_path(path)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath

from retrieval.documents import BlockKind, Document
from retrieval.loaders.common import LoadError, decode_text
from retrieval.loaders.html import parse_html
from retrieval.loaders.jsonl import parse_jsonl
from retrieval.loaders.markdown import parse_markdown
from retrieval.loaders.pdf import parse_pdf
from retrieval.loaders.text import parse_text

__all__ = ["SUPPORTED_EXTENSIONS", "LoadError", "checked", "iter_documents", "parse_bytes", "source_path"]

_TextParser = Callable[..., Document | LoadError]
_TEXT_PARSERS: dict[str, _TextParser] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".txt": parse_text,
    ".html": parse_html,
    ".htm": parse_html,
}
SUPPORTED_EXTENSIONS = (*_TEXT_PARSERS, ".pdf", ".jsonl")


def iter_documents(
    paths: Sequence[Path], *, max_file_bytes: int, max_document_chars: int
) -> Iterator[Document | LoadError]:
    """Every document found under ``paths``, in walk order, and a ``LoadError`` for each problem."""
    for path in paths:
        root = Path(source_path(path))
        for found in _walk(path):
            if isinstance(found, LoadError):
                yield replace(found, source_path=str(root / Path(found.source).relative_to(path)))
                continue
            file, document_id = found
            recorded = str(root / file.relative_to(path))
            for result in _load_file(file, document_id, max_file_bytes):
                if isinstance(result, Document):
                    result = checked(result, max_document_chars)
                yield replace(result, source_path=recorded)


def count_documents(paths: Sequence[Path]) -> int:
    """How many outcomes an ingest of ``paths`` will report (a total for its progress bar): one per file and per
    problem, one per non-blank line of a JSONL file. Walks the folders and reads only the JSONL files."""
    total = 0
    for path in paths:
        for found in _walk(path):
            if isinstance(found, tuple) and found[0].suffix.lower() == ".jsonl":
                try:
                    with found[0].open("rb") as lines:
                        total += max(1, sum(1 for line in lines if line.strip()))
                except OSError:
                    total += 1  # the ingest reports it as one failure
            else:
                total += 1
    return total


def source_path(path: Path) -> str:
    """Where documents found under ``path`` are recorded as coming from: absolute, a folder resolved (symlinks
    too), a file's folder resolved and its name kept, so ``wiki/page.md`` and the same file found in ``wiki``
    are recorded alike."""
    if path.is_dir():
        return str(path.resolve())
    return str(path.absolute().parent.resolve() / path.name)


def _walk(path: Path) -> Iterator[tuple[Path, str] | LoadError]:
    """Files to load, each with its default ``document_id``."""
    if path.is_dir():
        yield from _walk_folder(path, path, set())
    elif path.is_file():
        yield path, path.name
    elif path.exists():
        yield LoadError(str(path), "not a regular file or folder: give a file or a folder")
    else:
        yield LoadError(str(path), "no such file or folder: check the path")


def _walk_folder(root: Path, folder: Path, seen: set[Path]) -> Iterator[tuple[Path, str] | LoadError]:
    # Symlinked folders are followed, but never into a folder already being walked (a loop).
    real = folder.resolve()
    if real in seen:
        return
    try:
        entries = sorted(folder.iterdir(), key=lambda entry: entry.name)
    except OSError as error:
        yield LoadError(str(folder), f"cannot list the folder ({error.strerror or error}): check its permissions")
        return
    for entry in entries:
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            yield from _walk_folder(root, entry, seen | {real})
        elif entry.is_file():
            yield entry, entry.relative_to(root).as_posix()
        else:
            yield LoadError(str(entry), "not a regular file (a broken link, socket or device): remove it or skip it")


def _load_file(file: Path, document_id: str, max_file_bytes: int) -> Iterator[Document | LoadError]:
    source = str(file)
    suffix = file.suffix.lower()
    if suffix not in SUPPORTED_EXTENSIONS:
        kind = f"'{suffix}'" if suffix else "with no extension"
        yield LoadError(
            source, f"unsupported file type {kind}: convert it to one of {', '.join(SUPPORTED_EXTENSIONS)}"
        )
        return
    try:
        size = file.stat().st_size
        if size == 0:
            yield LoadError(source, "the file is empty: add text to it or remove it")
            return
        if size > max_file_bytes:
            yield LoadError(
                source,
                f"the file is {size:,} bytes, over the limit of {max_file_bytes:,}: "
                "split it or raise the file size limit",
            )
            return
        data = file.read_bytes()
    except OSError as error:
        reason = error.strerror or error
        yield LoadError(source, f"cannot read the file ({reason}): check that it exists and is readable")
        return
    yield from parse_bytes(data, name=file.name, source=source, document_id=document_id)


def parse_bytes(data: bytes, *, name: str, source: str, document_id: str) -> Iterator[Document | LoadError]:
    """The documents of one file's contents, parsed by its name's extension (one of ``SUPPORTED_EXTENSIONS``):
    what a folder's file and a repository's blob have in common."""
    suffix, stem = PurePosixPath(name).suffix.lower(), PurePosixPath(name).stem
    if suffix == ".pdf":
        yield parse_pdf(data, source=source, document_id=document_id, stem=stem)
        return
    text = decode_text(data, source)
    if isinstance(text, LoadError):
        yield text
        return
    if suffix == ".jsonl":
        yield from _jsonl(text, source)
        return
    yield _TEXT_PARSERS[suffix](text, source=source, document_id=document_id, stem=stem)


def _jsonl(text: str, source: str) -> Iterator[Document | LoadError]:
    any_line = False
    for result in parse_jsonl(text, source=source):
        any_line = True
        yield result
    if not any_line:
        yield LoadError(source, "the file has no JSON lines, only blank ones: add one document per line")


def checked(doc: Document, max_document_chars: int) -> Document | LoadError:
    """``doc`` if it can be indexed, else why not."""
    if not any(block.kind is BlockKind.PARAGRAPH for block in doc.blocks):
        return LoadError(doc.source, "no text to index (only headings, front matter or whitespace): add text to it")
    size = len(doc.text)
    if size > max_document_chars:
        return LoadError(
            doc.source,
            f"the document is {size:,} characters, over the limit of {max_document_chars:,}: "
            "split it into smaller documents or raise the document size limit",
        )
    return doc
