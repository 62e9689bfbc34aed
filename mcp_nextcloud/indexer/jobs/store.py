"""Durable long-running jobs (index sync) in a small SQLite database of their own.

Why a database of its own: the index allows exactly one writer connection per
process, and job bookkeeping (progress, heartbeats, cancel requests) is written
from the CLI, the MCP server and the background worker at the same time. A
separate WAL database (`<index>.jobs.db`) keeps those writes out of the
index writer's way and works across processes.

Life of a job: queued -> running -> succeeded | failed | cancelled. A running
(or queued) job whose worker died (kill -9, power loss) stops heart-beating; it
is then shown as `interrupted` and is resumable: sync is incremental, so
resuming is running it again under the same id.
"""
from __future__ import annotations

import builtins
import contextlib

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import apsw

from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.indexer.store.filemodes import secure_database
from mcp_nextcloud.indexer.store.thread_connections import ThreadConnections

QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED, INTERRUPTED = (
    "queued", "running", "succeeded", "failed", "cancelled", "interrupted")
ACTIVE_STATES = (QUEUED, RUNNING)
FINAL_STATES = (SUCCEEDED, FAILED, CANCELLED)

HEARTBEAT_INTERVAL_S = 1.0
# A worker that has not beaten for this long is considered gone even when its
# pid cannot be checked (another host sharing the file, pid reuse).
STALE_AFTER_S = 20.0
# A queued job that no worker claimed within this time is interrupted too
# (the worker process failed to start).
UNCLAIMED_AFTER_S = 30.0
KEEP_JOBS = 200          # finished jobs beyond the most recent KEEP_JOBS are forgotten

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs(
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  key TEXT NOT NULL,
  state TEXT NOT NULL,
  created_at REAL NOT NULL,
  started_at REAL,
  finished_at REAL,
  heartbeat_at REAL,
  host TEXT,
  pid INTEGER,
  done INTEGER NOT NULL DEFAULT 0,
  total INTEGER NOT NULL DEFAULT 0,
  message TEXT NOT NULL DEFAULT '',
  result TEXT,
  error TEXT,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  attempts INTEGER NOT NULL DEFAULT 0,
  bytes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS jobs_key_state ON jobs(kind, key, state);
CREATE INDEX IF NOT EXISTS jobs_created ON jobs(created_at);
"""
_INDEXES = {"jobs_key_state", "jobs_created"}   # the indexes _SCHEMA makes
_COLUMNS = ("id", "kind", "key", "state", "created_at", "started_at", "finished_at", "heartbeat_at",
            "host", "pid", "done", "total", "message", "result", "error", "cancel_requested", "attempts", "bytes")


class JobCancelled(Exception):
    """Raised inside a worker at a safe point when a cancel was requested."""


class JobNotFound(LookupError):
    """No job with that id: the message says how to list the known ones."""

    def __init__(self, job_id: str):
        super().__init__(f"no job with id {job_id!r}. List the known jobs with 'mcp-nextcloud jobs list'")
        self.job_id = job_id


@dataclass(frozen=True)
class Job:
    """A snapshot of one job row. Times are unix seconds (UTC)."""

    id: str
    kind: str
    key: str
    state: str
    created_at: float
    started_at: float | None
    finished_at: float | None
    heartbeat_at: float | None
    host: str | None
    pid: int | None
    done: int
    total: int
    message: str
    result: dict[str, Any] | None
    error: str | None
    cancel_requested: bool
    attempts: int
    bytes: int = 0          # bytes downloaded so far (a sync), for a progress bar

    @property
    def finished(self) -> bool:
        return self.state in FINAL_STATES

    @property
    def resumable(self) -> bool:
        return self.state == INTERRUPTED

    def to_dict(self) -> dict[str, Any]:
        """The public form (CLI --json, MCP results): no host, no pid, ISO times."""
        out: dict[str, Any] = {
            "id": self.id, "kind": self.kind, "state": self.state,
            "progress": {"done": self.done, "total": self.total, "message": self.message, "bytes": self.bytes},
            "createdAt": iso_time(self.created_at), "startedAt": iso_time(self.started_at),
            "finishedAt": iso_time(self.finished_at), "attempts": self.attempts,
        }
        if self.cancel_requested and not self.finished:
            out["cancelRequested"] = True
        if self.result is not None:
            out["result"] = self.result
        if self.error:
            out["error"] = self.error
        if self.state == INTERRUPTED:
            out["hint"] = (f"the worker stopped without finishing; resume with 'mcp-nextcloud jobs resume {self.id}' "
                           "or run 'mcp-nextcloud index sync' again (finished files are not downloaded again)")
        elif self.state in ACTIVE_STATES:
            out["hint"] = f"still {self.state}; wait with 'mcp-nextcloud jobs wait {self.id} --timeout 60'"
        return out


def jobs_path_for(index_path: str | os.PathLike[str]) -> Path:
    """Where the jobs database of an index lives: next to it, `<index>.jobs.db`."""
    p = Path(index_path)
    return p.with_name(p.name + ".jobs.db")


def pid_alive(pid: int) -> bool:
    """True when a process with this pid exists on this host and is not a zombie."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # A killed child that nobody reaped yet still answers kill(0): read its state.
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
        return stat[stat.rindex(b")") + 2:stat.rindex(b")") + 3] not in (b"Z", b"X")
    except (OSError, ValueError):
        return True


BUSY_MS = 10_000    # a write waits this long for another connection's write to end


def _use_wal(db: apsw.Connection) -> None:
    """Put the store in WAL mode. On a new file, connections converting it at once get SQLITE_BUSY at once
    (SQLite calls no busy handler there: measured, 5 in 300 first opens of three threads): try again."""
    deadline = time.monotonic() + BUSY_MS / 1000
    while True:
        try:
            db.pragma("journal_mode", "wal")
            return
        except apsw.BusyError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


class JobStore:
    """Jobs persisted in SQLite; safe to use from several threads and processes.

    Each thread gets its own connection (apsw connections serialize calls).
    Writes are short IMMEDIATE transactions with a busy timeout.
    """

    def __init__(self, path: str | os.PathLike[str], *, stale_after_s: float = STALE_AFTER_S,
                 unclaimed_after_s: float = UNCLAIMED_AFTER_S):
        self.path = str(path)
        self.stale_after_s = stale_after_s
        self.unclaimed_after_s = unclaimed_after_s
        self._connections = ThreadConnections(self._open)
        self._host = socket.gethostname()
        secure_database(Path(self.path))   # 0700 folder, 0600 database (it names the files being synced)
        self._ensure_schema()

    def _ensure_schema(self) -> None:
        """Create or upgrade the table, writing only when it is missing or old.

        Opening a store that exists is a read: two threads of a process opening the store while a third
        queues a job (a grep's freshness check, a person's first background sync) each held a write
        transaction here and waited on one another until the busy timeout (10 s), failing the sync's round.
        """
        if self._columns() >= set(_COLUMNS) and self._indexes() >= _INDEXES:
            return
        with self._write() as db:
            db.execute(_SCHEMA)
            if "bytes" not in self._columns():   # a store made before the column
                db.execute("ALTER TABLE jobs ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0")

    def _columns(self) -> set[str]:
        return {row[1] for row in self._conn().execute("PRAGMA table_info(jobs)")}

    def _indexes(self) -> set[str]:
        return {row[0] for row in self._conn().execute("SELECT name FROM sqlite_master WHERE type='index'")}

    # -- connections ---------------------------------------------------
    def _conn(self) -> apsw.Connection:
        """This thread's connection (closed when the thread ends: indexer/store/thread_connections.py)."""
        return self._connections.get()

    def _open(self) -> apsw.Connection:
        db = apsw.Connection(self.path)
        db.set_busy_timeout(BUSY_MS)
        _use_wal(db)
        db.pragma("synchronous", "NORMAL")
        return db

    @contextlib.contextmanager
    def _write(self) -> Iterator[apsw.Connection]:
        """One write transaction: BEGIN IMMEDIATE, committed at the end, rolled back on an exception.

        Not apsw's `with connection` with transaction_mode IMMEDIATE: measured, a connection waiting to enter
        one kept the connection holding the lock from committing, so both waited out the busy timeout (10 s)
        and the waiter failed. A plain BEGIN IMMEDIATE waits only until the holder commits."""
        db = self._conn()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            if db.in_transaction:      # SQLite may have rolled it back itself (a full disk, an I/O error)
                db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def close(self) -> None:
        """Close this thread's connection (others close when their thread ends)."""
        self._connections.release()

    # -- reading -------------------------------------------------------
    def _row(self, job_id: str) -> Job | None:
        cur = self._conn().execute(f"SELECT {','.join(_COLUMNS)} FROM jobs WHERE id=?", (job_id,))
        row = cur.fetchone()
        return _to_job(row) if row else None

    def _is_dead(self, job: Job, now: float) -> bool:
        if job.state == RUNNING:
            if job.pid and job.host == self._host and not pid_alive(job.pid):
                return True
            return job.heartbeat_at is not None and now - job.heartbeat_at > self.stale_after_s
        if job.state == QUEUED:
            if job.pid and job.host == self._host and not pid_alive(job.pid):
                return True
            return job.pid is None and now - job.created_at > self.unclaimed_after_s
        return False

    def _settle(self, job: Job) -> Job:
        """Mark a job whose worker is gone as interrupted (persisted, race-free)."""
        if job.state in ACTIVE_STATES and self._is_dead(job, time.time()):
            with self._write() as db:
                db.execute("UPDATE jobs SET state=?, message=? WHERE id=? AND state=? AND "
                           "heartbeat_at IS ? AND pid IS ?",
                           (INTERRUPTED, "interrupted: the worker stopped without finishing", job.id,
                            job.state, job.heartbeat_at, job.pid))
            return self._row(job.id) or job
        return job

    def get(self, job_id: str) -> Job:
        """The job's current state; raises JobNotFound for an unknown id."""
        job = self._row(job_id)
        if job is None:
            raise JobNotFound(job_id)
        return self._settle(job)

    def list(self, limit: int = 20, *, kind: str | None = None) -> list[Job]:
        """The most recent jobs first."""
        sql = f"SELECT {','.join(_COLUMNS)} FROM jobs"
        args: tuple[Any, ...] = ()
        if kind:
            sql += " WHERE kind=?"
            args = (kind,)
        sql += " ORDER BY created_at DESC, rowid DESC LIMIT ?"
        rows = list(self._conn().execute(sql, args + (max(1, int(limit)),)))
        return [self._settle(_to_job(r)) for r in rows]

    def wait(self, job_id: str, timeout: float, *, poll_s: float = 0.1,
             clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> Job:
        """Wait up to `timeout` seconds for the job to finish; may return it still active.

        `clock` and `sleep` are injectable so a test can check the bound without waiting for it.
        """
        deadline = clock() + max(0.0, timeout)
        while True:
            job = self.get(job_id)
            if job.state not in ACTIVE_STATES or clock() >= deadline:
                return job
            sleep(min(poll_s, max(0.0, deadline - clock())) or 0.001)

    # -- creating, joining, resuming ----------------------------------
    def create_or_join(self, kind: str, key: str) -> Job:
        """Return the active job for (kind, key), or resume an interrupted one, or queue a new one.

        Runs in one IMMEDIATE transaction, so two processes asking at the same
        moment get the same job.
        """
        # Settle first (outside the write transaction): a dead worker's job must
        # not be joined.
        for job in self._matching(kind, key):
            self._settle(job)
        now = time.time()
        with self._write() as db:
            jobs = self._matching(kind, key)
            active = [j for j in jobs if j.state in ACTIVE_STATES]
            if active:
                return active[0]
            interrupted = [j for j in jobs if j.state == INTERRUPTED]
            if interrupted:
                job_id = interrupted[0].id          # resume under the same id
                self._requeue(db, job_id, kind, key)
            else:
                job_id = uuid.uuid4().hex[:12]
                db.execute("INSERT INTO jobs(id,kind,key,state,created_at,message) VALUES(?,?,?,?,?,?)",
                           (job_id, kind, key, QUEUED, now, "queued"))
                # A background refresher makes a job per interval: keep the history bounded.
                db.execute(f"DELETE FROM jobs WHERE state IN ({','.join('?' * len(FINAL_STATES))}) AND id NOT IN "
                           "(SELECT id FROM jobs ORDER BY created_at DESC LIMIT ?)", (*FINAL_STATES, KEEP_JOBS))
        return self.get(job_id)

    def _matching(self, kind: str, key: str) -> builtins.list[Job]:
        rows = self._conn().execute(
            f"SELECT {','.join(_COLUMNS)} FROM jobs WHERE kind=? AND key=? AND state IN (?,?,?) "
            "ORDER BY created_at DESC", (kind, key, QUEUED, RUNNING, INTERRUPTED))
        return [_to_job(r) for r in rows]

    def resume(self, job_id: str) -> Job:
        """Re-queue an interrupted job under the same id (or return the sync already active for its key);
        an active or finished job is returned as is."""
        job = self.get(job_id)
        if job.state != INTERRUPTED:
            return job
        with self._write() as db:
            active = [j for j in self._matching(job.kind, job.key) if j.state in ACTIVE_STATES]
            if active:
                return active[0]
            self._requeue(db, job_id, job.kind, job.key)
        return self.get(job_id)

    @staticmethod
    def _requeue(db: apsw.Connection, job_id: str, kind: str, key: str) -> None:
        # The claim deadline of a resumed job runs from now.
        db.execute("UPDATE jobs SET state=?, pid=NULL, host=NULL, heartbeat_at=NULL, started_at=NULL, "
                   "finished_at=NULL, cancel_requested=0, message=?, error=NULL, created_at=? WHERE id=? AND state=?",
                   (QUEUED, "resuming", time.time(), job_id, INTERRUPTED))
        # Older interrupted runs of the same work are covered by this one: close them.
        db.execute("UPDATE jobs SET state=?, finished_at=?, message=? WHERE kind=? AND key=? AND state=? AND id!=?",
                   (CANCELLED, time.time(), f"superseded by job {job_id}", kind, key, INTERRUPTED, job_id))

    def set_worker(self, job_id: str, pid: int) -> None:
        """Record the pid of the process that will run a queued job (so its death is noticed)."""
        with self._write() as db:
            db.execute("UPDATE jobs SET pid=?, host=?, heartbeat_at=? WHERE id=? AND state=?",
                       (pid, self._host, time.time(), job_id, QUEUED))

    # -- the worker side ----------------------------------------------
    def claim(self, job_id: str, pid: int | None = None) -> Job | None:
        """Move a queued job to running for this process; None if it is not queued any more."""
        now = time.time()
        pid = os.getpid() if pid is None else pid
        with self._write() as db:
            changed = db.execute(
                "UPDATE jobs SET state=?, started_at=?, heartbeat_at=?, pid=?, host=?, attempts=attempts+1, "
                "message=? WHERE id=? AND state=? RETURNING id",
                (RUNNING, now, now, pid, self._host, "running", job_id, QUEUED)).fetchall()
        return self.get(job_id) if changed else None

    def heartbeat(self, job_id: str, *, done: int | None = None, total: int | None = None,
                  message: str | None = None, bytes: int | None = None) -> bool:   # noqa: A002 - the column
        """Record liveness (and progress when given); returns True when a cancel was requested."""
        sets = ["heartbeat_at=?"]
        args: list[float | int | str] = [time.time()]
        for col, val in (("done", done), ("total", total), ("message", message), ("bytes", bytes)):
            if val is not None:
                sets.append(f"{col}=?")
                args.append(val)
        with self._write() as db:
            row = db.execute(f"UPDATE jobs SET {','.join(sets)} WHERE id=? AND state=? RETURNING cancel_requested",
                             (*args, job_id, RUNNING)).fetchone()
        return bool(row[0]) if row else True   # not running any more: stop

    def cancel_requested(self, job_id: str) -> bool:
        row = self._conn().execute("SELECT cancel_requested, state FROM jobs WHERE id=?", (job_id,)).fetchone()
        return row is None or bool(row[0]) or row[1] != RUNNING

    def finish(self, job_id: str, state: str, *, result: dict[str, Any] | None = None,
               error: str | None = None, message: str | None = None) -> Job:
        """Record the outcome of a job this process ran."""
        if state not in FINAL_STATES:
            raise ValueError(f"not a final state: {state}")
        with self._write() as db:
            db.execute("UPDATE jobs SET state=?, finished_at=?, heartbeat_at=?, result=?, error=?, "
                       "message=COALESCE(?, message) WHERE id=? AND state IN (?,?)",
                       (state, time.time(), time.time(),
                        json.dumps(result, separators=(",", ":")) if result is not None else None,
                        error, message or state, job_id, RUNNING, QUEUED))
        return self.get(job_id)

    def request_cancel(self, job_id: str) -> Job:
        """Ask for a job to stop. A queued or interrupted job is cancelled at once; a running one
        stops at its next safe point (between files). Finished jobs are returned unchanged."""
        self.get(job_id)  # unknown id -> JobNotFound
        with self._write() as db:
            db.execute("UPDATE jobs SET cancel_requested=1 WHERE id=? AND state=?", (job_id, RUNNING))
            db.execute("UPDATE jobs SET state=?, cancel_requested=1, finished_at=?, message=? "
                       "WHERE id=? AND state IN (?,?)",
                       (CANCELLED, time.time(), "cancelled before it ran", job_id, QUEUED, INTERRUPTED))
        return self.get(job_id)


def _to_job(row: Any) -> Job:
    d = dict(zip(_COLUMNS, row, strict=True))
    d["result"] = json.loads(d["result"]) if d["result"] else None
    d["cancel_requested"] = bool(d["cancel_requested"])
    return Job(**d)
