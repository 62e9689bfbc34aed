"""Extraction workers between files: memory handed back, a worker still fat replaced, the file in hand answered;
closing without waiting (Ctrl-C) kills the workers and leaves nothing running."""
from __future__ import annotations

import random
import threading

import psutil
import pytest

from mcp_nextcloud.indexer.jobs.pool import ExtractionPool, ExtractionStopped
from mcp_nextcloud.indexer.jobs.worker_memory import MIB, ResidentSize, Settler

LARGE_LINES = 100_000   # ~8 MB of text: a worker that keeps what it parsed stays ~75 MiB above its fresh size


def large_text(lines: int = LARGE_LINES) -> bytes:
    rnd = random.Random(17)
    words = ["".join(rnd.choice("abcdefghijklmnop") for _ in range(rnd.randint(3, 9))) for _ in range(5000)]
    return "\n".join(" ".join(rnd.choices(words, k=12)) for _ in range(lines)).encode()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_worker_still_fat_after_a_file_is_replaced_and_the_next_file_answered(fixture_docs):
    # Any growth over the fresh size counts as fat here: the first DOCX imports python-docx (+11 MiB).
    with ExtractionPool(1, recycle_above=0) as pool:
        first = pool.extract((fixture_docs / "report.docx").read_bytes(), "report.docx", None)
        assert "amber heron" in first.document.text
        [fat] = pool.pids()
        second = pool.extract((fixture_docs / "manual.md").read_bytes(), "manual.md", None)
        assert "Manual" in second.document.text and second.prepared is not None
        assert pool.recycled_fat >= 1
        [fresh] = pool.pids()
        assert fresh != fat and gone(fat)
    assert gone(fresh)


def test_a_worker_that_hands_memory_back_is_kept_and_one_that_does_not_is_replaced():
    data = large_text()
    for release, replaced in ((True, False), (False, True)):
        with ExtractionPool(1, release_memory=release, recycle_above=32 * MIB) as pool:
            assert pool.extract(b"warm", "warm.txt", None).document.text == "warm"
            [before] = pool.pids()
            assert len(pool.extract(data, "large.txt", None).document.text) == len(data)
            assert pool.extract(b"small", "small.txt", None).document.text == "small"
            [after] = pool.pids()
            assert (after != before) is replaced, f"release={release}"
            assert pool.recycled_fat == int(replaced)


def test_a_lean_worker_serves_file_after_file(fixture_docs):
    with ExtractionPool(1) as pool:
        for name in ("manual.md", "notes.txt", "data.csv", "manual.md"):
            pool.extract((fixture_docs / name).read_bytes(), name, None)
        assert len(pool.pids()) == 1 and pool.recycled_fat == 0


def test_settler_measures_this_process():
    size = ResidentSize()()
    assert size is not None and abs(size - psutil.Process().memory_info().rss) < 8 * MIB
    assert Settler(recycle_above=None).settle() is True        # no limit: never fat
    assert Settler(recycle_above=1 << 40).settle() is True


def _busy_worker(pool: ExtractionPool) -> int:
    """Wait until the pool's one worker has spent CPU on the file in hand; its pid."""
    while True:
        for pid in pool.pids():
            try:
                if psutil.Process(pid).cpu_times().user > 0.3:
                    return pid
            except psutil.Error:
                pass
        threading.Event().wait(0.02)


@pytest.mark.parametrize("how", ["close", "interrupt"])
def test_closing_without_waiting_kills_the_extraction_in_hand(how):
    data = large_text(300_000)   # seconds of CPU: it is still running when the pool closes
    pool = ExtractionPool(1)
    in_hand = pool.submit(data, "large.txt", None)
    queued = pool.submit(b"next", "next.txt", None)
    pid = _busy_worker(pool)
    if how == "close":
        pool.close(wait=False)
    else:
        with pytest.raises(KeyboardInterrupt), pool:
            raise KeyboardInterrupt
    # Not answered (a close that waited would have let it finish) and not a verdict on the file.
    with pytest.raises(ExtractionStopped):
        in_hand.result()
    assert queued.cancelled() or isinstance(queued.exception(), (ExtractionStopped, RuntimeError))
    assert gone(pid) and pool.pids() == []
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(b"late", "late.txt", None)


def test_an_extraction_stopped_by_closing_leaves_its_file_pending(index):
    import concurrent.futures as cf

    from mcp_nextcloud.indexer.jobs.pool import store_outcome
    from mcp_nextcloud.indexer.models import FileMeta

    w = index.writer()
    for i, outcome in enumerate([ExtractionStopped("a.txt: extraction stopped"), cf.CancelledError()]):
        rec, needs = w.upsert(FileMeta(path=f"/f{i}.txt", source="local", file_id=None, etag=None, size=1,
                                       mtime=1.0, mime="text/plain"))
        assert needs and rec.status == "pending"
        assert w.call(lambda tx, rec=rec, outcome=outcome: store_outcome(tx, rec, outcome)).status == "pending"
        again, needs = w.upsert(FileMeta(path=f"/f{i}.txt", source="local", file_id=None, etag=None, size=1,
                                         mtime=1.0, mime="text/plain"))
        assert needs, "the next run extracts it"
    # A real failure is a verdict: recorded, not retried until the file changes.
    rec, _ = w.upsert(FileMeta(path="/bad.txt", source="local", file_id=None, etag=None, size=1, mtime=1.0,
                               mime="text/plain"))
    assert w.call(lambda tx: store_outcome(tx, rec, RuntimeError("boom"))).status == "failed"
