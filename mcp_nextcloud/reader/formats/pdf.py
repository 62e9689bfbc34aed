"""PDF: pypdfium2 first (fast), pdfminer.six as the fallback when pdfium fails or finds no text.

Page start offsets are kept; bookmarks become outline entries, in the bookmark tree's order, pointing
at the heading's offset on its page (or where the bookmark before it on that page points, else the page
start, when the title is not found).

Artefacts of PDF text repaired here, page by page, before any offset is taken
(so pages, lines, bookmarks, find and grep all refer to the repaired text), the
same way for both engines:
- Spacing accents drawn over a letter (TeX: "pr´ef´erable", "`a", "¸ca") are
  joined to the letter ("préférable", "à", "ça") when the character boxes show
  the accent sitting over or under that letter (pdf_accents.py). Backticks and
  carets that are text (code: "echo `date`", "c'4^\\markup") stand beside their
  neighbour and stay.
- Ligature characters (ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ) become their letters. pypdfium2 already
  splits them; pdfminer.six keeps them, so its text is translated.
- A word hyphenated at a line end: pypdfium2 marks it with U+FFFE and drops the
  break; both are put back ("expres-\nsion", what the page shows and what
  pdfminer.six gives). The hyphen is kept because a real hyphen at a line end
  ("well-\nknown") cannot be told apart; find and grep fold it away
  (reader/normalize.py).
- CR and CRLF line ends become LF.
Left as they are (find and grep see through them, reader/normalize.py): soft
hyphens, zero-width characters, words glued or split by the layout.
"""
from __future__ import annotations

import ctypes
import functools
import io
import threading
from typing import Any, Callable

from ..document import Document, Limits, OutlineEntry, ReaderCode, ReaderError
from ..limits import Deadline
from ._common import PagedText
from .pdfium import PASSWORD_ERROR, PdfFile, PdfiumError, count_chars, page_text, pdfium_c
from .pdf_accents import LIGATURES, Box, has_accent_candidates, recompose

# pdfminer logs a warning per damaged object; the application keeps it quiet (cli/logs.py).
# pdfminer.six is imported by the fallback functions that use it: most PDFs never need the second engine,
# and every extraction process would otherwise carry its modules (its memory counts against the per-file cap).
# PDFium is not thread-safe (pypdfium2 docs): in-process callers on several threads take turns.
_PDFIUM_LOCK = threading.Lock()

SCANNED = ("scanned PDF, no text layer: the pages are images; run OCR on the file or ask for a text "
           "version — the words on these pages cannot be searched")
# Bookmarks as pdfium gives them: (level, title, 0-based page index or None).
Toc = list[tuple[int, str, int | None]]
# What pdfium may report that no fallback engine can change: the document is encrypted, or time is up.
FINAL_CODES = (ReaderCode.ENCRYPTED, ReaderCode.TIMEOUT)


def _clean(text: str) -> str:
    # PDFium marks a word hyphenated at a line end with U+FFFE (a noncharacter) and drops
    # the line break; put back what the page shows ("expres-" / "sion"), as pdfminer does.
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufffe", "-\n").translate(LIGATURES)
    return text if not text or text.endswith("\n") else text + "\n"


def _pdfium_page_text(textpage: Any, repair: bool) -> str:
    """One page's text (a raw FPDF_TEXTPAGE); spacing accents over letters recomposed when `repair` (the default)."""
    raw = page_text(textpage)
    if repair and has_accent_candidates(raw):
        raw = recompose(raw, _pdfium_box(textpage, raw))
    return _clean(raw)


@functools.lru_cache(maxsize=1)
def _char_box_function() -> Any:
    """FPDFText_GetCharBox with plain pointer arguments.

    The raw binding converts each of the four double* arguments through its
    declared pointer types, which makes a call ~2x slower; this call runs
    for every accent and its neighbour, so it is declared here with void*
    arguments (same function, same C signature: textpage, index, l, r, b, t).
    """
    proto = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, *([ctypes.c_void_p] * 4))
    address = ctypes.cast(pdfium_c.FPDFText_GetCharBox, ctypes.c_void_p).value
    assert address is not None  # a symbol of the loaded pdfium library
    return proto(address)


def _pdfium_box(textpage: Any, text: str) -> Callable[[int], Box | None]:
    """Box of text[i]: the text index is the char index unless pdfium inserted or dropped characters."""
    same = len(text) == count_chars(textpage)
    handle = ctypes.cast(textpage, ctypes.c_void_p).value
    get_box, char_index = _char_box_function(), pdfium_c.FPDFText_GetCharIndexFromTextIndex
    # One set of out-parameters reused for every call (left, right, bottom, top: pdfium's order).
    left, right, bottom, top = (ctypes.c_double() for _ in range(4))
    addresses = tuple(ctypes.addressof(v) for v in (left, right, bottom, top))

    def box(i: int) -> Box | None:
        if not get_box(handle, i, *addresses):
            return None
        return (left.value, bottom.value, right.value, top.value)

    def mapped_box(i: int) -> Box | None:
        index = char_index(textpage, i)
        return box(index) if index >= 0 else None

    return box if same else mapped_box


def _place(out: PagedText, page_texts: list[str], toc: Toc) -> None:
    """Turn (level, title, 0-based page) bookmarks into outline entries with offsets, in bookmark order.

    The bookmark tree's order is kept (a parent before its children): sorting by offset would put a
    child whose title is not on its page (placed at the page start) before the parent found lower on
    that page, and the outline would hang it under the previous chapter. On one page, a bookmark's
    title is looked for after the previous bookmark's, and a title not found there is placed at the
    previous bookmark's offset, so offsets never go back in the bookmark order on a page.
    """
    last: dict[int, int] = {}   # per page: the previous bookmark's offset in the page text
    for level, title, index in toc:
        if index is None or not 0 <= index < len(page_texts):
            continue
        wanted, previous = title.strip(), last.get(index)
        since = 0 if previous is None else previous + 1
        found = page_texts[index].find(wanted, since) if wanted else -1
        last[index] = found if found >= 0 else previous or 0
        out.outline.append(OutlineEntry(title=wanted, level=level, offset=out.pages[index] + last[index],
                                        page=index + 1))


class PdfPart:
    """Pages `first`.. of a PDF as pdfium reads them; the part that holds page 1 also reads the bookmarks.

    A whole document is one part; a big one may be read as several parts (in separate processes, by
    indexer.jobs.oneshot) and `assemble` gives the same Document either way. A plain class: dataclasses
    costs the read path ~5 ms of imports.
    """

    def __init__(self, total: int, first: int) -> None:
        self.total = total                   # pages in the document
        self.first = first                   # 0-based index of texts[0]
        self.texts: list[str] = []
        self.toc: Toc | None = None          # None: this part did not read the bookmarks
        self.toc_failed = False
        self.ocr: Any = None                 # pdf_ocr.PartOcr when pages had no text layer


def part_pages(total: int, limits: Limits, part: int, parts: int, min_pages: int = 1) -> range:
    """The pages (0-based) of `part` when the first min(total, max_pages) pages go to `parts` runs in order.

    Fewer runs are used when a run would hold under `min_pages` pages; a part beyond them reads nothing.
    """
    count = min(total, limits.max_pages)
    used = max(1, min(parts, count // max(1, min_pages)))
    if part >= used:
        return range(count, count)
    return range(part * count // used, (part + 1) * count // used)


def read_part(data: bytes, name: str, limits: Limits, part: int = 0, parts: int = 1, *, min_pages: int = 1,
              deadline: Deadline | None = None, repair: bool = True) -> PdfPart:
    """Read one part's pages with pdfium (see part_pages); ReaderError for an encrypted file or a timeout."""
    deadline = deadline or Deadline(limits.max_seconds)
    with _PDFIUM_LOCK:
        return _pdfium_part(data, limits, part, parts, min_pages, deadline, repair)


def _pdfium_part(data: bytes, limits: Limits, part: int, parts: int, min_pages: int, deadline: Deadline,
                 repair: bool) -> PdfPart:
    try:
        pdf = PdfFile(data)
    except PdfiumError as exc:
        if exc.code == PASSWORD_ERROR:
            raise _encrypted() from None
        raise
    with pdf:
        pages = part_pages(pdf.pages, limits, part, parts, min_pages)
        out = PdfPart(total=pdf.pages, first=pages.start)
        for i in pages:
            deadline.check()
            out.texts.append(pdf.page_text(i, lambda textpage: _pdfium_page_text(textpage, repair)))
        if not all(t.strip() for t in out.texts):
            from .pdf_ocr import ocr_empty_pages   # here: a PDF with a text layer never loads the OCR code

            out.ocr = ocr_empty_pages(data, out.first, out.texts, deadline)
        if part == 0:
            out.toc = []
            try:
                out.toc.extend(pdf.bookmarks(max_depth=8))
            except Exception:  # a broken outline must not cost the text (nor the bookmarks read before)
                out.toc_failed = True
        return out


def assemble(name: str, limits: Limits, parts: list[PdfPart]) -> Document:
    """The Document of a PDF read by pdfium as `parts` (in page order, together every page read)."""
    out = PagedText()
    texts = [text for p in sorted(parts, key=lambda p: p.first) for text in p.texts]
    for text in texts:
        out.new_page()
        out.add(text)
    warnings: list[str] = []
    total = parts[0].total
    if total > limits.max_pages:
        warnings.append(f"PDF cut at {limits.max_pages} of {total} pages")
    head = next((p for p in parts if p.toc is not None), None)
    if head is not None and head.toc_failed:
        warnings.append("PDF bookmarks could not be read")
    _place(out, texts, head.toc if head is not None and head.toc else [])
    doc = out.build("pdf", name, "application/pdf", warnings=warnings, engine="pypdfium2")
    if any(p.ocr is not None for p in parts):
        from .pdf_ocr import mark

        mark(doc, [p.ocr for p in parts if p.ocr is not None])
    return doc


def _with_pdfium(data: bytes, name: str, limits: Limits, deadline: Deadline, *, repair: bool = True) -> Document:
    return assemble(name, limits, [_pdfium_part(data, limits, 0, 1, 1, deadline, repair)])


def _pdfminer_toc(data: bytes) -> Toc:
    from pdfminer.pdfdocument import PDFDocument, PDFNoOutlines
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import resolve1

    doc = PDFDocument(PDFParser(io.BytesIO(data)))
    pages = {p.pageid: i for i, p in enumerate(PDFPage.create_pages(doc))}
    toc: Toc = []
    try:
        outlines = list(doc.get_outlines())
    except PDFNoOutlines:
        return toc
    for level, title, dest, action, _se in outlines:
        if dest is None and action:
            action = resolve1(action)
            dest = action.get("D") if isinstance(action, dict) else None
        dest = resolve1(dest)
        if isinstance(dest, (bytes, str)) or (dest is not None and not isinstance(dest, (list, dict))):
            dest = resolve1(doc.get_dest(getattr(dest, "name", dest)))
        if isinstance(dest, dict):
            dest = resolve1(dest.get("D"))
        index = None
        if isinstance(dest, list) and dest:
            ref = dest[0]
            index = pages.get(getattr(ref, "objid", None))
        toc.append((level, str(title), index))
    return toc


def _pdfminer_page_text(layout: Any, repair: bool = True) -> str:
    """A pdfminer page's text (what its text boxes' get_text() give), accents recomposed by their LTChar boxes."""
    from pdfminer.layout import LTChar, LTText, LTTextContainer

    chars: list[str] = []
    boxes: list[Box | None] = []

    def walk(container: Any) -> None:
        for item in container:
            if isinstance(item, LTChar):
                piece, where = item.get_text(), (item.x0, item.y0, item.x1, item.y1)
            elif isinstance(item, LTTextContainer):
                walk(item)
                continue
            elif isinstance(item, LTText):  # LTAnno: a space or newline the layout analysis inserted
                piece, where = item.get_text(), None
            else:
                continue
            chars.append(piece)
            boxes.extend([where] * len(piece))

    for element in layout:
        if isinstance(element, LTTextContainer):
            walk(element)
    text = "".join(chars)
    if repair and has_accent_candidates(text):
        text = recompose(text, boxes.__getitem__)
    return _clean(text)


def extract_pdfium(data: bytes, name: str, limits: Limits, *, repair: bool = True) -> Document:
    """Extract with pypdfium2 only; repair=False leaves spacing accents apart (to measure what repair costs)."""
    with _PDFIUM_LOCK:
        return _with_pdfium(data, name, limits, Deadline(limits.max_seconds), repair=repair)


def extract_pdfminer(data: bytes, name: str, limits: Limits, deadline: Deadline | None = None, *,
                     repair: bool = True) -> Document:
    """Extract with pdfminer.six only (the fallback engine; also used to compare engines)."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams
    from pdfminer.pdfdocument import PDFEncryptionError, PDFPasswordIncorrect

    deadline = deadline or Deadline(limits.max_seconds)
    out = PagedText()
    texts: list[str] = []
    warnings: list[str] = []
    try:
        for layout in extract_pages(io.BytesIO(data), laparams=LAParams(), maxpages=limits.max_pages + 1):
            deadline.check()
            if len(texts) >= limits.max_pages:
                warnings.append(f"PDF cut at {limits.max_pages} pages")
                break
            text = _pdfminer_page_text(layout, repair)
            out.new_page()
            out.add(text)
            texts.append(text)
    except (PDFPasswordIncorrect, PDFEncryptionError):
        raise _encrypted() from None
    try:
        toc = _pdfminer_toc(data)
    except Exception:  # damaged files often have no usable outline; the text still counts
        toc = []
    _place(out, texts, toc)
    return out.build("pdf", name, "application/pdf", warnings=warnings, engine="pdfminer.six")


def _corrupt(name: str) -> ReaderError:
    return ReaderError(f"corrupt PDF {name!r}: neither pdfium nor pdfminer could read it (truncated or damaged)",
                       "ask for a fresh copy", code=ReaderCode.CORRUPT)


def _encrypted() -> ReaderError:
    return ReaderError("encrypted PDF", "ask the owner for an unencrypted copy", code=ReaderCode.ENCRYPTED)


def extract(data: bytes, name: str, limits: Limits) -> Document:
    if b"%PDF-" not in data[:1024]:
        raise ReaderError(f"{name!r} is not a PDF (no %PDF header)", "ask for a fresh copy", code=ReaderCode.CORRUPT)
    deadline = Deadline(limits.max_seconds)
    primary: Document | None = None
    try:
        with _PDFIUM_LOCK:
            primary = _with_pdfium(data, name, limits, deadline)
        if primary.text.strip():
            return primary
    except ReaderError as exc:
        if exc.code in FINAL_CODES:
            raise
    except Exception:  # pdfium refused the file: pdfminer is more lenient with damaged files
        primary = None
    try:
        fallback = extract_pdfminer(data, name, limits, deadline)
    except ReaderError as exc:
        if exc.code in FINAL_CODES or primary is None:
            raise
        fallback = None
    except Exception:
        if primary is None:
            raise _corrupt(name) from None
        fallback = None
    if fallback is not None and fallback.text.strip():
        if primary is None:
            fallback.warnings.append("damaged PDF: pdfium could not read it; pdfminer.six recovered "
                                     "the text, which may be incomplete")
        return fallback
    if primary is None:  # pdfium failed and pdfminer found no text: nothing trustworthy to return
        raise _corrupt(name)
    primary.warnings.append(SCANNED)   # beside what OCR said (pdf_ocr.mark), when it read nothing
    return primary
