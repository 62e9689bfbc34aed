"""PDF: pypdfium2 first (fast), pdfminer.six as the fallback when pdfium fails or finds no text.

Page start offsets are kept; bookmarks become outline entries pointing at the
heading's offset on its page (or the page start when the title is not found).
"""
from __future__ import annotations

import io
import threading

from ..document import Document, Limits, OutlineEntry, ReaderError
from ..limits import Deadline
from ._common import PagedText

# pdfminer logs a warning per damaged object; the application keeps it quiet (server/cli/logs.py).
# PDFium is not thread-safe (pypdfium2 docs): in-process callers on several threads take turns.
_PDFIUM_LOCK = threading.Lock()

ENCRYPTED = ("encrypted PDF: ask the owner for an unencrypted copy; do not retry")
SCANNED = ("scanned PDF, no text layer: the pages are images; run OCR on the file or ask for a text "
           "version — the words on these pages cannot be searched")


def _clean(text: str) -> str:
    # PDFium marks a word hyphenated at a line end with U+FFFE (a noncharacter) and drops
    # the line break; put back what the page shows ("expres-" / "sion"), as pdfminer does.
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\ufffe", "-\n")
    return text if not text or text.endswith("\n") else text + "\n"


def _place(out: PagedText, page_texts: list[str], toc: list[tuple[int, str, int | None]]) -> None:
    """Turn (level, title, 0-based page) bookmarks into outline entries with offsets."""
    cursor: dict[int, int] = {}
    for level, title, index in toc:
        if index is None or not 0 <= index < len(page_texts):
            continue
        page_text = page_texts[index]
        start = out.pages[index]
        found = page_text.find(title.strip(), cursor.get(index, 0)) if title.strip() else -1
        offset = start + found if found >= 0 else start
        if found >= 0:
            cursor[index] = found + 1
        out.outline.append(OutlineEntry(title=title.strip(), level=level, offset=offset, page=index + 1))
    out.outline.sort(key=lambda e: e.offset)


def _with_pdfium(data: bytes, name: str, limits: Limits, deadline: Deadline) -> Document:
    import pypdfium2 as pdfium

    try:
        pdf = pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        if "password" in str(exc).lower():
            raise ReaderError(ENCRYPTED, code="encrypted") from None
        raise
    try:
        out = PagedText()
        warnings: list[str] = []
        total = len(pdf)
        texts: list[str] = []
        for i in range(min(total, limits.max_pages)):
            deadline.check()
            page = pdf[i]
            textpage = page.get_textpage()
            try:
                text = _clean(textpage.get_text_range())
            finally:
                textpage.close()
                page.close()
            out.new_page()
            out.add(text)
            texts.append(text)
        if total > limits.max_pages:
            warnings.append(f"PDF cut at {limits.max_pages} of {total} pages")
        toc = []
        try:
            for bm in pdf.get_toc(max_depth=8):
                dest = bm.get_dest()
                toc.append((bm.level + 1, bm.get_title() or "", dest.get_index() if dest else None))
        except Exception:  # a broken outline must not cost the text
            warnings.append("PDF bookmarks could not be read")
        _place(out, texts, toc)
        return out.build("pdf", name, "application/pdf", warnings=warnings, engine="pypdfium2")
    finally:
        pdf.close()


def _pdfminer_toc(data: bytes) -> list[tuple[int, str, int | None]]:
    from pdfminer.pdfdocument import PDFDocument, PDFNoOutlines
    from pdfminer.pdfpage import PDFPage
    from pdfminer.pdfparser import PDFParser
    from pdfminer.pdftypes import resolve1

    doc = PDFDocument(PDFParser(io.BytesIO(data)))
    pages = {p.pageid: i for i, p in enumerate(PDFPage.create_pages(doc))}
    toc: list[tuple[int, str, int | None]] = []
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


def extract_pdfminer(data: bytes, name: str, limits: Limits, deadline: Deadline | None = None) -> Document:
    """Extract with pdfminer.six only (the fallback engine; also used to compare engines)."""
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LAParams, LTTextContainer
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
            text = _clean("".join(el.get_text() for el in layout if isinstance(el, LTTextContainer)))
            out.new_page()
            out.add(text)
            texts.append(text)
    except (PDFPasswordIncorrect, PDFEncryptionError):
        raise ReaderError(ENCRYPTED, code="encrypted") from None
    try:
        toc = _pdfminer_toc(data)
    except Exception:  # damaged files often have no usable outline; the text still counts
        toc = []
    _place(out, texts, toc)
    return out.build("pdf", name, "application/pdf", warnings=warnings, engine="pdfminer.six")


def _corrupt(name: str) -> ReaderError:
    return ReaderError(f"corrupt PDF {name!r}: neither pdfium nor pdfminer could read it (truncated or "
                       "damaged); ask for a fresh copy; do not retry until it changes", code="corrupt")


def extract(data: bytes, name: str, limits: Limits) -> Document:
    if b"%PDF-" not in data[:1024]:
        raise ReaderError(f"{name!r} is not a PDF (no %PDF header): ask for a fresh copy; do not retry",
                          code="corrupt")
    deadline = Deadline(limits.max_seconds)
    primary: Document | None = None
    try:
        with _PDFIUM_LOCK:
            primary = _with_pdfium(data, name, limits, deadline)
        if primary.text.strip():
            return primary
    except ReaderError as exc:
        if exc.code in ("encrypted", "timeout"):
            raise
    except Exception:  # pdfium refused the file: pdfminer is more lenient with damaged files
        primary = None
    try:
        fallback = extract_pdfminer(data, name, limits, deadline)
    except ReaderError as exc:
        if exc.code in ("encrypted", "timeout") or primary is None:
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
    primary.warnings.append(SCANNED)
    return primary
