"""Durable jobs: states, join, cancel, bounded wait, and crash detection across real processes."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.jobs.run import JobHandle, run_job
from mcp_nextcloud.indexer.jobs.store import (CANCELLED, FAILED, INTERRUPTED, QUEUED, RUNNING, SUCCEEDED, JobCancelled,
                                              JobNotFound, JobStore, jobs_path_for, pid_alive)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> JobStore:
    return JobStore(jobs_path_for(tmp_path / "index.db"))


def test_jobs_db_lives_next_to_the_index(tmp_path: Path) -> None:
    assert jobs_path_for(tmp_path / "a" / "idx.db") == tmp_path / "a" / "idx.db.jobs.db"


def test_lifecycle_queued_running_succeeded_with_progress(store: JobStore) -> None:
    job = store.create_or_join("sync", "alice@host")
    assert job.state == QUEUED and job.done == 0

    def body(handle: JobHandle) -> dict:
        handle.progress(done=3, total=5, message="files")
        handle._flush()   # force the throttled write so another reader sees it now
        mid = store.get(job.id)
        assert (mid.state, mid.done, mid.total, mid.message) == (RUNNING, 3, 5, "files")
        return {"indexed": 5}

    final = run_job(store, job.id, body)
    assert final.state == SUCCEEDED
    assert final.result == {"indexed": 5}
    assert final.started_at is not None and final.finished_at >= final.started_at
    assert final.attempts == 1
    d = final.to_dict()
    assert d["state"] == "succeeded" and d["result"] == {"indexed": 5}
    assert "pid" not in json.dumps(d) and "host" not in d


def test_progress_records_the_bytes_downloaded(store: JobStore) -> None:
    job = store.create_or_join("sync", "alice@host")

    def body(handle: JobHandle) -> dict:
        handle.progress(done=2, total=4, message="/a.pdf", nbytes=4096)
        handle._flush()
        mid = store.get(job.id)
        assert (mid.done, mid.bytes) == (2, 4096) and mid.to_dict()["progress"]["bytes"] == 4096
        return {}

    assert run_job(store, job.id, body).state == SUCCEEDED


def test_a_store_made_before_the_bytes_column_gets_it(tmp_path: Path) -> None:
    import apsw

    path = jobs_path_for(tmp_path / "old.db")
    old = apsw.Connection(str(path))
    old.execute("CREATE TABLE jobs(id TEXT PRIMARY KEY, kind TEXT NOT NULL, key TEXT NOT NULL, state TEXT NOT NULL, "
                "created_at REAL NOT NULL, started_at REAL, finished_at REAL, heartbeat_at REAL, host TEXT, "
                "pid INTEGER, done INTEGER NOT NULL DEFAULT 0, total INTEGER NOT NULL DEFAULT 0, message TEXT NOT "
                "NULL DEFAULT '', result TEXT, error TEXT, cancel_requested INTEGER NOT NULL DEFAULT 0, attempts "
                "INTEGER NOT NULL DEFAULT 0)")
    old.execute("INSERT INTO jobs(id, kind, key, state, created_at) VALUES('j1', 'sync', 'k', 'succeeded', 1.0)")
    old.close()
    assert JobStore(path).get("j1").bytes == 0


def _race(actions: list) -> list[str]:
    """Run the actions in threads at once; the errors they raised."""
    errors: list[str] = []

    def run(action) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - collected: the test names them
            errors.append(f"{type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=run, args=(a,)) for a in actions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


@pytest.mark.parametrize("fresh", [True, False], ids=["new store", "store that exists"])
def test_stores_opened_while_a_job_is_queued_never_lock_each_other_out(tmp_path: Path, fresh: bool) -> None:
    """A person's first background sync queues its job while the first grep opens the store to read the running
    sync (coverage.py): before, the two write transactions waited on one another until the busy timeout and the
    sync's round failed with 'database is locked' (1 run in 4), leaving the index unsynced."""
    errors: list[str] = []
    for trial in range(25):
        path = tmp_path / f"t{trial}" / "index.jobs.db"
        path.parent.mkdir()
        queuer = None if fresh else JobStore(path)     # the background sync's store, made by another thread
        errors += _race([lambda q=queuer, p=path: (q or JobStore(p)).create_or_join("sync", "alice"),
                         lambda p=path: JobStore(p).list(10), lambda p=path: JobStore(p).list(10)])
        assert [j.state for j in JobStore(path).list(10)] == [QUEUED]
    assert errors == []


def test_second_request_joins_the_active_job_and_a_finished_one_starts_fresh(store: JobStore) -> None:
    first = store.create_or_join("sync", "k")
    again = store.create_or_join("sync", "k")
    other_key = store.create_or_join("sync", "other")
    assert again.id == first.id
    assert other_key.id != first.id
    run_job(store, first.id, lambda h: {})
    fresh = store.create_or_join("sync", "k")
    assert fresh.id != first.id and fresh.state == QUEUED


def test_failure_records_the_instruction_text(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")

    def body(handle: JobHandle) -> dict:
        raise RuntimeError("Nextcloud refused the credentials. Run `mcp-nextcloud login URL`. Do not retry.")

    final = run_job(store, job.id, body)
    assert final.state == FAILED
    assert "mcp-nextcloud login" in final.error and "Do not retry" in final.error


def test_cancel_queued_is_immediate_and_the_worker_does_not_run_it(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")
    assert store.request_cancel(job.id).state == CANCELLED
    ran = []
    final = run_job(store, job.id, lambda h: ran.append(1) or {})
    assert final.state == CANCELLED and ran == []


def test_cancel_running_is_honoured_at_the_next_safe_point(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")
    reached = threading.Event()
    processed = []

    def body(handle: JobHandle) -> dict:
        for i in range(1000):
            handle.check()          # the safe point between files
            processed.append(i)
            if i == 2:
                reached.set()
            time.sleep(0.01)
        return {}

    t = threading.Thread(target=lambda: run_job(store, job.id, body))
    t.start()
    assert reached.wait(5)
    assert store.request_cancel(job.id).cancel_requested
    t.join(10)
    final = store.get(job.id)
    assert final.state == CANCELLED
    assert len(processed) < 1000


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_wait_is_bounded_and_may_return_still_running(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")
    store.claim(job.id)
    clock = FakeClock()
    got = store.wait(job.id, timeout=0.3, clock=clock.monotonic, sleep=clock.sleep)
    assert got.state == RUNNING
    assert 0.3 <= clock.now < 0.3 + 0.1   # waited its whole timeout (simulated), not one poll more
    assert "jobs wait" in got.to_dict()["hint"]
    store.finish(job.id, SUCCEEDED, result={})
    assert store.wait(job.id, timeout=5).state == SUCCEEDED


def test_unknown_id_is_a_clear_error(store: JobStore) -> None:
    with pytest.raises(JobNotFound) as err:
        store.get("nope")
    assert "jobs list" in str(err.value)


def test_list_most_recent_first(store: JobStore) -> None:
    ids = []
    for key in ("a", "b", "c"):
        ids.append(store.create_or_join("sync", key).id)
        time.sleep(0.002)
    assert [j.id for j in store.list(limit=2)] == ids[::-1][:2]


def test_history_of_finished_jobs_is_bounded(tmp_path, monkeypatch) -> None:
    import mcp_nextcloud.indexer.jobs.store as jobs_module

    monkeypatch.setattr(jobs_module, "KEEP_JOBS", 3)
    store = JobStore(tmp_path / "j.db")
    ids = []
    for _ in range(6):
        job = store.create_or_join("sync", "k")
        ids.append(job.id)
        run_job(store, job.id, lambda h: {})
    kept = [j.id for j in store.list(limit=50)]
    assert kept == ids[::-1][:3]


def test_join_from_another_process_sees_the_same_job(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")
    store.claim(job.id)
    code = ("import sys; from mcp_nextcloud.indexer.jobs.store import JobStore; "
            "print(JobStore(sys.argv[1]).create_or_join('sync','k').id)")
    out = subprocess.run([sys.executable, "-c", code, store.path], cwd=ROOT, capture_output=True,
                         text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == job.id


_WORKER = """
import sys, time
from mcp_nextcloud.indexer.jobs.store import JobStore
from mcp_nextcloud.indexer.jobs.run import run_job
store = JobStore(sys.argv[1])
def body(h):
    h.progress(done=1, total=10, message="working"); h._flush()
    print("claimed", flush=True)
    time.sleep(60)
    return {}
run_job(store, sys.argv[2], body)
"""


def test_kill_9_of_the_worker_shows_interrupted_and_resume_requeues_the_same_id(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")
    proc = subprocess.Popen([sys.executable, "-c", _WORKER, store.path, job.id], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stdout.readline().strip() == "claimed"
        assert store.get(job.id).state == RUNNING
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert not pid_alive(proc.pid)
    seen = store.get(job.id)
    assert seen.state == INTERRUPTED and seen.resumable
    assert seen.done == 1 and "resume" in seen.to_dict()["hint"]
    resumed = store.create_or_join("sync", "k")       # the next sync resumes it
    assert resumed.id == job.id and resumed.state == QUEUED
    final = run_job(store, job.id, lambda h: {"ok": True})
    assert final.state == SUCCEEDED and final.attempts == 2


def test_stale_heartbeat_without_a_checkable_pid_is_interrupted(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "j.db", stale_after_s=0.2)
    job = store.create_or_join("sync", "k")
    store.claim(job.id, pid=os.getpid())      # alive pid: only the heartbeat can tell
    assert store.get(job.id).state == RUNNING
    time.sleep(0.3)
    assert store.get(job.id).state == INTERRUPTED
    assert store.resume(job.id).state == QUEUED


def test_resuming_one_interrupted_run_closes_older_ones(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "j.db", stale_after_s=0.05)
    old = store.create_or_join("sync", "k")
    store.claim(old.id, pid=os.getpid())
    time.sleep(0.1)
    assert store.get(old.id).state == INTERRUPTED
    # A second crash of a fresh run (its worker left before the first was resumed).
    with store._conn() as db:
        db.execute("INSERT INTO jobs(id,kind,key,state,created_at,message) VALUES('newer','sync','k',?,?,'x')",
                   (INTERRUPTED, time.time()))
    assert store.resume(old.id).state == QUEUED
    newer = store.get("newer")
    assert newer.state == CANCELLED and old.id in newer.message


def test_heartbeat_thread_keeps_a_slow_job_alive(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "j.db", stale_after_s=0.5)
    job = store.create_or_join("sync", "k")
    claimed = store.claim(job.id)
    assert claimed is not None
    with JobHandle(store, job.id, interval_s=0.1):
        # No progress calls at all, like one long download: only the beat thread writes.
        t0 = time.monotonic()
        while time.monotonic() - t0 < 1.0:
            assert store.get(job.id).state == RUNNING
            time.sleep(0.1)
    store.finish(job.id, SUCCEEDED, result={})


def test_job_cancelled_exception_ends_in_cancelled(store: JobStore) -> None:
    job = store.create_or_join("sync", "k")

    def body(handle: JobHandle) -> dict:
        raise JobCancelled("stop")

    assert run_job(store, job.id, body).state == CANCELLED
