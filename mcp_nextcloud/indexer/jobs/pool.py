"""Extraction out of harm's way: long-lived capped worker processes, one implementation for the whole program.

The one place where untrusted bytes meet the parsers. Each pool thread owns
one child process (started from a forkserver, so the indexer's threads and
open databases are never duplicated) that runs `reader.extract` file after
file with its address space capped (RLIMIT_AS); the thread kills and
replaces the child when a file exceeds its time budget or the child dies, and
recycles it after RECYCLE_AFTER files (slow leaks in C parsers). A crash, a
hang or a memory blow-up therefore costs that one file, reported as a
ReaderError with its reason; a healthy run pays one process start per
worker, not one per file. Workers also prepare the index rows
(`indexer.store.prepare`), so the writer thread only INSERTs.

Between files a worker hands back what the last one used and says whether it
stays; one still fat after that leaves and the next file goes to a fresh one
(`indexer.jobs.worker_memory`), so a build's memory follows the document in
hand, not the largest one seen. Closing the pool on an exception (Ctrl-C) kills
the workers at once instead of waiting for the extractions in hand.

The indexer (local folders, remote sync, watch) and files_read (server) both
extract through this pool; the reader itself stays pure (no processes).
pebble's ProcessPool was tried and set aside: a worker that dies while
receiving its task (a file whose bytes alone exceed the memory cap) leaves it
"broken" for every later file.
"""
from __future__ import annotations

import atexit
import concurrent.futures as cf
import multiprocessing as mp
import signal
from multiprocessing import forkserver, resource_tracker
import os
import posixpath
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_nextcloud.reader.document import DEFAULT_LIMITS, Document, Limits, ReaderCode, ReaderError
from mcp_nextcloud.reader.extract import extract, is_light

from mcp_nextcloud.indexer.jobs.child import (DEFAULT_MEMORY_BYTES, GRACE_SECONDS, cap_memory, died, overran,
                                              reader_error, work)
from mcp_nextcloud.indexer.jobs.worker_memory import RECYCLE_ABOVE_FRESH, Settler
from mcp_nextcloud.indexer.models import FileRecord, RecordStatus, too_large_reason
from mcp_nextcloud.indexer.store.prepare import Prepared, prepare
from mcp_nextcloud.indexer.store.writer import IndexWriter, WriteTx

RECYCLE_AFTER = 500          # files per worker before a fresh one
# A worker's word after a file (staying or leaving) comes once it has handed that file's memory back:
# milliseconds. One silent this long is replaced (the next file is not lost: it goes to the fresh one).
SETTLE_SECONDS = 5.0
# forkserver: workers never inherit the indexer's threads and open databases.
_CONTEXT = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
# What the fork server imports once, so every worker forks with the reader loaded (a worker that imported
# it itself would pay it again at each start and recycle). The format parsers (openpyxl, pdfium...) load on
# a worker's first file of their kind: preloaded, they would sit in the fork server too, counted once more.
_PRELOAD = ["mcp_nextcloud.reader.extract", "mcp_nextcloud.indexer.jobs.child", "mcp_nextcloud.indexer.jobs.pool",
            "mcp_nextcloud.indexer.jobs.worker_memory",
            "mcp_nextcloud.indexer.store.prepare", "ctypes"]
_context_lock = threading.Lock()
_context: Any = None


def _worker_context() -> Any:
    """The multiprocessing context of every extraction worker in this process (the fork server's preload set once)."""
    global _context
    with _context_lock:
        if _context is None:
            ctx = mp.get_context(_CONTEXT)
            if _CONTEXT == "forkserver":
                ctx.set_forkserver_preload(_PRELOAD)
            # Registered before any pool's close (atexit runs last-registered first): workers stop, then this.
            atexit.register(_stop_helpers)
            _context = ctx
        return _context


def _stop_helpers() -> None:
    """At exit, stop the fork server, then the resource tracker, and wait for each.

    Left alone they notice this process is gone and exit a moment after it: `index add` would
    return while two of its processes still run. `_stop` is CPython's own (its tests use it);
    where it is missing, or a worker still runs, they end on their own as before.
    """
    if mp.active_children():   # a worker not stopped (no pool close): waiting for the tracker could hang
        return
    for helper in (getattr(forkserver, "_forkserver", None), getattr(resource_tracker, "_resource_tracker", None)):
        stop = getattr(helper, "_stop", None)
        if stop is not None:
            try:
                stop()
            except (OSError, ChildProcessError):   # already gone
                pass


@dataclass(frozen=True)
class Extracted:
    """What a worker returns: the Document and, when asked for, its index rows."""

    document: Document
    prepared: Prepared | None


class Extractor(Protocol):
    """What the indexer extracts through: an ExtractionPool, or InProcess for tests and cheap formats."""

    workers: int
    limits: Limits

    def submit(self, data: bytes, name: str, mime: str | None, *, rows: bool = True) -> "cf.Future[Extracted]":
        """Extract `data`; the Future holds the Extracted or the ReaderError."""
        ...


class InProcess:
    """Cheap text formats extracted in the calling thread (no process start); anything else still goes
    to a capped worker, since the bytes, not the name, decide what a file is (a hostile `notes.txt` may
    be a zip bomb). For plain-text syncs and tests that need no pool of their own."""

    workers = 1

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self.limits = limits
        self._capped: ExtractionPool | None = None
        self._lock = threading.Lock()

    def submit(self, data: bytes, name: str, mime: str | None, *, rows: bool = True) -> "cf.Future[Extracted]":
        if not is_light(data, name, mime):
            return self._pool().submit(data, name, mime, rows=rows)
        out: cf.Future[Extracted] = cf.Future()
        try:
            doc = extract(data, name, mime, limits=self.limits)
            out.set_result(Extracted(doc, prepare(doc) if rows else None))
        except Exception as exc:  # the Future carries it, as the pool's does
            out.set_exception(exc)
        return out

    def _pool(self) -> "ExtractionPool":
        with self._lock:
            if self._capped is None:
                self._capped = ExtractionPool(1, limits=self.limits)
                atexit.register(self._capped.close)
            return self._capped


IN_PROCESS = InProcess()


def _serve(conn: Any, limits: Limits, memory_bytes: int | None, recycle_above: int | None = RECYCLE_ABOVE_FRESH,
           release: bool = True) -> None:
    """Worker main loop: receive (data, name, mime, rows), answer `work`'s outcome, then say whether it stays.

    After each answer the worker hands back the memory that file used and sends True (ready for another)
    or False (still fat, or its heap is suspect): then it exits, and the parent, which reads that word
    before it sends the next file, starts a fresh worker for it. None or EOF ends the loop.
    """
    cap_memory(memory_bytes)   # reader.extract is loaded: this module imports it (with "spawn", before the cap)
    # Ctrl-C reaches the whole process group: the parent decides when this worker ends (no traceback here).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    settler = Settler(recycle_above, release=release)
    while True:
        try:
            fit = _answer(conn, limits)
            if fit is None:
                return
            fit = fit and settler.settle()   # the file's objects died with `_answer`'s frame
            conn.send(fit)
        except (EOFError, OSError):
            return
        if not fit:
            return


def _answer(conn: Any, limits: Limits) -> bool | None:
    """Receive one file and send its outcome; None when told to stop, False when the heap may be in a bad state."""
    msg = conn.recv()
    if msg is None:
        return None
    data, name, mime, rows = msg
    out = work(data, name, mime, limits, rows)
    conn.send(out)
    return not (out[0] == "error" and ReaderCode(out[1]) is ReaderCode.MEMORY)


POOL_CLOSED = "extraction pool is closed"


class ExtractionStopped(RuntimeError):
    """The pool was closed (without waiting: Ctrl-C, an error) before this file's extraction could end.

    Not a verdict on the file: `store_outcome` leaves its record as it was (pending), for the next run.
    """


class _Worker:
    """One capped child process, used by one thread at a time (`halt` may come from another)."""

    def __init__(self, ctx: Any, limits: Limits, memory_bytes: int | None, grace: float, recycle_after: int,
                 memory: tuple[int | None, bool]) -> None:
        self.ctx, self.limits, self.memory_bytes, self.grace = ctx, limits, memory_bytes, grace
        self.recycle_after = recycle_after
        self.memory = memory   # (recycle_above, release): what the worker does with its memory between files
        self.proc: Any = None
        self.conn: Any = None
        self.used = 0
        self.settling = False   # a file was answered; the worker's word on staying not read yet
        self.recycled_fat = 0   # workers that left after a file (still fat, or out of memory)
        self.halted = False
        self._lock = threading.Lock()   # proc start/stop against `halt`

    def _start(self) -> None:
        parent, child = self.ctx.Pipe(duplex=True)
        proc = self.ctx.Process(target=_serve, args=(child, self.limits, self.memory_bytes, *self.memory),
                                daemon=True)
        try:
            proc.start()
        except BaseException:
            parent.close()
            raise
        finally:
            child.close()
        # Only a started worker is recorded, so stop() never meets half a worker.
        self.proc, self.conn, self.used, self.settling = proc, parent, 0, False

    def stop(self, kill: bool = False) -> None:
        with self._lock:
            if self.proc is None:
                return
            try:
                if kill:
                    self.proc.kill()
                else:
                    self.conn.send(None)
            except (OSError, ValueError):   # gone already (it left after a file, or died)
                self.proc.kill()
            self.proc.join(5)
            if self.proc.is_alive():  # pragma: no cover - a child that ignores the stop message
                self.proc.kill()
                self.proc.join()
            self.conn.close()
            self.proc = self.conn = None

    def halt(self) -> None:
        """Kill the worker now (from any thread) and never start another: the pool is closing without waiting."""
        with self._lock:
            self.halted = True
            if self.proc is not None:
                self.proc.kill()

    def _fit(self) -> bool:
        """Whether the running worker may take a file: alive, not used up, and staying after its last file."""
        if self.proc is None:
            return False
        if self.settling:
            self.settling = False
            try:
                # Sent right after the file's answer, once its memory is handed back: milliseconds.
                stays = self.conn.recv() if self.conn.poll(SETTLE_SECONDS) else None
            except (EOFError, OSError):
                stays = None
            if stays is False:
                self.recycled_fat += 1
            if not stays:
                return False
        return self.proc.is_alive() and self.used < self.recycle_after

    def _ready(self) -> None:
        """A worker fit for the next file: this one, or a fresh one (none once halted)."""
        if self.halted:
            raise ExtractionStopped(POOL_CLOSED)
        if not self._fit():
            self.stop()
            with self._lock:
                if self.halted:
                    raise ExtractionStopped(POOL_CLOSED)
                self._start()

    def extract(self, data: bytes, name: str, mime: str | None, rows: bool) -> Extracted:
        self._ready()
        self.used += 1
        try:
            self.conn.send((data, name, mime, rows))
            ready = self.conn.poll(self.limits.max_seconds + self.grace)
            outcome = self.conn.recv() if ready else None
        except (EOFError, OSError):
            code = self.proc.exitcode if self.proc is not None else None
            self.stop(kill=True)
            if self.halted:
                raise ExtractionStopped(f"{name}: extraction stopped (the pool was closed)") from None
            raise died(name, code, self.memory_bytes) from None
        if outcome is None:
            self.stop(kill=True)
            raise overran(name, self.limits)
        self.settling = True
        status, value, extra = outcome
        if status == "ok":
            return Extracted(value, extra)
        raise reader_error(value, extra)


class ExtractionPool:
    """Bounded parallel extraction; `submit` returns a Future[Extracted] whose failure is a ReaderError."""

    def __init__(self, workers: int | None = None, *, limits: Limits = DEFAULT_LIMITS,
                 memory_bytes: int | None = DEFAULT_MEMORY_BYTES, grace_seconds: float = GRACE_SECONDS,
                 recycle_after: int = RECYCLE_AFTER, recycle_above: int | None = RECYCLE_ABOVE_FRESH,
                 release_memory: bool = True) -> None:
        """`recycle_above`: bytes a worker may hold above its fresh size after a file (None: no limit);
        `release_memory`: hand memory back between files (off only to measure what that saves)."""
        self.workers = max(1, workers or os.cpu_count() or 1)
        self.limits = limits
        self.memory_bytes = memory_bytes
        self._ctx = _worker_context()
        self._grace, self._recycle_after = grace_seconds, recycle_after
        self._memory = (recycle_above, release_memory)
        self._all: list[_Worker] = []
        self._idle = [self._new_worker() for _ in range(self.workers)]
        self._lock = threading.Lock()
        self._threads = cf.ThreadPoolExecutor(self.workers, thread_name_prefix="extract")
        self._closed = False

    def submit(self, data: bytes, name: str, mime: str | None, *, rows: bool = True) -> "cf.Future[Extracted]":
        """Extract `data` (named `name`) in a worker; `rows` also prepares its index rows there."""
        with self._lock:
            if self._closed:
                raise ExtractionStopped(POOL_CLOSED)
        return self._threads.submit(self.extract, data, name, mime, rows=rows)

    def extract(self, data: bytes, name: str, mime: str | None, *, rows: bool = True) -> Extracted:
        """Extract in a worker, the calling thread waiting (at most `workers` files run at once)."""
        if len(data) > self.limits.max_bytes:
            raise ReaderError(f"{name}: " + too_large_reason(len(data), self.limits.max_bytes),
                              code=ReaderCode.TOO_LARGE)
        with self._lock:
            if self._closed:
                raise ExtractionStopped(POOL_CLOSED)
            # More callers than workers (files_read calls next to the pool's threads): one more worker.
            worker = self._idle.pop() if self._idle else self._new_worker()
        try:
            return worker.extract(data, name, mime, rows)
        finally:
            with self._lock:
                self._idle.append(worker)

    def _new_worker(self) -> _Worker:
        worker = _Worker(self._ctx, self.limits, self.memory_bytes, self._grace, self._recycle_after, self._memory)
        self._all.append(worker)
        return worker

    @property
    def recycled_fat(self) -> int:
        """How many workers left after a file because they stayed fat (or ran out of memory) and were replaced."""
        return sum(w.recycled_fat for w in list(self._all))

    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        return [p.pid for p in (w.proc for w in list(self._all)) if p is not None and p.is_alive()]

    def close(self, *, wait: bool = True) -> None:
        """Stop every worker process, once running extractions finish; without `wait` (Ctrl-C, an error) at once.

        Without `wait` the workers are killed: an extraction in hand fails with ExtractionStopped (the file
        is left as it was), one not started is cancelled, and nothing is left running.
        """
        if not wait:
            with self._lock:
                self._closed = True
                workers = list(self._all)
            for w in workers:
                w.halt()
        self._threads.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            self._closed = True
            workers = list(self._all)
        for w in workers:
            w.stop()

    def __enter__(self) -> "ExtractionPool":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        # A build that fails or is interrupted has no use for the extractions in hand: do not wait for them.
        self.close(wait=exc_type is None)


def status_for(err: ReaderError) -> RecordStatus:
    """The index status a reader error code maps to."""
    if err.code is ReaderCode.TOO_LARGE:
        return RecordStatus.TOO_LARGE
    if err.code is ReaderCode.UNSUPPORTED:
        return RecordStatus.UNSUPPORTED
    return RecordStatus.FAILED


def store_outcome(tx: WriteTx, rec: FileRecord, outcome: Extracted | BaseException) -> FileRecord:
    """Store an extraction outcome (writer thread): the rows, or the failure with its reason.

    An extraction stopped or cancelled by closing the pool says nothing about the file: its record is
    left as it was (pending), to be extracted by the next run.
    """
    if isinstance(outcome, (ExtractionStopped, cf.CancelledError)):
        return rec
    if isinstance(outcome, ReaderError):
        out = tx.record_failure(rec.id, status_for(outcome), outcome.reason)
    elif isinstance(outcome, BaseException):   # the index records the cause, not a retry statement
        out = tx.record_failure(rec.id, RecordStatus.FAILED,
                                f"extraction failed ({type(outcome).__name__}: {outcome})")
    else:
        out = tx.store(rec.id, outcome.prepared or prepare(outcome.document))
    return out or rec


def finish(writer: IndexWriter, rec: FileRecord, outcome: Extracted | BaseException) -> FileRecord:
    """Store an extraction outcome and wait until it is committed; return the record as stored."""
    return writer.call(lambda tx: store_outcome(tx, rec, outcome))


def index_bytes(writer: IndexWriter, rec: FileRecord, data: bytes, pool: Extractor = IN_PROCESS) -> FileRecord:
    """Extract (in the pool, or in this process) and store, or record the failure with its reason."""
    name = posixpath.basename(rec.path) or rec.path
    try:
        outcome: Extracted | BaseException = pool.submit(data, name, rec.mime).result()
    except ReaderError as exc:
        outcome = exc
    return finish(writer, rec, outcome)
