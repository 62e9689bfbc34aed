"""Shared helpers for the reader tests: read and extract the sample files once per session."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from mcp_nextcloud.reader.document import Document
from mcp_nextcloud.reader.extract import extract


@pytest.fixture(scope="session")
def extracted(fixture_docs: Path) -> Callable[[str], Document]:
    """extracted("manual.pdf") -> the Document of fixtures/docs/<name>, extracted once per session."""
    cache: dict[str, Document] = {}

    def get(name: str) -> Document:
        if name not in cache:
            cache[name] = extract((fixture_docs / name).read_bytes(), name)
        return cache[name]

    return get
