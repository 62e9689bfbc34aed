"""Build the meaning index in the background, after the keyword index: incremental, bounded, never in grep's way.

A pass finds its work with two queries: files whose text was (re)indexed
since they were embedded get their first window first (so every file is
reachable by meaning early, when a large account is still building), then the
files not complete get the rest of their windows (embed_windows.py). A window
whose text is unchanged keeps its vector (a changed file re-embeds only the
chunks that changed); a file whose text is dropped loses its vectors in the
same transaction (Rows.delete), and a sweep catches any left over (a file that
failed to extract since).

Reads use the index's reader connection; writes go through the one writer,
one file at a time, so a grep never waits longer than one small
transaction. The model runs in C with the GIL released.
One builder per index in a process (`builder_for`), and one across processes
(an advisory lock file beside the database): two `index sync` workers never
embed the same files twice.
"""
from __future__ import annotations

import logging
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Callable, cast

import apsw

from mcp_nextcloud.indexer.store import embed_registry
from mcp_nextcloud.indexer.jobs import embed_windows as ew
from mcp_nextcloud.indexer.store import vectors
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.store.schema import CHUNK_BITS
from mcp_nextcloud.indexer.store.vectors import Window
from mcp_nextcloud.environment import environ

log = logging.getLogger(__name__)

BATCH = 16                # windows per model call (measured: past ~8 the per-window cost is flat)
HEAD_FILES = 16           # files whose first window is embedded in one model call


class BuildReport:
    """What one build did: files touched, windows embedded, characters embedded, seconds, and why it stopped."""

    def __init__(self) -> None:
        self.touched: set[int] = set()      # files whose vectors this build wrote
        self.windows = 0
        self.chars = 0
        self.seconds = 0.0
        self.stopped: str | None = None     # "budget", "stop", "busy" (another process builds), None: finished
        self.removed = 0

    @property
    def files(self) -> int:
        return len(self.touched)

    def to_dict(self) -> dict[str, Any]:
        return {"files": self.files, "windows": self.windows, "chars": self.chars,
                "seconds": round(self.seconds, 2), "stopped": self.stopped, "removed": self.removed}


class _Lock:
    """An advisory lock file beside the database: one builder across processes (flock, released at exit)."""

    def __init__(self, db_path: Path) -> None:
        self.path = Path(str(db_path) + ".embed-lock")
        self._fh: Any = None

    def acquire(self) -> bool:
        import fcntl

        fh = open(self.path, "a")   # noqa: SIM115 - held until release()
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.close()
            return False
        self._fh = fh
        return True

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _prepare(tx: Any) -> int:
    """Create the tables if needed and sweep vectors of files gone; return how many files lost theirs."""
    vectors.ensure(tx.con)
    return vectors.drop_orphans(tx.con)


def _plan(con: apsw.Connection, fid: int, path: str) -> tuple[list[Window], dict[int, bytes]]:
    """A file's chosen windows (in order) and the hashes of the vectors it has now."""
    lo, hi = vectors.file_range(fid)
    # count(*) is an INTEGER (apsw types a cell only as any SQLite value).
    n = cast(int, con.execute("SELECT count(*) FROM chunks WHERE id BETWEEN ? AND ?", (lo, hi)).fetchall()[0][0])
    ids = [lo | s for s in ew.chosen_seqs(int(n))]
    name = ew.title(path)
    out: list[Window] = []
    marks = ",".join("?" * len(ids))
    for cid, start, line, body in con.execute(
            f"SELECT id, start, line, body FROM chunks WHERE id IN ({marks}) ORDER BY id", ids):
        w = ew.window(int(cid), int(start), int(line), zlib.decompress(body).decode("utf-8"), name)
        if w is not None:
            out.append(w)
    return out, vectors.hashes(con, fid)


class Builder:
    """Embeds what the keyword index holds and the meaning index does not; a thread when kicked."""

    def __init__(self, index: Index, embed: Callable[[list[str]], Any] | None = None) -> None:
        from mcp_nextcloud.indexer.embedding import embed_passages

        self.index = index
        self.embed = embed or embed_passages
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._guard = threading.Lock()
        self._running = threading.Lock()      # held while a pass runs (thread or caller)
        self.last: BuildReport | None = None

    @property
    def building(self) -> bool:
        """True while a pass runs in this process."""
        return self._running.locked()

    # -- the thread --------------------------------------------------------------
    def kick(self) -> None:
        """Start (or wake) the background thread: it builds until nothing is left, then waits for the next kick."""
        with self._guard:
            if self._thread is None or not self._thread.is_alive():
                self._stop.clear()
                self._thread = threading.Thread(target=self._loop, name="meaning-builder", daemon=True)
                self._thread.start()
        self._kick.set()

    def stop(self, timeout: float | None = 10.0) -> None:
        """Stop after the file being embedded (what is written stays); join the thread."""
        self._stop.set()
        self._kick.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._kick.wait()
            self._kick.clear()
            if self._stop.is_set():
                break
            try:
                self.build()
            except Exception:  # noqa: BLE001 - the thread outlives one bad pass; the next kick retries
                if self._stop.is_set():
                    break      # the index is closing under a pass: what was written stays, the rest waits
                log.exception("meaning index: a build pass failed")

    # -- one pass ----------------------------------------------------------------
    def build(self, budget_s: float | None = None) -> BuildReport:
        """Embed what is missing, in this thread, until done, `budget_s` seconds or stop(); return what it did."""
        from mcp_nextcloud.indexer import embedding

        report = BuildReport()
        lock = _Lock(Path(self.index.path))
        if not lock.acquire():
            report.stopped = "busy"
            return report
        t0 = time.perf_counter()
        try:
            with self._running, embedding.building():
                report.removed = self.index.writer().call(_prepare)
                deadline = None if budget_s is None else time.monotonic() + budget_s
                for phase in (self._heads, self._rest):
                    phase(report, deadline)
                    if report.stopped:
                        break
        finally:
            lock.release()
            report.seconds = time.perf_counter() - t0
            self.last = report
        return report

    def _halt(self, report: BuildReport, deadline: float | None) -> bool:
        if self._stop.is_set():
            report.stopped = "stop"
        elif deadline is not None and time.monotonic() >= deadline:
            report.stopped = "budget"
        return report.stopped is not None

    def _work(self, fresh: bool) -> list[tuple[int, float, str]]:
        """(file rowid, indexed_at, path): files never embedded at their current text (fresh) or not complete."""
        con = self.index.conn()
        if fresh:
            sql = ("SELECT f.id, f.indexed_at, f.path FROM files f LEFT JOIN vector_files vf ON vf.id = f.id "
                   "WHERE f.status='indexed' AND (vf.id IS NULL OR vf.indexed_at IS NOT f.indexed_at) "
                   "ORDER BY f.mtime DESC")
        else:
            sql = ("SELECT f.id, f.indexed_at, f.path FROM files f JOIN vector_files vf ON vf.id = f.id "
                   "WHERE f.status='indexed' AND vf.indexed_at = f.indexed_at AND vf.done = 0 "
                   "ORDER BY f.mtime DESC")
        with con:
            rows = [(int(i), float(t), str(p)) for i, t, p in con.execute(sql)]
        return rows

    def _heads(self, report: BuildReport, deadline: float | None) -> None:
        """Every file not embedded at its current text gets its first changed window (HEAD_FILES per model call)."""
        work = self._work(fresh=True)
        for k in range(0, len(work), HEAD_FILES):
            if self._halt(report, deadline):
                return
            plans = []
            with self.index.conn() as con:
                for fid, at, path in work[k:k + HEAD_FILES]:
                    chosen, have = _plan(con, fid, path)
                    todo = [w for w in chosen if have.get(w.id) != vectors.text_hash(w.text)]
                    plans.append((fid, at, chosen, todo))
            self._write(report, [(fid, at, chosen, todo[:1], len(todo) <= 1) for fid, at, chosen, todo in plans])

    def _rest(self, report: BuildReport, deadline: float | None) -> None:
        """Files with windows still to embed get them, BATCH windows per model call and per write."""
        for fid, at, path in self._work(fresh=False):
            with self.index.conn() as con:
                chosen, have = _plan(con, fid, path)
            todo = [w for w in chosen if have.get(w.id) != vectors.text_hash(w.text)]
            if not todo:
                self._write(report, [(fid, at, chosen, [], True)])
            for k in range(0, len(todo), BATCH):
                if self._halt(report, deadline):
                    return
                part = todo[k:k + BATCH]
                self._write(report, [(fid, at, chosen, part, k + BATCH >= len(todo))])

    def _write(self, report: BuildReport, items: list[tuple[int, float, list[Window], list[Window], bool]]) -> None:
        """Embed the windows of `items` in one model call, then write them (one transaction) with what is kept."""
        texts = [w.text for *_, new, _done in items for w in new]
        vecs = self.embed(texts) if texts else None
        rows = []
        at = 0
        for fid, indexed_at, chosen, new, done in items:
            part = vecs[at:at + len(new)] if vecs is not None else []
            at += len(new)
            rows.append((fid, indexed_at, done, chosen, new, part))
            report.windows += len(new)
            report.chars += sum(w.length for w in new)
        report.touched.update(fid for fid, *_ in items)

        def write(tx: Any) -> None:
            import numpy as np

            for fid, indexed_at, done, chosen, new, part in rows:
                if not new and not done:
                    continue
                # Kept: chosen windows whose stored vector was made from their current text (never a stale one).
                stored = vectors.hashes(tx.con, fid)
                keep = {w.id for w in chosen if stored.get(w.id) == vectors.text_hash(w.text)} | {w.id for w in new}

                arr = np.asarray(part, dtype=np.float32).reshape(len(new), vectors.DIM)
                vectors.write_file(tx.con, fid, indexed_at, done, keep, new, arr, chosen)

        self.index.writer().call(write)


def builder_for(index: Index) -> Builder:
    """The process's builder of this index (one per database path; indexer/store/embed_registry.py keeps them)."""
    key = str(Path(index.path).resolve())
    with _for_lock:
        b = embed_registry.get(key)
        if not isinstance(b, Builder) or b.index is not index:   # the registry holds only Builders
            b = Builder(index)
            embed_registry.put(key, b)
        return b


_for_lock = threading.Lock()
building_any = embed_registry.building_any


def forget(index: Index) -> None:
    """Stop and drop this index's builder (the index is closing)."""
    b = embed_registry.pop(str(Path(index.path).resolve()))
    if b is not None:
        b.stop()


def chunk_file(chunk_id: int) -> int:
    return chunk_id >> CHUNK_BITS


def after_sync(index: Index) -> None:
    """A sync finished in this process (serve's BackgroundSync): wake the builder; grep never waits for it."""
    if _enabled():
        builder_for(index).kick()


def build_detached(index_path: Path) -> BuildReport | None:
    """In a detached sync worker, after its job is recorded: embed what is missing, then return."""
    if not _enabled():
        return None
    from mcp_nextcloud.indexer.store.index import Index

    idx = Index.open(index_path)
    try:
        return Builder(idx).build()
    except Exception:  # noqa: BLE001 - the keyword index is done and recorded; the next sync tries again
        log.exception("meaning index: the build after the sync failed")
        return None
    finally:
        idx.close()


def _enabled() -> bool:
    """MCP_NEXTCLOUD_MEANING=0 turns the builder off (a machine too slow for it; grep then says words only)."""

    return environ().get("MCP_NEXTCLOUD_MEANING", "1") != "0"


def main(argv: list[str] | None = None) -> int:
    """`python -m mcp_nextcloud.indexer.jobs.embed --index PATH`: build its meaning index here, then exit."""
    import argparse
    import json

    parser = argparse.ArgumentParser(prog="python -m mcp_nextcloud.indexer.jobs.embed", description=main.__doc__)
    parser.add_argument("--index", required=True, help="the index database to embed")
    args = parser.parse_args(argv)
    report = build_detached(Path(args.index))
    print(json.dumps(report.to_dict() if report else None, separators=(",", ":")))
    return 0 if report is not None and report.stopped is None else 1


if __name__ == "__main__":
    import sys

    sys.exit(main())
