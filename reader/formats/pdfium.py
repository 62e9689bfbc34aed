"""A PDF's pages as text and its bookmarks, through PDFium's C API: pypdfium2's raw bindings, not its helpers.

`import pypdfium2` loads every helper class of the package and with them
logging, uuid, argparse and pypdfium2's configuration: ~6 ms of every
`mcp-nextcloud inspect` (issue 17). Reading text needs a dozen C calls, made
here through the bindings `pypdfium2.raw` re-exports (`pypdfium2_raw`), the
way pypdfium2's own helpers make them (PdfDocument, PdfTextPage.
get_text_range, PdfDocument.get_toc). Callers serialise access: PDFium is not
thread-safe (reader/formats/pdf.py holds the lock).
"""
from __future__ import annotations

import ctypes
from typing import Any, Iterator

import pypdfium2_raw as pdfium_c

# PDFium's FPDF_ERR_* codes, as pypdfium2 words them.
_ERRORS = {1: "Unknown error", 2: "File access error", 3: "Data format error", 4: "Incorrect password error",
           5: "Unsupported security scheme error", 6: "Page not found or content error"}
PASSWORD_ERROR = 4

_initialised = False


class PdfiumError(RuntimeError):
    """PDFium could not open the document or one of its pages; `code` is PDFium's FPDF_ERR_* when known."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


def _init_library() -> None:
    """FPDF_InitLibraryWithConfig once per process (a no-op in PDFium when pypdfium2 already did it)."""
    global _initialised
    if not _initialised:
        config = pdfium_c.FPDF_LIBRARY_CONFIG(version=2, m_pUserFontPaths=None, m_pIsolate=None, m_v8EmbedderSlot=0)
        pdfium_c.FPDF_InitLibraryWithConfig(config)
        _initialised = True


class PdfFile:
    """An open PDF (a context manager): its page count, each page's text and its bookmarks."""

    def __init__(self, data: bytes) -> None:
        _init_library()
        self._data = data                      # PDFium reads from this buffer while the document is open
        self.raw = pdfium_c.FPDF_LoadMemDocument64(data, len(data), None)
        self.pages = pdfium_c.FPDF_GetPageCount(self.raw) if self.raw else 0
        if self.pages < 1:
            code = pdfium_c.FPDF_GetLastError()
            self.close()
            raise PdfiumError(f"Failed to load document (PDFium: {_ERRORS.get(code, code)}).", code)

    def __enter__(self) -> PdfFile:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.raw:
            pdfium_c.FPDF_CloseDocument(self.raw)
        self.raw = None

    def page_text(self, index: int, text: Any) -> str:
        """`text(textpage)` for page `index` (0-based), the page and its text page closed after."""
        page = pdfium_c.FPDF_LoadPage(self.raw, index)
        if not page:
            raise PdfiumError("Failed to load page.")
        try:
            textpage = pdfium_c.FPDFText_LoadPage(page)
            if not textpage:
                raise PdfiumError("Failed to load text page.")
            try:
                return text(textpage)
            finally:
                pdfium_c.FPDFText_ClosePage(textpage)
        finally:
            pdfium_c.FPDF_ClosePage(page)

    def bookmarks(self, max_depth: int) -> Iterator[tuple[int, str, int | None]]:
        """Bookmarks as (level from 1, title, 0-based page or None), depth first; a cycle ends its branch."""
        return self._bookmarks(None, 1, max_depth, set())

    def _bookmarks(self, parent: Any, level: int, max_depth: int,
                   seen: set[int]) -> Iterator[tuple[int, str, int | None]]:
        mark = pdfium_c.FPDFBookmark_GetFirstChild(self.raw, parent)
        while mark:   # a NULL pointer is falsy
            address = ctypes.addressof(mark.contents)
            if address in seen:
                break
            seen.add(address)
            yield level, _title(mark), self._page_of(mark)
            if level < max_depth:
                yield from self._bookmarks(mark, level + 1, max_depth, seen)
            mark = pdfium_c.FPDFBookmark_GetNextSibling(self.raw, mark)

    def _page_of(self, mark: Any) -> int | None:
        dest = pdfium_c.FPDFBookmark_GetDest(self.raw, mark)
        if not dest:
            return None
        index = pdfium_c.FPDFDest_GetDestPageIndex(self.raw, dest)
        return index if index >= 0 else None


def _title(mark: Any) -> str:
    size = pdfium_c.FPDFBookmark_GetTitle(mark, None, 0)
    buffer = ctypes.create_string_buffer(size)
    pdfium_c.FPDFBookmark_GetTitle(mark, buffer, size)
    return buffer.raw[:max(0, size - 2)].decode("utf-16-le", errors="replace")


def count_chars(textpage: Any) -> int:
    n = pdfium_c.FPDFText_CountChars(textpage)
    if n < 0:
        raise PdfiumError("Failed to get character count.")
    return n


def page_text(textpage: Any) -> str:
    """The whole text of a text page, as pypdfium2's get_text_range() gives it.

    Characters PDFium leaves out of the text at either end of the page are
    skipped, so it never reads past the range (crbug.com/pdfium/2079).
    """
    first, last = 0, count_chars(textpage) - 1
    while first <= last and pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, first) == -1:
        first += 1
    while first <= last and pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, last) == -1:
        last -= 1
    if first > last:
        return ""
    t_first = pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, first)
    t_last = pdfium_c.FPDFText_GetTextIndexFromCharIndex(textpage, last)
    buffer = (ctypes.c_ushort * (t_last + 2 - t_first))()     # room for the NUL terminator
    written = pdfium_c.FPDFText_GetText(textpage, first, last + 1 - first, buffer)
    return ctypes.string_at(buffer, max(0, written - 1) * 2).decode("utf-16-le", errors="ignore")
