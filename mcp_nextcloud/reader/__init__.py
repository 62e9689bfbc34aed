"""bytes -> Document (text, pages, outline); find; slice.

Pure: no network, no database, no clock. Public API:

    extract(data, name, mime=None, *, limits=DEFAULT_LIMITS) -> Document
    find(doc, query, *, limit=20, context=..., ranked=False, start=0) -> FindResult
    outline(doc, *, offset=None, section=None) -> Outline
    page(doc, offset=0, limit=...) -> Slice
    normalize(text) -> NormalizedText   (serialisable; cached by the indexer)
"""
from __future__ import annotations

from .document import DEFAULT_LIMITS, Document, ImageData, Limits, OutlineEntry, ReaderCode, ReaderError
from .extract import extract
from .find import FindResult, Match, find
from .normalize import NormalizedText, normalize, normalize_query
from .outline import Outline, outline
from .slicing import Slice, page

__all__ = [
    "DEFAULT_LIMITS", "Document", "FindResult", "ImageData", "Limits", "Match", "NormalizedText",
    "Outline", "OutlineEntry", "ReaderCode", "ReaderError", "Slice", "extract", "find", "normalize",
    "normalize_query", "outline", "page",
]
