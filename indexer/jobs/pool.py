"""Extraction out of the writer's way: long-lived capped worker processes.

Each pool thread owns one child process (forked from a forkserver, so the
indexer's threads and open databases are never duplicated) that runs
`reader.isolated.run_extract` file after file: an address-space cap
(RLIMIT_AS) is set in the child, and the thread kills and replaces the child
when a file exceeds its time budget or the child dies. A crash, a hang or a
memory blow-up therefore costs that one file, recorded with its reason, and
a healthy run pays one fork per worker, not one per file. `os.cpu_count()`
workers keep the machine busy while the single writer stores results.
"""
from __future__ import annotations

import concurrent.futures as cf
import multiprocessing as mp
import os
import posixpath
import threading
from typing import Any

from reader.document import DEFAULT_LIMITS, Document, Limits, ReaderError
from reader.isolated import DEFAULT_MEMORY_BYTES, outcome_to_document, run_extract

from indexer.models import FileRecord
from indexer.store.index import IndexWriter

_GRACE_SECONDS = 2.0         # on top of Limits.max_seconds before the child is killed
_RECYCLE_AFTER = 500         # files per child before a fresh one (bounds slow leaks in C parsers)
_CONTEXT = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"


def _serve(conn: Any, limits: Limits, memory_bytes: int | None) -> None:
    """Child main loop: receive (data, name, mime), answer run_extract's outcome; None or EOF ends it."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        data, name, mime = msg
        try:
            out = run_extract(data, name, mime, limits, memory_bytes)
            if out[0] == "ok":
                # Index rows are prepared here too, so the parent's writer only INSERTs.
                from indexer.store.prepare import prepare

                out = ("ok", out[1], prepare(out[1]))
        except MemoryError:
            out = ("error", "memory", f"{name}: extraction ran out of memory; do not retry until the file changes")
        except Exception as exc:  # a reader bug costs one file, not the run
            out = ("error", "failed", f"{name}: the reader failed ({type(exc).__name__}: {exc}); "
                   "the file was skipped; do not retry until it changes")
        conn.send(out)
        if out[0] == "error" and out[1] == "memory":
            return  # the heap may be in a bad state: let the parent start a fresh child


class _Worker:
    """One capped child process, used by one thread at a time."""

    def __init__(self, ctx: Any, limits: Limits, memory_bytes: int | None, grace: float = _GRACE_SECONDS) -> None:
        self.ctx, self.limits, self.memory_bytes, self.grace = ctx, limits, memory_bytes, grace
        self.proc: Any = None
        self.conn: Any = None
        self.used = 0

    def _start(self) -> None:
        parent, child = self.ctx.Pipe(duplex=True)
        proc = self.ctx.Process(target=_serve, args=(child, self.limits, self.memory_bytes), daemon=True)
        try:
            proc.start()
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        # Only a started worker is recorded, so stop() never meets half a worker.
        self.proc, self.conn, self.used = proc, parent, 0

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        try:
            if kill:
                self.proc.kill()
            else:
                self.conn.send(None)
        except (OSError, ValueError):
            self.proc.kill()
        self.proc.join(5)
        if self.proc.is_alive():  # pragma: no cover - a child that ignores the stop message
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        self.proc = self.conn = None

    def extract(self, data: bytes, name: str, mime: str | None) -> Document:
        if self.proc is None or not self.proc.is_alive() or self.used >= _RECYCLE_AFTER:
            self.stop()
            self._start()
        self.used += 1
        try:
            self.conn.send((data, name, mime))
            ready = self.conn.poll(self.limits.max_seconds + self.grace)
            outcome = self.conn.recv() if ready else None
        except (EOFError, OSError):
            self.stop(kill=True)
            raise ReaderError(
                f"{name}: the extraction process died (probably out of memory or a crash in a parser); "
                "the file is skipped; do not retry until it changes", code="memory") from None
        if outcome is None:
            self.stop(kill=True)
            raise ReaderError(
                f"{name}: extraction took longer than {self.limits.max_seconds:g} s and was stopped; "
                "the file is skipped; do not retry until it changes", code="timeout")
        if outcome[0] == "ok":
            doc = outcome[1]
            doc.__dict__["_index_prepared"] = outcome[2]
            return doc
        return outcome_to_document(outcome)


def status_for(err: ReaderError) -> str:
    """The index status a reader error code maps to."""
    if err.code == "too_large":
        return "too_large"
    if err.code == "unsupported":
        return "unsupported"
    return "failed"


class ExtractionPool:
    """Bounded parallel extraction; `submit` returns a Future[Document] that raises ReaderError."""

    def __init__(self, workers: int | None = None, *, limits: Limits = DEFAULT_LIMITS,
                 memory_bytes: int | None = DEFAULT_MEMORY_BYTES, grace_seconds: float = _GRACE_SECONDS) -> None:
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.limits = limits
        self.memory_bytes = memory_bytes
        self._ctx = mp.get_context(_CONTEXT)
        if _CONTEXT == "forkserver":
            # Children fork from a server that has the reader and its parsers imported already.
            self._ctx.set_forkserver_preload(["reader", "reader.isolated", "indexer.jobs.pool",
                                              "indexer.store.prepare"])
        self.grace_seconds = grace_seconds
        self._idle = [_Worker(self._ctx, limits, memory_bytes, grace_seconds) for _ in range(self.workers)]
        self._all = list(self._idle)
        self._lock = threading.Lock()
        self._threads = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="extract")
        self._closed = False

    def submit(self, data: bytes, name: str, mime: str | None) -> "cf.Future[Document]":
        """Extract `data` (named `name`) in a capped worker process."""
        return self._threads.submit(self.extract, data, name, mime)

    def extract(self, data: bytes, name: str, mime: str | None) -> Document:
        """Extract synchronously in a capped worker process (the calling thread waits)."""
        if len(data) > self.limits.max_bytes:
            raise ReaderError(
                f"{name}: {len(data)} bytes is above the {self.limits.max_bytes}-byte limit for extraction; "
                "it is listed but not searchable; do not retry", code="too_large")
        with self._lock:
            if self._closed:
                raise RuntimeError("extraction pool is closed")
            worker = self._idle.pop() if self._idle else _Worker(self._ctx, self.limits, self.memory_bytes,
                                                                 self.grace_seconds)
            if worker not in self._all:
                self._all.append(worker)
        try:
            return worker.extract(data, name, mime)
        finally:
            with self._lock:
                self._idle.append(worker)

    def close(self) -> None:
        """Wait for running extractions, then stop every worker process."""
        self._threads.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._closed = True
            workers = list(self._all)
        for w in workers:
            w.stop()

    def __enter__(self) -> "ExtractionPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def extract_for(rec: FileRecord, data: bytes, pool: ExtractionPool | None) -> Document:
    """Extract a record's bytes, in the pool when given; else text in this process, the rest in a capped child."""
    name = posixpath.basename(rec.path) or rec.path
    if pool is not None:
        return pool.submit(data, name, rec.mime).result()
    from reader import extract
    from reader.extract import is_light
    from reader.isolated import extract_isolated

    if is_light(data, name, rec.mime):
        return extract(data, name, rec.mime)
    return extract_isolated(data, name, rec.mime)


def finish(writer: IndexWriter, rec: FileRecord, outcome: Document | BaseException) -> FileRecord:
    """Store an extraction outcome: the document, or the failure with its reason."""
    if isinstance(outcome, ReaderError):
        writer.record_failure(rec.id, status_for(outcome), str(outcome))
    elif isinstance(outcome, BaseException):
        writer.record_failure(rec.id, "failed", f"extraction failed ({type(outcome).__name__}: {outcome}); "
                              "do not retry until the file changes")
    else:
        writer.store_document(rec.id, outcome)
    return writer.record(rec.id) or rec


def index_bytes(writer: IndexWriter, rec: FileRecord, data: bytes, pool: ExtractionPool | None = None) -> FileRecord:
    """Extract (in the pool when given) and store, or record the failure with its reason."""
    try:
        outcome: Document | BaseException = extract_for(rec, data, pool)
    except ReaderError as exc:
        outcome = exc
    return finish(writer, rec, outcome)
