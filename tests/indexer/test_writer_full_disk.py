"""The index writer on a full disk: every write queued then fails with the cause, none is run twice, the writer
never spins, and it writes again once there is room. SQLite's max_page_count makes "database or disk is full"
(SQLITE_FULL) real without filling a disk."""
from __future__ import annotations

import threading
import time
from concurrent.futures import wait
from pathlib import Path

import apsw

from mcp_nextcloud.indexer.index import Index

BIG = "x" * 20_000


def _fill(tx: object, n: int) -> None:
    con = tx.con   # type: ignore[attr-defined]
    con.execute("CREATE TABLE IF NOT EXISTS filler(v TEXT)")
    con.execute("INSERT INTO filler VALUES(?)", (BIG * n,))


def test_a_full_disk_fails_every_queued_write_once_and_the_writer_recovers(tmp_path: Path) -> None:
    with Index.open(tmp_path / "index.db") as index:
        writer = index.writer()
        pages = writer.call(lambda tx: tx.con.execute("PRAGMA page_count").fetchall()[0][0])
        writer.call(lambda tx: tx.con.execute(f"PRAGMA max_page_count={pages + 4}").fetchall())
        runs: list[int] = []
        lock = threading.Lock()

        def write(i: int) -> object:
            def fn(tx: object) -> None:
                with lock:
                    runs.append(i)
                _fill(tx, 2)
            return fn

        futures = [writer.submit(write(i)) for i in range(30)]
        done, pending = wait(futures, timeout=60)
        assert not pending, "the writer stopped answering on a full disk"
        errors = [f.exception() for f in futures]
        assert all(isinstance(e, apsw.FullError) for e in errors), {type(e).__name__ for e in errors}
        assert sorted(runs) == sorted(set(runs)), "a task ran twice"
        # The writer thread is idle again, not spinning: its CPU time stays put over half a second.
        assert writer._thread.is_alive()
        before = time.process_time()
        time.sleep(0.5)
        assert time.process_time() - before < 0.25
        # Room again: the next write is stored.
        writer.call(lambda tx: tx.con.execute("PRAGMA max_page_count=1073741823").fetchall())
        writer.call(lambda tx: _fill(tx, 1))
        assert index.conn().execute("SELECT count(*) FROM filler").fetchall()[0][0] == 1
