"""Shared helpers for the indexer tests: a fresh index, a counting extraction pool, text documents."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

from indexer.models import FileMeta, FileRecord
from indexer.pipeline import ExtractionPool
from indexer.store import Index, IndexWriter
from reader.document import Document


class CountingPool(ExtractionPool):
    """The real ExtractionPool, counting how many extractions it actually ran (and of which names)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.names: list[str] = []
        self._count_lock = threading.Lock()

    def extract(self, data: bytes, name: str, mime: str | None) -> Document:
        with self._count_lock:
            self.names.append(name)
        return super().extract(data, name, mime)

    @property
    def count(self) -> int:
        return len(self.names)


def _put_text(writer: IndexWriter, path: str, text: str, *, source: str = "local", file_id: int | None = None,
             etag: str | None = None, mtime: float = 1_700_000_000.0, kind: str = "text",
             pages: list[int] | None = None) -> FileRecord:
    """Upsert a file and store `text` as its extracted Document (no extraction process involved)."""
    rec, needs = writer.upsert(FileMeta(path=path, source=source, file_id=file_id, etag=etag, size=len(text),
                                        mtime=mtime, mime="text/plain"))
    if needs:
        writer.store_document(rec.id, Document(text=text, kind=kind, name=path.rsplit("/", 1)[-1],
                                               pages=pages or [0], engine="test"))
    return writer.record(rec.id)


@pytest.fixture
def index(tmp_path: Path):
    ix = Index.open(tmp_path / "index.db")
    yield ix
    ix.close()


@pytest.fixture
def counting_pool():
    pool = CountingPool(workers=2)
    yield pool
    pool.close()


@pytest.fixture
def put_text():
    """The `_put_text` helper (test modules cannot import conftest under --import-mode=importlib)."""
    return _put_text


@pytest.fixture
def pool_class():
    return CountingPool
