"""Images (PNG, JPEG, GIF, WebP): verified with Pillow and handed to the model as an image."""
from __future__ import annotations

import io

from PIL import Image

from ..document import Document, ImageData, Limits, ReaderError

MIMES = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp"}


def extract(data: bytes, name: str, limits: Limits) -> Document:
    if len(data) > limits.max_image_bytes:
        raise ReaderError(
            f"image too large to hand to the model ({len(data) // 1024} KiB, limit "
            f"{limits.max_image_bytes // 1024} KiB)", "ask for a smaller or resized copy", code="too_large")
    try:
        with Image.open(io.BytesIO(data)) as img:
            fmt, (width, height) = img.format, img.size
            img.verify()  # checks the file's integrity without decoding every pixel
    except Exception as exc:
        raise ReaderError(f"corrupt image {name!r} ({type(exc).__name__})", "ask for a fresh copy",
                          retry_text="do not retry until it changes", code="corrupt") from None
    mime = MIMES.get(fmt or "")
    if mime is None:
        raise ReaderError(f"unsupported image format {fmt!r}", "only PNG, JPEG, GIF and WebP are read",
                          code="unsupported")
    text = f"Image {name}: {fmt} {width}x{height} pixels\n"
    return Document(text=text, kind="image", name=name, mime=mime, page_unit="page",
                    image=ImageData(data=data, mime=mime, width=width, height=height), engine="pillow")
