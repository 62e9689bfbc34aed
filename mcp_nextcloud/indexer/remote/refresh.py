"""Keep the index fresh while `mcp-nextcloud serve` runs: a sync every `interval_s`, in a thread.

It goes through the same durable jobs as `mcp-nextcloud index sync`: when a
sync of the account is already queued or running (another process, the CLI),
it joins that one instead of starting a second; a queued job nobody claimed
yet is run here. A resync with nothing changed costs one PROPFIND, so a short
interval is cheap.
"""
from __future__ import annotations

import contextvars
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable

from mcp_nextcloud.nextcloud import refusals

from mcp_nextcloud.indexer.jobs import embed
from mcp_nextcloud.indexer.jobs.run import run_job
from mcp_nextcloud.indexer.jobs.store import (ACTIVE_STATES, CANCELLED, FAILED, INTERRUPTED, QUEUED, SUCCEEDED, Job,
                                              JobStore, jobs_path_for)
from mcp_nextcloud.indexer.remote.sync import DEFAULT_MAX_FILE_BYTES
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.indexer.remote.sync_worker import SYNC_KIND, error_text, sync_body, sync_key


# Syncs of one process that run at once. A process holds one account's sync, except the team's index service,
# which holds everyone's: twenty first syncs side by side took every core and the interpreter's lock from the
# calls (a grep waited ~300 ms); in turns, half the cores stay with the calls.
SYNCS_AT_ONCE = max(1, (os.cpu_count() or 2) // 2)
_TURNS = threading.BoundedSemaphore(SYNCS_AT_ONCE)
# A call after a round that did not succeed syncs again at once (retry_failed), at most this often: a person
# whose first sync failed (the server was down a moment) must not wait a whole interval for an index.
RETRY_AFTER_S = 30.0
# A round still waiting for a sync turn after this long says so (once per wait): a turn nobody gives back is a bug.
TURN_WAIT_REPORT_S = 60.0


class BackgroundSync:
    """Periodic remote sync in a daemon thread, with job-join semantics.

    client_factory() is called once per sync; with close_client=False (the
    default) the returned client is not closed, so the factory may hand out the
    server's shared client. `report` (a service's log) hears what a person
    watching would want to know: the first sync done, a round that did not
    succeed and why, a round skipped for refused credentials, a long wait for a
    turn; nothing on the quiet rounds.
    """

    def __init__(self, client_factory: Callable[[], Any], index: Index, interval_s: float = 300.0, *,
                 key: str | None = None, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
                 close_client: bool = False, jobs: JobStore | None = None,
                 report: Callable[[str], None] | None = None) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be positive (seconds between syncs)")
        self.client_factory = client_factory
        self.index = index
        self.interval_s = float(interval_s)
        self.jobs = jobs or JobStore(jobs_path_for(Path(index.path)))
        self._key = key
        self._max_file_bytes = max_file_bytes
        self._close_client = close_client
        self._kick = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.last_job: Job | None = None
        self.last_error: str | None = None
        self._running_here = False    # True while this object's thread runs a sync (stop() cancels it)
        self._failed_at: float | None = None   # when a round raised, with no job to tell (retry_failed)
        self._report = report
        self._said_refused = False     # the refused-credentials skip is said once per refusal
        self._said_done = False        # the first sync done is said once

    @property
    def key(self) -> str:
        """The join key: the account of the client (resolved on first use)."""
        if self._key is None:
            client = self.client_factory()
            try:
                self._key = sync_key(client.account)
            finally:
                if self._close_client:
                    client.close()
        return self._key

    # -- lifecycle -------------------------------------------------------------
    def start(self, *, sync_first: bool = True) -> "BackgroundSync":
        """Start the thread; the first sync runs at once unless sync_first=False."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return self
            self._stop.clear()
            if sync_first:
                self._kick.set()
            # The thread runs in the starter's context: a service's host started it within its person's
            # environment (environment.using), where the refusals record and settings of that person live.
            context = contextvars.copy_context()
            self._thread = threading.Thread(target=context.run, args=(self._loop,), name="mcp-nextcloud-refresh",
                                            daemon=True)
            self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread; a sync this thread is running is cancelled at its next safe point."""
        self._stop.set()
        self._kick.set()
        job = self.last_job
        if job is not None and job.state in ACTIVE_STATES and self._running_here:
            self.jobs.request_cancel(job.id)
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> "BackgroundSync":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- syncing -----------------------------------------------------------------
    def sync_now(self, wait: float | None = None) -> Job:
        """Queue (or join) a sync and wake the thread; wait up to `wait` seconds for it to finish.

        Without a running thread (start() not called) the sync runs in the
        caller's thread when it has to be run here.
        """
        job = self.jobs.create_or_join(SYNC_KIND, self.key)
        self.last_job = job
        if job.state == QUEUED:
            if self._thread is not None and self._thread.is_alive():
                self._kick.set()
            else:
                job = self._run(job)
        if wait:
            job = self.jobs.wait(job.id, wait)
        return job

    def _run(self, job: Job) -> Job:
        body = sync_body(Path(self.index.path), self.client_factory, max_file_bytes=self._max_file_bytes,
                         close_client=self._close_client, index=self.index)
        self._running_here = True
        try:
            final = run_job(self.jobs, job.id, body, error_text=error_text)
        finally:
            self._running_here = False
            embed.after_sync(self.index)
        self.last_job = final
        self.last_error = final.error
        self._said_outcome(final)
        return final

    def _say(self, message: str) -> None:
        if self._report is not None:
            try:
                self._report(message)
            except Exception:  # noqa: BLE001 - a log that cannot be written must not end the sync
                pass

    def _said_outcome(self, job: Job) -> None:
        """Report a finished round: the first success, and every round that did not succeed."""
        if job.state == SUCCEEDED:
            if not self._said_done:
                self._said_done = True
                self._say("first sync done")
        elif job.state not in ACTIVE_STATES:
            self._say(f"sync {job.state}: {job.error or job.message or 'no cause recorded'}")

    def _wait_turn(self) -> bool:
        """Wait until fewer than SYNCS_AT_ONCE syncs of this process run; False when stopped meanwhile."""
        since, said = time.monotonic(), False
        while not _TURNS.acquire(timeout=0.5):
            if self._stop.is_set():
                return False
            if not said and time.monotonic() - since > TURN_WAIT_REPORT_S:
                said = True
                self._say(f"waiting {TURN_WAIT_REPORT_S:g} s for a sync turn ({SYNCS_AT_ONCE} at once here)")
        if self._stop.is_set():
            _TURNS.release()
            return False
        return True

    def _credentials_refused(self) -> bool:
        """True while Nextcloud has refused this account's credentials (nextcloud.refusals): a round would only
        record another failed job. The record clears itself when the credentials change."""
        try:
            client = self.client_factory()
            try:
                account = client.account
            finally:
                if self._close_client:
                    client.close()
            return refusals.shared().refused_at(refusals.fingerprint(account)) is not None
        except Exception:  # noqa: BLE001 - cannot tell: run the round, whose own request is guarded anyway
            return False

    def _loop(self) -> None:
        next_at = time.monotonic() + self.interval_s
        try:
            while not self._stop.is_set():
                kicked = self._kick.wait(timeout=max(0.0, next_at - time.monotonic()))
                if self._stop.is_set():
                    break
                self._kick.clear()
                if not (kicked or time.monotonic() >= next_at):
                    continue
                if self._skipped_for_refusal():
                    next_at = time.monotonic() + self.interval_s   # no job, no request: nothing can change
                    continue
                if not self._guarded_round():
                    break
                next_at = time.monotonic() + self.interval_s
        finally:
            self.jobs.close()

    def _skipped_for_refusal(self) -> bool:
        """True (said once per refusal) while Nextcloud refuses the credentials: the round is skipped."""
        if not self._credentials_refused():
            self._said_refused = False
            return False
        if not self._said_refused:
            self._said_refused = True
            self._say("skipped: Nextcloud refused these credentials (no request until they change)")
        return True

    def _guarded_round(self) -> bool:
        """A round that cannot end the thread: one that raised (before its job was made, or while following
        one) is recorded, said, and retried by the next call after RETRY_AFTER_S (retry_failed)."""
        try:
            return self._round()
        except Exception as exc:  # noqa: BLE001 - the loop must outlive one bad round
            self.last_error = error_text(exc)
            self.last_job, self._failed_at = None, time.time()   # no job tells how this round went
            self._say(f"round failed: {self.last_error}")
            return True

    def _round(self) -> bool:
        """Run a sync, or follow the one already running for the account; False when stopped meanwhile."""
        if not self._wait_turn():
            return False
        try:
            job = self.jobs.create_or_join(SYNC_KIND, self.key)
            self.last_job, self._failed_at = job, None     # a job now says how the round went
            if job.state == QUEUED:
                self._run(job)
                return True
        finally:
            _TURNS.release()
        self._follow(job)
        return True

    def _follow(self, job: Job) -> None:
        """Wait (without a turn) for a sync run elsewhere; when it did not run to its end (the serve before this
        one went and cancelled it, its process died), sync at once: joining it must not leave the index
        incomplete until the next interval."""
        while not self._stop.is_set():
            job = self.jobs.wait(job.id, 1.0)
            if job.state not in ACTIVE_STATES:
                break
        self.last_job = job
        self._said_outcome(job)
        if job.state in (CANCELLED, INTERRUPTED, FAILED):
            self._kick.set()

    def retry_failed(self) -> bool:
        """A call's nudge: when the last round did not succeed (failed, cancelled, interrupted) and no sync runs,
        sync now rather than at the interval; at most once per RETRY_AFTER_S. True when it did."""
        job = self.last_job
        if self._thread is None or not self._thread.is_alive() or self._kick.is_set():
            return False
        if self._failed_at is not None:
            if time.time() - self._failed_at < RETRY_AFTER_S:
                return False
            self._failed_at = None
            self._kick.set()
            return True
        if job is None:
            return False
        try:
            job = self.jobs.get(job.id)
        except Exception:  # noqa: BLE001 - forgotten or unreadable: the interval's round will tell
            return False
        if job.state in ACTIVE_STATES or job.state == SUCCEEDED or time.time() - (job.finished_at or 0) < RETRY_AFTER_S:
            return False
        self._kick.set()
        return True
