"""An index's reader connections (and the jobs store's) live as long as the thread that opened them (issue 53):
short-lived threads, as the SDK's per-call workers are, leave no connection or descriptor behind."""
from __future__ import annotations

import os
import threading
from pathlib import Path

from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.jobs.store import JobStore


def _descriptors_on(path: Path) -> int:
    names = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            names.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass
    return sum(1 for name in names if name.startswith(str(path)))


def _in_threads(work, count: int) -> None:
    for _ in range(count):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()


def test_a_hundred_short_threads_reading_the_index_leave_no_connection(tmp_path: Path) -> None:
    index = Index.open(tmp_path / "index.db")
    try:
        index.conn().execute("SELECT count(*) FROM files").fetchall()     # this thread's: kept
        held = _descriptors_on(tmp_path / "index.db")
        read = lambda: index.conn().execute("SELECT count(*) FROM files").fetchall()  # noqa: E731
        _in_threads(read, 10)
        # SQLite keeps a closed connection's descriptor for the next open while another connection of the
        # process holds a lock on the file: a bounded few, the same after 10 threads as after 110.
        after_ten = _descriptors_on(tmp_path / "index.db")
        _in_threads(read, 100)
        assert index.reader_count() == 1
        assert _descriptors_on(tmp_path / "index.db") == after_ten <= held + 2
    finally:
        index.close()
    assert _descriptors_on(tmp_path / "index.db") == 0


def test_threads_alive_keep_theirs_and_a_thread_keeps_one(tmp_path: Path) -> None:
    index = Index.open(tmp_path / "index.db")
    release, ready = threading.Event(), threading.Barrier(4)
    same: list[bool] = []

    def reader() -> None:
        same.append(index.conn() is index.conn())
        ready.wait()
        release.wait()

    threads = [threading.Thread(target=reader) for _ in range(3)]
    try:
        for thread in threads:
            thread.start()
        ready.wait()
        assert index.reader_count() == 3 and same == [True] * 3
        release.set()
        for thread in threads:
            thread.join()
        assert index.reader_count() == 0
    finally:
        release.set()
        index.close()


def test_the_jobs_store_leaves_no_connection_per_thread(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "jobs.db")
    held = _descriptors_on(tmp_path / "jobs.db")
    _in_threads(lambda: store.list(5), 10)
    after_ten = _descriptors_on(tmp_path / "jobs.db")   # with SQLite's kept descriptors (see above)
    _in_threads(lambda: store.list(5), 100)
    assert _descriptors_on(tmp_path / "jobs.db") == after_ten <= held + 2
    store.close()
