"""A PDF's pages as text and its bookmarks, through PDFium's C API: the library pypdfium2 ships, not its helpers.

`import pypdfium2` loads every helper class of the package and with them
logging, uuid, argparse and pypdfium2's configuration: ~6 ms of every
`mcp-nextcloud inspect` (issue 17). Even its raw bindings (`pypdfium2_raw`)
cost ~14 ms: thousands of ctypes prototypes, and ctypes.util (subprocess,
tempfile...), pathlib and platform to find the library. Reading text needs
a dozen C calls, so the library file pypdfium2_raw ships is opened here
directly and only those functions are declared, with the signatures
pypdfium2_raw/bindings.py gives them; where the file is not found (another
platform, another package layout) pypdfium2_raw itself is used. The calls
are made the way pypdfium2's own helpers make them (PdfDocument,
PdfTextPage.get_text_range, PdfDocument.get_toc). Callers serialise access:
PDFium is not thread-safe (reader/formats/pdf.py holds the lock).
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from ctypes import POINTER, c_char, c_double, c_int, c_size_t, c_uint, c_ulong, c_ushort, c_void_p
from typing import Any, Callable, Iterator


# Opaque handles and the init config, as pypdfium2_raw/bindings.py declares them (PDFium's fpdfview.h, fpdf_doc.h,
# fpdf_text.h): a handle is a pointer to an incomplete struct, distinct per kind so one cannot pass for another.
class _Document(ctypes.Structure):
    pass


class _Page(ctypes.Structure):
    pass


class _TextPage(ctypes.Structure):
    pass


class _Bookmark(ctypes.Structure):
    pass


class _Dest(ctypes.Structure):
    pass


FPDF_DOCUMENT, FPDF_PAGE, FPDF_TEXTPAGE = POINTER(_Document), POINTER(_Page), POINTER(_TextPage)
FPDF_BOOKMARK, FPDF_DEST = POINTER(_Bookmark), POINTER(_Dest)
FPDF_BOOL, FPDF_BYTESTRING = c_int, POINTER(c_char)


class FPDF_LIBRARY_CONFIG(ctypes.Structure):
    """fpdfview.h's FPDF_LIBRARY_CONFIG_, every field of it (PDFium reads those its `version` names)."""

    _fields_ = (
        ("version", c_int),
        ("m_pUserFontPaths", POINTER(POINTER(c_char))),
        ("m_pIsolate", c_void_p),
        ("m_v8EmbedderSlot", c_uint),
        ("m_pPlatform", c_void_p),
        ("m_RendererType", c_int),          # FPDF_RENDERER_TYPE, an enum
        ("m_FontLibraryType", c_int),       # FPDF_FONT_BACKEND_TYPE, an enum
        ("m_BrotliEnabled", FPDF_BOOL),
        ("m_IsolatePerDocument", FPDF_BOOL),
    )


# Every function this module and reader/formats/pdf.py call: name -> (restype, argtypes), copied from
# pypdfium2_raw/bindings.py (POINTER(None) there is c_void_p here, FPDF_DWORD is c_ulong).
PROTOTYPES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "FPDF_InitLibraryWithConfig": (None, (POINTER(FPDF_LIBRARY_CONFIG),)),
    "FPDF_LoadMemDocument64": (FPDF_DOCUMENT, (c_void_p, c_size_t, FPDF_BYTESTRING)),
    "FPDF_GetLastError": (c_ulong, ()),
    "FPDF_GetPageCount": (c_int, (FPDF_DOCUMENT,)),
    "FPDF_LoadPage": (FPDF_PAGE, (FPDF_DOCUMENT, c_int)),
    "FPDF_ClosePage": (None, (FPDF_PAGE,)),
    "FPDF_CloseDocument": (None, (FPDF_DOCUMENT,)),
    "FPDFBookmark_GetFirstChild": (FPDF_BOOKMARK, (FPDF_DOCUMENT, FPDF_BOOKMARK)),
    "FPDFBookmark_GetNextSibling": (FPDF_BOOKMARK, (FPDF_DOCUMENT, FPDF_BOOKMARK)),
    "FPDFBookmark_GetTitle": (c_ulong, (FPDF_BOOKMARK, c_void_p, c_ulong)),
    "FPDFBookmark_GetDest": (FPDF_DEST, (FPDF_DOCUMENT, FPDF_BOOKMARK)),
    "FPDFDest_GetDestPageIndex": (c_int, (FPDF_DOCUMENT, FPDF_DEST)),
    "FPDFText_LoadPage": (FPDF_TEXTPAGE, (FPDF_PAGE,)),
    "FPDFText_ClosePage": (None, (FPDF_TEXTPAGE,)),
    "FPDFText_CountChars": (c_int, (FPDF_TEXTPAGE,)),
    "FPDFText_GetText": (c_int, (FPDF_TEXTPAGE, c_int, c_int, POINTER(c_ushort))),
    "FPDFText_GetCharBox": (FPDF_BOOL, (FPDF_TEXTPAGE, c_int, *(POINTER(c_double),) * 4)),
    "FPDFText_GetTextIndexFromCharIndex": (c_int, (FPDF_TEXTPAGE, c_int)),
    "FPDFText_GetCharIndexFromTextIndex": (c_int, (FPDF_TEXTPAGE, c_int)),
}
# The file pypdfium2_raw ships in its package folder, named as its bindings.py names it. Only where ctypes.CDLL is
# the right loader for it (Windows builds may call for another convention): elsewhere pypdfium2_raw loads it.
_LIBRARY_FILE = {"linux": "libpdfium.so", "darwin": "libpdfium.dylib"}.get(sys.platform)


class _Bindings:
    """The functions of PROTOTYPES and FPDF_LIBRARY_CONFIG, under the names pypdfium2_raw gives them."""

    FPDF_LIBRARY_CONFIG = FPDF_LIBRARY_CONFIG

    def __init__(self, library: ctypes.CDLL) -> None:
        for name, (restype, argtypes) in PROTOTYPES.items():
            function = getattr(library, name)
            function.restype, function.argtypes = restype, argtypes
            setattr(self, name, function)


def library_file(folders: list[str] | None = None) -> str | None:
    """Where pypdfium2_raw's pdfium library is (its package folders by default, found without importing it)."""
    if _LIBRARY_FILE is None:
        return None
    if folders is None:
        spec = importlib.util.find_spec("pypdfium2_raw")
        folders = list(spec.submodule_search_locations or ()) if spec else []
    for folder in folders:
        path = os.path.join(folder, _LIBRARY_FILE)
        if os.path.isfile(path):
            return path
    return None


def load(folders: list[str] | None = None) -> Any:
    """The bindings: the library file in `folders` (see library_file) opened directly, else pypdfium2_raw's."""
    path = library_file(folders)
    if path is not None:
        try:
            return _Bindings(ctypes.CDLL(path))
        except (OSError, AttributeError):   # not loadable here, or a symbol missing: pypdfium2_raw knows better
            pass
    import pypdfium2_raw

    return pypdfium2_raw


# Loaded when the module is: a process that forks readers (indexer/jobs/oneshot.py) opens it once for all of them.
pdfium_c = load()

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
    """FPDF_InitLibraryWithConfig once per process (a no-op in PDFium when pypdfium2 already did it).

    A forked child inherits the flag with the library's state: initialised in the parent, it stays so.
    """
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

    def page_text(self, index: int, text: Callable[[Any], str]) -> str:
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
    n: int = pdfium_c.FPDFText_CountChars(textpage)
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
