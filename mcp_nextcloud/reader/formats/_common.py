"""Helpers the converters share: text decoding and a builder for paged text."""
from __future__ import annotations

import re

from ..document import Document, OutlineEntry

_VALID_MULTIBYTE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]+")


def decode_text(data: bytes) -> tuple[str, list[str]]:
    """Bytes -> str: BOMs first, then UTF-8, then cp1252 / latin-1 with a warning.

    A file that is mostly UTF-8 with a few broken bytes keeps its UTF-8 reading
    (with replacement characters); a file with no UTF-8 sequences at all is
    most likely a Windows / ISO-8859 file and is decoded as such.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8", errors="replace"), []
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", errors="replace"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError:
        pass
    if _VALID_MULTIBYTE.search(data):
        text = data.decode("utf-8", errors="replace")
        bad = text.count("\ufffd")
        return text, [f"invalid UTF-8: {bad} undecodable byte sequence(s) replaced by U+FFFD"]
    try:
        return data.decode("cp1252"), ["not UTF-8: decoded as cp1252 (Windows Western European)"]
    except UnicodeDecodeError:
        return data.decode("latin-1"), ["not UTF-8: decoded as latin-1 (ISO-8859-1)"]


def line_of(text: str, offset: int) -> int:
    """1-based line number of `offset` in `text`."""
    return text.count("\n", 0, offset) + 1


class PagedText:
    """Accumulates pages (slides, sheets) and headings, then builds a Document.

    Offsets are taken while appending, so outline entries always point at the
    exact character where their heading starts in the final text.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.pages: list[int] = []
        self.outline: list[OutlineEntry] = []

    def new_page(self) -> None:
        """Start a page at the current end of the text."""
        self.pages.append(self.length)

    def add(self, text: str) -> int:
        """Append text; return the offset where it starts."""
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        return start

    def line(self, text: str) -> int:
        """Append one line (a newline is added); return its offset."""
        return self.add(text + "\n")

    def heading(self, title: str, level: int = 1, *, text: str | None = None) -> int:
        """Append a heading line and record it in the outline."""
        offset = self.line(title if text is None else text)
        page = len(self.pages) if self.pages else None
        self.outline.append(OutlineEntry(title=title, level=level, offset=offset, page=page))
        return offset

    def build(self, kind: str, name: str, mime: str, page_unit: str = "page", **kw: object) -> Document:
        text = "".join(self.parts)
        pages = self.pages or [0]
        if pages[0] != 0:
            pages = [0] + pages
        assign_lines(text, self.outline)
        return Document(text=text, kind=kind, name=name, mime=mime, pages=pages, page_unit=page_unit,
                        outline=self.outline, **kw)  # type: ignore[arg-type]


def assign_lines(text: str, entries: list[OutlineEntry]) -> None:
    """Set the 1-based `line` of each entry, counting newlines once across the text (not per entry)."""
    line, pos = 1, 0
    for entry in sorted(entries, key=lambda e: e.offset):
        offset = min(max(entry.offset, 0), len(text))
        if offset < pos:  # out-of-order offsets cannot happen after sorting; kept for safety
            line, pos = 1, 0
        line += text.count("\n", pos, offset)
        pos = offset
        entry.line = line


def fill_lines(doc: Document) -> Document:
    """Set `line` on outline entries that lack it."""
    missing = [e for e in doc.outline if e.line is None]
    if missing:
        assign_lines(doc.text, missing)
    return doc
