"""Running a durable job: claim it, beat, report progress, honour cancel, record the outcome.

The store (indexer/jobs.py) only persists; this module is the worker side
that the CLI worker process and the MCP server's background thread share.
"""
from __future__ import annotations

import threading
import time
from typing import Any, Callable

from mcp_nextcloud.indexer.jobs.store import (CANCELLED, FAILED, HEARTBEAT_INTERVAL_S, SUCCEEDED, Job, JobCancelled,
                                              JobStore)


class JobHandle:
    """What a running job's code sees: progress reporting and cancel checks.

    A daemon thread beats every HEARTBEAT_INTERVAL_S so a long download does
    not look like a dead worker; progress writes are throttled.
    """

    def __init__(self, store: JobStore, job_id: str, *, interval_s: float = HEARTBEAT_INTERVAL_S):
        self.store = store
        self.id = job_id
        self._interval = interval_s
        self._cancel = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._pending: dict[str, Any] = {}
        self._last_write = 0.0
        self._thread: threading.Thread | None = None

    def __enter__(self) -> "JobHandle":
        self._thread = threading.Thread(target=self._beat, name=f"job-heartbeat-{self.id}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._flush()

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self._interval):
                self._flush()
        finally:
            self.store.close()

    def _flush(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, {}
            self._last_write = time.monotonic()
        if self.store.heartbeat(self.id, **pending):
            self._cancel.set()

    def progress(self, done: int | None = None, total: int | None = None, message: str | None = None,
                 nbytes: int | None = None) -> None:
        """Record progress (files done of those known, bytes downloaded); written at most a few times a second."""
        with self._lock:
            for k, v in (("done", done), ("total", total), ("message", message), ("bytes", nbytes)):
                if v is not None:
                    self._pending[k] = v
            due = time.monotonic() - self._last_write > 0.25
        if due:
            self._flush()

    def cancelled(self) -> bool:
        """True once a cancel was requested (checked against the database, cheaply)."""
        if not self._cancel.is_set() and self.store.cancel_requested(self.id):
            self._cancel.set()
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise JobCancelled at a safe point when a cancel was requested."""
        if self.cancelled():
            raise JobCancelled(f"job {self.id} was cancelled")


def run_job(store: JobStore, job_id: str, body: Callable[[JobHandle], dict[str, Any]],
            *, error_text: Callable[[BaseException], str] = str) -> Job:
    """Claim a queued job and run `body(handle)` in this thread; record the outcome.

    Returns the final job (or the job as it is, when it was not queued: another
    worker has it or it was cancelled before it started).
    """
    job = store.claim(job_id)
    if job is None:
        return store.get(job_id)
    result: dict[str, Any] | None = None
    outcome, error = SUCCEEDED, None
    with JobHandle(store, job_id) as handle:
        try:
            result = body(handle)
        except JobCancelled:
            outcome = CANCELLED
        except Exception as exc:  # noqa: BLE001 - every failure becomes an instruction text on the job
            outcome, error = FAILED, error_text(exc)
    # The handle has written its last progress by now; the outcome goes last.
    if outcome == CANCELLED:
        return store.finish(job_id, CANCELLED, message="cancelled at a safe point; the index is consistent")
    if outcome == FAILED:
        return store.finish(job_id, FAILED, error=error, message="failed")
    if result and result.get("cancelled") and handle.cancelled():
        return store.finish(job_id, CANCELLED, result=result, message="cancelled at a safe point; "
                            "the index is consistent")
    return store.finish(job_id, SUCCEEDED, result=result if result is not None else {}, message="done")
