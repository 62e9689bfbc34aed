"""The write side of the index: one thread that owns the write connection and takes work from a queue.

datasette's `Database` is the model: every write of a process to one index
goes through this thread. A caller submits a function of a `WriteTx` and
waits for its result (`call`) or not (`submit` returns a Future). The thread
runs whatever is queued in one transaction (each function in a savepoint of
its own, so one that raises rolls back alone) and resolves the futures only
after COMMIT: a result a caller holds is on disk, and a kill -9 at any
moment loses only work whose future was never resolved.

`close()` runs what was queued before it, commits and joins the thread:
shutdown is deterministic.
"""
from __future__ import annotations

import contextlib
import queue
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import apsw

from mcp_nextcloud.indexer.models import FileMeta, FileRecord, RecordStatus, Root
from mcp_nextcloud.indexer.store.prepare import Prepared, prepare
from mcp_nextcloud.indexer.store.roots import FolderOverlap, PathCollision, RemoteLookup, RemotePathConflict
from mcp_nextcloud.indexer.store.rows import _connect
from mcp_nextcloud.indexer.store.tx import WriteTx

__all__ = ["IndexWriter", "WriteTx", "PathCollision", "FolderOverlap", "RemotePathConflict"]

T = TypeVar("T")
MAX_BATCH = 512        # functions per commit at most: bounds what one transaction holds
# FTS5 merges its segments a few at a time as rows arrive ('automerge', 4 at a time) and at once when
# one level holds 'crisismerge' (16) of them. A bulk load turns both down, so segments pile up
# unmerged, and merges them once at its end: measured at 10k documents, a quarter less writer CPU
# and one segment to query. These settings persist in the table's config, so every writer restores
# the defaults when it starts: a bulk load killed half-way leaves normal settings behind.
FTS_DEFAULTS = {"automerge": 4, "crisismerge": 16}
FTS_BULK = {"automerge": 0, "crisismerge": 200}   # 200 segments per level: far below FTS5's 2000 cap


@dataclass
class _Task:
    fn: Callable[[WriteTx], Any]
    future: "Future[Any]" = field(default_factory=Future)   # fn's result: tasks of every result type share a queue
    alone: bool = False     # runs outside any transaction (checkpoint, FTS optimize)


class WriterClosed(RuntimeError):
    """Work was submitted to a writer that is closed."""


class IndexWriter:
    """The one writer of an index database: a thread, a queue and the write connection it owns."""

    def __init__(self, path: Path, *, max_batch: int = MAX_BATCH) -> None:
        self.path = path
        self.max_batch = max_batch
        self._queue: "queue.SimpleQueue[_Task | None]" = queue.SimpleQueue()
        self._closed = False
        self._state = threading.Lock()     # guards _closed against a submit racing close()
        self._bulk_depth = 0               # writer thread only
        started: "Future[None]" = Future()
        self._thread = threading.Thread(target=self._run, args=(started,), name="index-writer", daemon=True)
        self._thread.start()
        started.result()                   # the connection opened (or its error is raised here)

    # -- submitting work ---------------------------------------------------------
    def submit(self, fn: Callable[[WriteTx], T], *, alone: bool = False) -> "Future[T]":
        """Queue `fn(tx)`; the Future resolves once its transaction committed (or holds what it raised)."""
        if threading.current_thread() is self._thread:
            raise RuntimeError("a function running on the index writer submitted more work: "
                               "use the WriteTx it was given instead")
        task = _Task(fn, alone=alone)
        with self._state:
            if self._closed:
                raise WriterClosed("the index writer is closed: open the index again with Index.open(path)")
            self._queue.put(task)
        return task.future

    def call(self, fn: Callable[[WriteTx], T]) -> T:
        """Run `fn(tx)` on the writer and wait for its committed result."""
        return self.submit(fn).result()

    def close(self) -> None:
        """Run and commit everything queued so far, then stop the thread and close the connection."""
        with self._state:
            if self._closed:
                return
            self._closed = True
            self._queue.put(None)
        self._thread.join()

    # -- the thread ----------------------------------------------------------------
    def _run(self, started: "Future[None]") -> None:
        try:
            con = _connect(str(self.path), readonly=False)
            _restore_merge_settings(con)
        except BaseException as exc:
            started.set_exception(exc)
            return
        started.set_result(None)
        tx = WriteTx(con)
        try:
            task = self._queue.get()
            while task is not None:
                if task.alone:
                    _resolve([(task, _attempt(task, tx))])
                    task = self._queue.get()
                else:
                    task = self._batch(task, tx)
        finally:
            con.close()

    def _batch(self, first: _Task, tx: WriteTx) -> "_Task | None":
        """Run `first` and whatever is queued behind it in one transaction; return the next task (None: stop).

        Every function but the first runs in a savepoint, so one that raises is
        undone alone; the first needs none (on failure the transaction is
        rolled back and begun again). Savepoints are not free: FTS5 flushes
        its pending rows at each one, so bulk producers submit a few large
        functions rather than one per file.
        """
        done: list[tuple[_Task, tuple[bool, Any]]] = []
        task: _Task | None = first
        current: _Task | None = None      # the task under way when SQLite itself fails (not the task's own error)
        try:
            tx.con.execute("BEGIN IMMEDIATE")
            while task is not None and task is not _EMPTY and not task.alone:
                current = task
                if done:
                    outcome = _in_savepoint(task, tx)
                else:
                    outcome = _attempt(task, tx)
                    if not outcome[0]:   # undo the first function alone, carry on in a fresh transaction
                        if tx.con.in_transaction:   # (SQLite ended it itself on a full disk or an I/O error)
                            tx.con.execute("ROLLBACK")
                        tx.con.execute("BEGIN IMMEDIATE")
                done.append((task, outcome))
                current = None
                task = self._next_queued() if len(done) < self.max_batch else _EMPTY
            tx.con.execute("COMMIT")
        except BaseException as exc:  # BEGIN, a rollback or the COMMIT failed (disk full, I/O): nothing is stored
            with contextlib.suppress(apsw.Error):
                if tx.con.in_transaction:
                    tx.con.execute("ROLLBACK")
            # Every task of the batch fails with the cause, the one under way too: none is run again (a task is
            # run once; running it again would find its Future already running and loop on that forever).
            failed = [t for t, _ in done]
            if current is not None or not done:   # failed under a task, or at BEGIN (before the first ran)
                failed.append(current or first)
                task = _EMPTY                     # what is queued behind it runs in the next batch
            done = [(t, (False, exc)) for t in failed]
        _resolve(done)
        return self._queue.get() if task is _EMPTY else task

    def _next_queued(self) -> "_Task | None":
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            return _EMPTY

    # -- bulk loads and maintenance ----------------------------------------------------
    @contextmanager
    def bulk(self) -> Iterator[None]:
        """A bulk load: FTS segments are not merged while it runs, then merged into one at its end.

        The final merge rewrites the whole FTS index, so this pays for loads
        that are a large part of it (index_folder uses it from BULK_MIN_FILES).
        """
        self.call(self._bulk_begin)
        try:
            yield
        finally:
            if not self._closed:
                self.submit(self._bulk_end, alone=True).result()

    def _bulk_begin(self, tx: WriteTx) -> None:
        self._bulk_depth += 1
        if self._bulk_depth == 1:
            _set_fts_config(tx.con, FTS_BULK)

    def _bulk_end(self, tx: WriteTx) -> None:
        self._bulk_depth -= 1
        if self._bulk_depth == 0:
            with tx.con:
                tx.con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
                _set_fts_config(tx.con, FTS_DEFAULTS)

    def checkpoint(self) -> None:
        """Merge the FTS segments into one and fold the WAL into the database (after a bulk load)."""
        def run(tx: WriteTx) -> None:
            with tx.con:
                tx.con.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
            tx.con.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)

        self.submit(run, alone=True).result()

    # -- one call each, for callers that write one thing ------------------------------
    def record(self, rec_id: int) -> FileRecord | None:
        """The record with rowid `rec_id`, as the writer sees it."""
        return self.call(lambda tx: tx.record(rec_id))

    def upsert(self, meta: FileMeta, notes: list[str] | None = None) -> tuple[FileRecord, bool]:
        """Record a file seen at a source; return (record, needs_extraction). See `WriteTx.upsert`."""
        return self.call(lambda tx: tx.upsert(meta, notes))

    def move(self, rec_id: int, meta: FileMeta, notes: list[str] | None = None) -> FileRecord | None:
        """Give a record a new path, keeping its text. See `WriteTx.move`."""
        return self.call(lambda tx: tx.move(rec_id, meta, notes))

    def set_hash(self, rec_id: int, content_hash: str) -> None:
        """Remember the content hash of the bytes being extracted for a record."""
        self.call(lambda tx: tx.set_hash(rec_id, content_hash))

    def store(self, rec_id: int, prepared: Prepared) -> FileRecord | None:
        """Store prepared rows for a record; None when it was removed meanwhile. See `WriteTx.store`."""
        return self.call(lambda tx: tx.store(rec_id, prepared))

    def store_document(self, rec_id: int, doc: Any) -> FileRecord | None:
        """Prepare a Document's rows in this thread, then store them."""
        return self.store(rec_id, prepare(doc))

    def record_failure(self, rec_id: int, status: RecordStatus, reason: str) -> FileRecord | None:
        """Mark a file too_large / unsupported / failed with its reason."""
        return self.call(lambda tx: tx.record_failure(rec_id, status, reason))

    def remove(self, rec_id: int) -> None:
        """Forget a file and its text."""
        self.call(lambda tx: tx.remove(rec_id))

    def remove_under(self, path_prefix: str, *, source: str | None = None) -> int:
        """Forget every file at or below `path_prefix`; return how many."""
        return self.call(lambda tx: tx.remove_under(path_prefix, source=source))

    def set_folder_etag(self, path: str, etag: str | None) -> None:
        """Remember (or forget, with None) a remote folder's etag."""
        self.call(lambda tx: tx.set_folder_etag(path, etag))

    def clear_folder_etags(self) -> None:
        """Forget every remembered remote folder etag: the next sync walks the whole selection again."""
        self.call(lambda tx: tx.con.execute("DELETE FROM folders"))

    def set_meta(self, key: str, value: str) -> None:
        """Set a key/value (e.g. last_sync_at)."""
        self.call(lambda tx: tx.set_meta(key, value))

    def register_root(self, folder: str, *, journal: str | None = None, remote: str | None = None,
                      configured: RemoteLookup | None = None, notes: list[str] | None = None) -> Root:
        """The roots row of a local folder, created on first use (see `indexer.store.roots`)."""
        return self.call(lambda tx: tx.register_root(folder, journal=journal, remote=remote, configured=configured,
                                                     notes=notes))

    def set_root_indexed(self, root_id: int, journal: str | None) -> None:
        """Record that a local folder was just indexed in full."""
        self.call(lambda tx: tx.roots.set_indexed(root_id, journal))

    def forget_root(self, root_id: int) -> int:
        """Remove a local folder, its files and their text from the index; return the file count."""
        return self.call(lambda tx: tx.roots.forget(root_id))

    def forget_account(self) -> int:
        """Remove the account's files, folder etags and sync marks; return the file count."""
        return self.call(lambda tx: tx.forget_account())

    def integrity_check(self) -> list[str]:
        """SQLite's and FTS5's integrity checks; [] when both pass, else what they reported."""
        def run(tx: WriteTx) -> list[str]:
            problems = [r[0] for r in tx.con.execute("PRAGMA integrity_check") if r[0] != "ok"]
            try:
                tx.con.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 0)")
            except apsw.Error as exc:
                problems.append(f"fts: {exc}")
            return problems

        return self.call(run)


_EMPTY = _Task(lambda tx: None)   # "nothing queued right now" (distinct from None, the stop mark)


def _in_savepoint(task: _Task, tx: WriteTx) -> tuple[bool, Any]:
    """Run one task inside the batch's transaction; what it wrote is undone if it raises."""
    if not task.future.set_running_or_notify_cancel():
        return False, None
    tx.con.execute("SAVEPOINT task")
    try:
        result = task.fn(tx)
    except Exception as exc:  # the caller gets it from its Future
        if not tx.con.in_transaction:
            raise    # SQLite rolled the whole transaction back (disk full, I/O): the batch fails with this cause
        tx.con.execute("ROLLBACK TO task")
        tx.con.execute("RELEASE task")
        return False, exc
    tx.con.execute("RELEASE task")
    return True, result


def _attempt(task: _Task, tx: WriteTx) -> tuple[bool, Any]:
    """Run a task without a savepoint of its own (the first of a batch, or one that runs alone)."""
    if not task.future.set_running_or_notify_cancel():
        return False, None
    try:
        return True, task.fn(tx)
    except Exception as exc:
        return False, exc


def _resolve(done: list[tuple[_Task, tuple[bool, Any]]]) -> None:
    for task, (ok, value) in done:
        if task.future.cancelled():
            continue
        if ok:
            task.future.set_result(value)
        elif isinstance(value, BaseException):
            task.future.set_exception(value)


def _set_fts_config(con: apsw.Connection, values: dict[str, int]) -> None:
    for key, value in values.items():
        con.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES(?, ?)", (key, value))


def fts_config(con: apsw.Connection) -> dict[str, int]:
    """The merge settings stored in the FTS table's config (absent ones are at FTS5's defaults)."""
    try:
        rows = con.execute("SELECT k, v FROM chunks_fts_config WHERE k IN ('automerge', 'crisismerge')").fetchall()
    except apsw.SQLError:  # no FTS table yet
        return dict(FTS_DEFAULTS)
    return {**FTS_DEFAULTS, **{str(k): int(str(v)) for k, v in rows}}


def _restore_merge_settings(con: apsw.Connection) -> None:
    """Undo what a bulk load killed before its end left in the FTS config (merging turned down)."""
    if fts_config(con) != FTS_DEFAULTS:
        with con:
            _set_fts_config(con, FTS_DEFAULTS)
