"""A tiny PDF writer for tests: ASCII lines in Helvetica, one list of lines per page.

The objects and the cross-reference table are written by hand, so the tests need no PDF library
beyond the pypdf under test, and the bytes are the same on every run.
"""

from __future__ import annotations

from collections.abc import Sequence


def _escape(text: str) -> str:
    """A PDF literal string body: backslash and parentheses escaped; ASCII only."""
    text.encode("ascii")  # raises for non-ASCII: standard Helvetica here has no encoding for it
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: Sequence[Sequence[str]], *, title: str | None = None) -> bytes:
    """A valid PDF whose page ``i`` shows ``pages[i]``, one string per line, top to bottom.

    An empty string is a blank line, which pypdf's text extraction keeps as a blank line.
    """
    page_count = len(pages)
    # Object numbers: 1 catalog, 2 page tree, 3 font, 4 info, then a (page, contents) pair per page.
    page_ids = [5 + 2 * i for i in range(page_count)]
    objects: dict[int, bytes] = {
        1: b"<< /Type /Catalog /Pages 2 0 R >>",
        2: (
            f"<< /Type /Pages /Kids [{' '.join(f'{p} 0 R' for p in page_ids)}] /Count {page_count} >>"
        ).encode(),
        3: b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        4: (f"<< /Title ({_escape(title)}) >>" if title is not None else "<< >>").encode(),
    }
    for page_id, lines in zip(page_ids, pages):
        operations = ["BT", "/F1 12 Tf", "14 TL", "72 740 Td"]
        for line in lines:
            # A blank line is shown as one space: pypdf then reads it back as an empty line.
            operations.append(f"({_escape(line) or ' '}) Tj")
            operations.append("T*")
        operations.append("ET")
        stream = "\n".join(operations).encode("ascii")
        objects[page_id] = (
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {page_id + 1} 0 R >>"
        ).encode()
        objects[page_id + 1] = b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"

    out = bytearray(b"%PDF-1.4\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += b"%d 0 obj\n" % number + objects[number] + b"\nendobj\n"
    xref_at = len(out)
    size = max(objects) + 1
    out += b"xref\n0 %d\n" % size
    out += b"0000000000 65535 f \n"
    for number in range(1, size):
        out += b"%010d 00000 n \n" % offsets[number]
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 4 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (size, xref_at)
    return bytes(out)
