"""The reader's data model: what any file becomes once it is text.

Everything here is plain data: no I/O, no clock. The indexer serialises these
objects (see `Document.to_dict` / `from_dict`) next to the extracted text.
"""
from __future__ import annotations

import bisect
import copy
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple


class ReaderCode(Enum):
    """Why the reader could not turn a file into text; compare by identity (`err.code is ReaderCode.ENCRYPTED`),
    `.value` is the name on the wire (JSON, a stored failure)."""

    UNREADABLE = "unreadable"
    UNSUPPORTED = "unsupported"
    BINARY = "binary"
    EMPTY = "empty"
    ENCRYPTED = "encrypted"
    CORRUPT = "corrupt"
    ZIP_BOMB = "zip_bomb"
    TOO_LARGE = "too_large"
    TIMEOUT = "timeout"      # the time cap stopped it
    MEMORY = "memory"        # the memory cap stopped it, or the extraction process died
    FAILED = "failed"        # the reader itself failed on this file (a bug; the indexer's pool reports it)

    @property
    def is_fault(self) -> bool:
        """Our side ran out of time or memory or broke, rather than "this file cannot be read"."""
        return self in (ReaderCode.TIMEOUT, ReaderCode.MEMORY, ReaderCode.FAILED)


# How `str(err)` says the retry: the library's plain wording (nextcloud.errors.PLAIN says the same to an
# agent; the reader imports nothing of ours, so its sentence-case form lives here, once). Front ends word
# the `retry` field themselves.
_PLAIN_RETRY = {True: "retry once; if it fails again, stop and report", False: "do not retry"}


class ReaderError(Exception):
    """A file the reader cannot turn into text.

    Kept in parts: `cause`, `action` (the next step), `code` (a ReaderCode, the
    stable identifier for programs and telemetry) and `retry` (whether trying
    again can help: False by default, the reader is deterministic and its caps
    are the same next time). `str(err)` joins them into one instruction in the
    library's plain wording, e.g. "encrypted PDF: ask the owner for an
    unencrypted copy; do not retry". The reader is pure and names no tool: a
    front end adds its own steps and words the retry for its audience.
    """

    def __init__(self, cause: str, action: str = "", *, code: ReaderCode = ReaderCode.UNREADABLE,
                 retry: bool = False) -> None:
        self.cause, self.action, self.code, self.retry = cause, action, code, retry
        super().__init__(self.message)

    @property
    def reason(self) -> str:
        """Cause and next action without the retry ("cause: action"): what an index records for the file."""
        return self.cause + (f": {self.action}" if self.action else "")

    @property
    def message(self) -> str:
        """The instruction in the library's plain wording: "cause: action; do not retry"."""
        return f"{self.reason}; {_PLAIN_RETRY[self.retry]}"

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        # Exceptions pickle as cls(*args), which would drop the keyword-only parts (the extraction pool
        # sends these across processes): rebuild from the fields.
        return _rebuild_reader_error, (type(self), self.cause, self.action, self.code, self.retry)


def _rebuild_reader_error(cls: type[ReaderError], cause: str, action: str, code: ReaderCode,
                          retry: bool) -> ReaderError:
    return cls(cause, action, code=code, retry=retry)


class Limits(NamedTuple):
    """Per-file caps that keep a hostile or huge file from hanging or eating memory (immutable)."""

    max_bytes: int = 64 * 1024 * 1024          # input size refused above this
    max_chars: int = 20_000_000                 # extracted text cut (with a warning) above this
    max_rows_per_sheet: int = 20_000            # XLSX/ODS/CSV rows kept per sheet
    max_pages: int = 5_000                      # PDF pages read
    max_seconds: float = 60.0                   # wall-clock budget for one extraction
    max_image_bytes: int = 5 * 1024 * 1024      # images larger than this are refused
    max_zip_ratio: int = 200                    # zip members inflating more than this are refused
    max_unzipped_bytes: int = 512 * 1024 * 1024  # total inflated size of an Office/ODF zip


DEFAULT_LIMITS = Limits()


@dataclass(slots=True)
class OutlineEntry:
    """One heading, bookmark, sheet or slide title, pointing into `Document.text`."""

    title: str
    level: int = 1              # 1 = top level
    offset: int = 0             # character offset into Document.text
    page: int | None = None     # 1-based page / slide / sheet number, when the format has pages
    line: int | None = None     # 1-based line number of `offset` in Document.text

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "level": self.level, "offset": self.offset, "page": self.page,
                "line": self.line}


class ImageData(NamedTuple):
    """An image handed to the model as an image (never as text)."""

    data: bytes
    mime: str                   # image/png, image/jpeg, image/gif, image/webp
    width: int | None = None
    height: int | None = None


@dataclass(eq=True, repr=False)
class Document:
    """A file turned into text.

    - `text`: the whole extracted text. Every offset anywhere in the project
      (find, grep, page, outline) is a Python `str` index into this text.
    - `kind`: text, markdown, csv, json, html, pdf, xlsx, pptx, docx, odt,
      ods, odp, image.
    - `pages`: start offsets of each page / slide / sheet, ascending, first is
      0. Page n (1-based) is text[pages[n-1]:pages[n]]. Formats without pages
      have [0].
    - `page_unit`: what a page is called in this format: page, slide, sheet
      or section.
    - `outline`: headings / bookmarks / sheet names / slide titles in
      document order (a PDF's in its bookmark tree's order: a parent before
      its children) (may be empty; `reader.outline()` then derives one).
    - `structure`: a small format-specific skeleton used by `reader.outline()`
      (CSV: {"header": [...], "rows": [[...]*5], "rowCount": n}; JSON:
      {"skeleton": ...}; XLSX/ODS: {"sheets": [{"name", "dimensions",
      "rows", "columns", "header", "firstRows", "offset"}]}). Keep it small.
    - `warnings`: what this text cannot tell ("scanned PDF, no text layer",
      "formulas without cached values", "sheet cut at N rows").
    - `engine`: which extractor produced the text (e.g. "pypdfium2",
      "pdfminer.six", "openpyxl").
    - `image`: set for images (text is then a short description).
    """

    text: str
    kind: str
    name: str = ""
    mime: str = "text/plain"
    pages: list[int] = field(default_factory=lambda: [0])
    page_unit: str = "page"
    outline: list[OutlineEntry] = field(default_factory=list)
    structure: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    engine: str | None = None
    image: ImageData | None = None
    # Lazily built by reader.normalize; the indexer may attach a cached one. Not content: left out of ==.
    _normalized: Any = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        return f"Document(kind={self.kind!r}, name={self.name!r}, chars={len(self.text)}, pages={len(self.pages)})"

    def page_of(self, offset: int) -> int:
        """1-based page / slide / sheet number that contains `offset`."""
        return max(1, bisect.bisect_right(self.pages, offset))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (without image bytes or the normalised form); shares nothing with the document."""
        d: dict[str, Any] = {
            "text": self.text, "kind": self.kind, "name": self.name, "mime": self.mime, "pages": list(self.pages),
            "page_unit": self.page_unit, "outline": [e.to_dict() for e in self.outline],
            "structure": copy.deepcopy(self.structure), "warnings": list(self.warnings), "engine": self.engine}
        if self.image is not None:
            d["image"] = {"mime": self.image.mime, "width": self.image.width, "height": self.image.height}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Document":
        d = dict(d)
        d.pop("image", None)  # image bytes are never cached as text
        d["outline"] = [OutlineEntry(**e) for e in d.get("outline", [])]
        return cls(**d)
