"""The extraction pool: capped worker processes; failures and hangs are recorded, never raised."""
from __future__ import annotations

import pytest

from indexer.models import FileMeta
from indexer.jobs.pool import ExtractionPool, index_bytes
from reader.document import Limits, ReaderError


def test_pool_extracts_and_prepares_rows(fixture_docs):
    with ExtractionPool(2) as pool:
        futures = [pool.submit((fixture_docs / n).read_bytes(), n, None) for n in ("manual.md", "data.csv")]
        docs = [f.result(timeout=60) for f in futures]
    assert docs[0].kind == "markdown" and "Manual" in docs[0].text
    assert docs[1].kind == "csv"
    assert docs[0].__dict__["_index_prepared"].chars == len(docs[0].text)  # rows made in the worker


def test_failure_is_a_reader_error_and_the_worker_keeps_serving(fixture_bad, fixture_docs):
    with ExtractionPool(1) as pool:
        with pytest.raises(ReaderError) as err:
            pool.submit((fixture_bad / "encrypted.pdf").read_bytes(), "encrypted.pdf", None).result(timeout=60)
        assert "encrypted" in str(err.value).lower()
        doc = pool.submit((fixture_docs / "manual.md").read_bytes(), "manual.md", None).result(timeout=60)
        assert doc.text


def test_too_large_is_refused_before_any_work():
    with ExtractionPool(1, limits=Limits(max_bytes=10)) as pool:
        with pytest.raises(ReaderError) as err:
            pool.extract(b"x" * 11, "big.txt", None)
    assert err.value.code == "too_large" and "do not retry" in str(err.value)


def test_a_hanging_extraction_is_killed_and_recorded(index, fixture_docs):
    # A time budget no real extraction meets: the worker is killed and replaced.
    data = (fixture_docs / "manual.pdf").read_bytes()
    w = index.writer()
    rec, _ = w.upsert(FileMeta(path="/slow.pdf", source="local", file_id=None, etag=None, size=len(data),
                               mtime=1.0, mime="application/pdf"))
    with ExtractionPool(1, limits=Limits(max_seconds=0.0), grace_seconds=0.0) as pool:
        out = index_bytes(w, rec, data, pool)
        assert out.status == "failed" and "longer than" in out.reason and "do not retry" in out.reason
        # Not retried until the file changes.
        again, needs = w.upsert(FileMeta(path="/slow.pdf", source="local", file_id=None, etag=None,
                                         size=len(data), mtime=1.0, mime="application/pdf"))
        assert not needs and again.status == "failed"
    with ExtractionPool(1) as pool:  # with a sane budget the same file indexes fine
        changed, needs = w.upsert(FileMeta(path="/slow.pdf", source="local", file_id=None, etag=None,
                                           size=len(data), mtime=2.0, mime="application/pdf"))
        assert needs
        assert index_bytes(w, changed, data, pool).status == "indexed"
    assert index.grep("manual").total >= 1
