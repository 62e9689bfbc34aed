"""Scanned PDF pages: the pages pdfium found no text on are rendered at reader.ocr.DPI and OCR'd.

Called by reader/formats/pdf.py while it holds the PDFium lock, per part (so a
big PDF read in several processes OCRs its pages in each). Each page is
bounded by reader.ocr (time and memory); the file's deadline bounds them all.
`mark` records on the Document which pages are OCR text and how sure the
engine was, in `structure["ocr"]` and a warning, so files_read and
files_grep can say so.
"""
from __future__ import annotations

import io
import time
from typing import Any

from ..document import Document
from ..limits import Deadline
from .. import ocr

MAX_OCR_PAGES = 200        # pages of one file OCR'd at most (the rest say so)
RESERVE_SECONDS = 3.0      # of the file's deadline kept for what follows OCR (pdfminer, assembling)


class PartOcr:
    """What OCR made of one part's empty pages: {0-based page: OcrPage}, failures, and pages left unread."""

    def __init__(self) -> None:
        self.pages: dict[int, ocr.OcrPage] = {}
        self.failed: list[tuple[int, str]] = []
        self.skipped: list[int] = []      # not OCR'd: no engine here, over MAX_OCR_PAGES, or out of time
        self.skip_reason: str | None = None
        self.engine: str | None = None


BLANK = 250               # a rendered page whose darkest pixel is lighter than this holds nothing to read


def _render_png(data: bytes, index: int) -> bytes | None:
    """Page `index` rendered at ocr.DPI as a grayscale PNG; None for a blank page (no OCR run for it)."""
    import pypdfium2

    pdf = pypdfium2.PdfDocument(data)
    try:
        image = pdf[index].render(scale=ocr.DPI / 72, grayscale=True).to_pil()
    finally:
        pdf.close()
    darkest = image.getextrema()[0]
    if isinstance(darkest, (int, float)) and darkest > BLANK:
        return None
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def ocr_empty_pages(data: bytes, first: int, texts: list[str], deadline: Deadline) -> PartOcr | None:
    """OCR the pages of `texts` (page `first` onwards) with no text; fill `texts` in place. None: none empty."""
    empty = [k for k, t in enumerate(texts) if not t.strip()]
    if not empty:
        return None
    out = PartOcr()
    found = ocr.engine()
    if found is None:
        out.skipped, out.skip_reason = [first + k for k in empty], ocr.MISSING
        return out
    out.engine = found[0]
    for n, k in enumerate(empty):
        left = min(ocr.OCR_SECONDS, deadline.end - time.monotonic() - RESERVE_SECONDS)
        if n >= MAX_OCR_PAGES or left < 1.0:
            # Keep what was read: a long scan is indexed in part rather than failing as a whole at the deadline.
            out.skipped.append(first + k)
            out.skip_reason = (f"only the first {MAX_OCR_PAGES} scanned pages are OCR'd" if n >= MAX_OCR_PAGES
                               else f"the file's {deadline.seconds:g} s extraction budget ran out")
            continue
        png = _render_png(data, first + k)
        if png is None:
            continue   # a blank page (a separator in a text PDF): nothing to read, nothing to say
        try:
            page = ocr.ocr_image(png, left)
        except ocr.OcrError as exc:
            out.failed.append((first + k, str(exc)))
            continue
        if page.text.strip():
            texts[k] = page.text
            out.pages[first + k] = page
    return out


def _ranges(pages: list[int]) -> str:
    """[0, 1, 2, 5] (0-based) -> "1-3, 6" (1-based)."""
    spans: list[list[int]] = []
    for p in sorted(pages):
        if spans and spans[-1][1] == p:
            spans[-1][1] = p + 1
        else:
            spans.append([p, p + 1])
    return ", ".join(f"{a + 1}" if b == a + 1 else f"{a + 1}-{b}" for a, b in spans)


def mark(doc: Document, parts: list[PartOcr]) -> None:
    """Record on `doc` which pages are OCR text (with confidence) and which scanned pages were not read."""
    pages = {p: pg for part in parts for p, pg in part.pages.items()}
    skipped = [p for part in parts for p in part.skipped]
    failed = [f for part in parts for f in part.failed]
    engine = next((part.engine for part in parts if part.engine), None)
    info: dict[str, Any] = {}
    if pages:
        info["engine"] = engine
        info["pages"] = {str(p + 1): pg.confidence for p, pg in sorted(pages.items())}
        conf = sum(pg.confidence for pg in pages.values()) / len(pages)
        doc.warnings.append(f"page(s) {_ranges(list(pages))} are OCR text ({engine}, mean confidence "
                            f"{conf:.2f}): words may be misread")
        doc.engine = f"{doc.engine}+{engine}"
    if skipped:
        info["notRead"] = len(skipped)
        reason = next((part.skip_reason for part in parts if part.skip_reason), "")
        doc.warnings.append(f"page(s) {_ranges(skipped)} are scanned images without text, not OCR'd: {reason}")
        if engine is None:
            info["missing"] = True
            doc.engine = f"{doc.engine}+no-ocr"
    if failed:
        info["failed"] = len(failed)
        doc.warnings.append(f"OCR failed on page(s) {_ranges([p for p, _ in failed])}: {failed[0][1]}")
    if info:
        doc.structure = {**doc.structure, "ocr": info}
