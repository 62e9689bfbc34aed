"""Images (PNG, JPEG, GIF, WebP): verified with Pillow and handed to the model as an image."""
from __future__ import annotations

import io

from PIL import Image

from ..document import Document, ImageData, Limits, ReaderCode, ReaderError

MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def extract(data: bytes, name: str, limits: Limits) -> Document:
    if len(data) > limits.max_image_bytes:
        raise ReaderError(
            f"image too large to hand to the model ({len(data) // 1024} KiB, limit "
            f"{limits.max_image_bytes // 1024} KiB)", "ask for a smaller or resized copy", code=ReaderCode.TOO_LARGE)
    try:
        with Image.open(io.BytesIO(data)) as img:
            fmt, (width, height) = img.format, img.size
            img.verify()  # checks the file's integrity without decoding every pixel
    except Exception as exc:
        raise ReaderError(f"corrupt image {name!r} ({type(exc).__name__})", "ask for a fresh copy",
                          code=ReaderCode.CORRUPT) from None
    mime = MIMES.get(fmt or "")
    if mime is None:
        raise ReaderError(f"unsupported image format {fmt!r}", "only PNG, JPEG, GIF and WebP are read",
                          code=ReaderCode.UNSUPPORTED)
    text = f"Image {name}: {fmt} {width}x{height} pixels\n"
    doc = Document(text=text, kind="image", name=name, mime=mime, page_unit="page",
                   image=ImageData(data=data, mime=mime, width=width, height=height), engine="pillow")
    if width >= MIN_OCR_SIDE and height >= MIN_OCR_SIDE:
        _add_ocr(doc, data)
    return doc


MIN_OCR_SIDE = 100    # pixels: a smaller image cannot hold a legible line of text at 150 dpi
MAX_OCR_SIDE = 2500   # pixels: a bigger image (a camera photo) is scaled down first, so one costs what a page does


def _add_ocr(doc: Document, data: bytes) -> None:
    """Append the words OCR reads in the image (page 1 stays the description, the text follows it)."""
    from .. import ocr
    from .pdf_ocr import PartOcr, mark

    part = PartOcr()
    found = ocr.engine()
    if found is None:
        part.skipped, part.skip_reason = [0], ocr.MISSING
    else:
        part.engine = found[0]
        try:
            page = ocr.ocr_image(_bounded(data))
        except ocr.OcrError as exc:
            part.failed = [(0, str(exc))]
        else:
            if page.text.strip():
                doc.text += "\n" + page.text
                part.pages[0] = page
    mark(doc, [part])


def _bounded(data: bytes) -> bytes:
    """The image as given, or scaled down to MAX_OCR_SIDE on its long side (as PNG) when it is bigger."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as img:
        if max(img.size) <= MAX_OCR_SIDE:
            return data
        small = img.convert("L")
        small.thumbnail((MAX_OCR_SIDE, MAX_OCR_SIDE))
        buf = io.BytesIO()
        small.save(buf, "PNG")
        return buf.getvalue()
