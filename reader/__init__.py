"""bytes -> Document (text, pages, outline); find; slice.

Pure: no network, no database, no clock. Public API:

    extract(data, name, mime=None, *, limits=DEFAULT_LIMITS) -> Document
    find(doc, query, *, limit=20, context=...) -> FindResult
    outline(doc) -> Outline
    page(doc, offset=0, limit=...) -> Slice
    normalize(text) -> NormalizedText   (serialisable; cached by the indexer)
"""
from __future__ import annotations

import importlib
import sys
import types

from .document import DEFAULT_LIMITS, Document, ImageData, Limits, OutlineEntry, ReaderCode, ReaderError
from .find import FindResult, Match, find
from .normalize import NormalizedText, normalize, normalize_query

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

    from .extract import extract
    from .outline import Outline, outline
    from .slicing import Slice, page

__all__ = [
    "DEFAULT_LIMITS", "Document", "FindResult", "ImageData", "Limits", "Match", "NormalizedText",
    "Outline", "OutlineEntry", "ReaderCode", "ReaderError", "Slice", "extract", "find", "normalize",
    "normalize_query", "outline", "page",
]

# Loaded on first use (name -> submodule): a grep needs documents, find and normalize only; extracting,
# outlining and slicing (their regexes, csv, the format table) are paid for by the commands that use them.
_LAZY = {"extract": "extract", "Outline": "outline", "outline": "outline", "Slice": "slicing", "page": "slicing"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'reader' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"reader.{module}"), name)
    globals()[name] = value
    return value


class _Package(types.ModuleType):
    """Keeps `reader.extract` / `reader.outline` the functions once their submodules load.

    The import system binds a loaded submodule on its package (`reader.outline = <module>`); the
    eager imports this file used to do rebound the function over it. Loading lazily, the binding
    is refused instead, and `__getattr__` answers with the function.
    """

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _LAZY:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
