"""The extraction pool: capped worker processes; failures and hangs are recorded, never raised."""
from __future__ import annotations

import pytest

from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.indexer.jobs.child import SMALLER_COPY
from mcp_nextcloud.indexer.jobs.pool import ExtractionPool, index_bytes
from mcp_nextcloud.reader.document import Limits, ReaderError


def test_pool_extracts_and_prepares_rows(fixture_docs):
    with ExtractionPool(2) as pool:
        futures = [pool.submit((fixture_docs / n).read_bytes(), n, None) for n in ("manual.md", "data.csv")]
        out = [f.result(timeout=60) for f in futures]
    docs = [x.document for x in out]
    assert docs[0].kind == "markdown" and "Manual" in docs[0].text
    assert docs[1].kind == "csv"
    assert out[0].prepared is not None and out[0].prepared.chars == len(docs[0].text)  # rows made in the worker


def test_failure_is_a_reader_error_and_the_worker_keeps_serving(fixture_bad, fixture_docs):
    with ExtractionPool(1) as pool:
        with pytest.raises(ReaderError) as err:
            pool.submit((fixture_bad / "encrypted.pdf").read_bytes(), "encrypted.pdf", None).result(timeout=60)
        assert "encrypted" in str(err.value).lower()
        out = pool.submit((fixture_docs / "manual.md").read_bytes(), "manual.md", None).result(timeout=60)
        assert out.document.text


def test_too_large_is_refused_before_any_work():
    with ExtractionPool(1, limits=Limits(max_bytes=10)) as pool:
        with pytest.raises(ReaderError) as err:
            pool.extract(b"x" * 11, "big.txt", None)
    assert err.value.code is ReaderCode.TOO_LARGE and "do not retry" in str(err.value)


def test_a_hanging_extraction_is_killed_and_recorded(index, fixture_docs):
    # A time budget no real extraction meets: the worker is killed and replaced.
    data = (fixture_docs / "manual.pdf").read_bytes()
    w = index.writer()
    rec, _ = w.upsert(FileMeta(path="/slow.pdf", source="local", file_id=None, etag=None, size=len(data),
                               mtime=1.0, mime="application/pdf"))
    with ExtractionPool(1, limits=Limits(max_seconds=0.0), grace_seconds=0.0) as pool:
        out = index_bytes(w, rec, data, pool)
        # The index records cause and next step, not a retry statement (whoever shows it words the retry).
        assert out.status == "failed" and "longer than" in out.reason and "retry" not in out.reason.lower()
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


def test_extraction_for_reading_only_skips_the_index_rows(fixture_docs):
    with ExtractionPool(1) as pool:
        out = pool.extract((fixture_docs / "report.docx").read_bytes(), "report.docx", None, rows=False)
    assert out.document.kind == "docx" and "amber heron" in out.document.text and out.prepared is None


def test_time_limit_kills_the_worker_and_the_next_file_gets_a_fresh_one(fixture_docs):
    data = (fixture_docs / "manual.pdf").read_bytes()
    with ExtractionPool(1, limits=Limits(max_seconds=0.01), grace_seconds=0.0) as pool:
        with pytest.raises(ReaderError) as err:
            pool.extract(data, "manual.pdf", None)
        assert err.value.code is ReaderCode.TIMEOUT
        assert "took longer than 0.01 s" in err.value.cause and err.value.action == SMALLER_COPY
        assert err.value.retry is False
    with ExtractionPool(1) as pool:
        assert pool.extract(b"after the kill", "a.txt", None).document.text == "after the kill"


def test_memory_limit():
    data = b"a,b\n" * 5_000_000  # 20 MB of CSV: decoding needs far more than 64 MiB of address space
    with ExtractionPool(1, memory_bytes=64 * 1024 * 1024) as pool:
        with pytest.raises(ReaderError) as err:
            pool.extract(data, "big.csv", None)
    assert err.value.code is ReaderCode.MEMORY and "do not retry" in str(err.value)


def test_a_worker_killed_from_outside_is_replaced(fixture_docs):
    """A worker killed by the OOM killer or a segfault between files: the pool starts another."""
    import multiprocessing as mp
    import os
    import signal

    with ExtractionPool(1) as pool:
        assert pool.extract(b"warm", "warm.txt", None).document.text == "warm"
        workers = [p for p in mp.active_children() if p.pid is not None]
        assert workers
        for p in workers:
            os.kill(p.pid, signal.SIGKILL)
            p.join(10)
        out = pool.extract((fixture_docs / "manual.md").read_bytes(), "manual.md", None)
        assert "Manual" in out.document.text
