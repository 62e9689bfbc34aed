"""One converter per format (markitdown style): adding a format is adding a file.

Each module exposes `extract(data: bytes, name: str, limits: Limits) -> Document`.
`CONVERTERS` maps a Document kind to the module that produces it; modules are
imported lazily so reading a text file never loads pdfium or openpyxl.
"""
from __future__ import annotations

import importlib
from typing import Callable

from ..document import Document, Limits

CONVERTERS: dict[str, str] = {
    "text": "text",
    "markdown": "markdown",
    "csv": "csvfile",
    "json": "jsonfile",
    "html": "htmlfile",
    "pdf": "pdf",
    "xlsx": "xlsx",
    "pptx": "pptxfile",
    "docx": "docxfile",
    "odt": "odf",
    "ods": "odf",
    "odp": "odf",
    "image": "image",
}


def converter(kind: str) -> Callable[[bytes, str, Limits], Document]:
    """The `extract` function of the module that handles `kind`."""
    module = importlib.import_module(f"{__name__}.{CONVERTERS[kind]}")
    extract: Callable[[bytes, str, Limits], Document] = module.extract
    return extract
