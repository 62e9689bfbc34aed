"""Plain text: UTF-8 / UTF-16 with BOM, or a cp1252 / latin-1 fallback with a warning."""
from __future__ import annotations

from ..document import Document, Limits
from ._common import decode_text


def extract(data: bytes, name: str, limits: Limits) -> Document:
    text, warnings = decode_text(data)
    return Document(text=text, kind="text", name=name, mime="text/plain", warnings=warnings, engine="text")
