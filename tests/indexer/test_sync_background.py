"""BackgroundSync (what `mcp-nextcloud serve` uses): periodic syncs in a thread, joined through the job store."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mcp_nextcloud import environment
from mcp_nextcloud.nextcloud import refusals
from mcp_nextcloud.indexer.jobs.store import CANCELLED, RUNNING, SUCCEEDED, JobStore, jobs_path_for
from mcp_nextcloud.indexer.remote.refresh import BackgroundSync
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.remote.sync_worker import SYNC_KIND, sync_key
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from tests.helpers import wait_for


@pytest.fixture
def index(tmp_path):
    """A fresh index of our own (not relying on another module's fixture)."""
    ix = Index.open(tmp_path / "index.db")
    yield ix
    ix.close()


@pytest.fixture
def small(emulator_factory):
    emu = emulator_factory(seed="empty")
    emu.state.mkdir("alice", "/notes")
    emu.state.put_file("alice", "/notes/one.txt", b"first note about herons\n")
    emu.state.put_file("alice", "/notes/two.txt", b"second note about otters\n")
    return emu


@pytest.fixture
def client(small):
    with NextcloudClient(Account(**small.account("alice")), retries=1, backoff=0.01) as c:
        yield c


def grep_paths(index, query):
    return [h.path for h in index.grep(query).hits]


def test_sync_now_runs_one_sync_and_records_it_as_a_job(small, client, index):
    bg = BackgroundSync(lambda: client, index, interval_s=60)
    job = bg.sync_now(wait=30)
    assert job.state == SUCCEEDED and job.result["indexed"] == 2
    assert grep_paths(index, "otters") == ["/notes/two.txt"]
    assert bg.jobs.get(job.id).kind == SYNC_KIND


def test_the_thread_keeps_the_index_fresh_at_the_interval(small, client, index):
    with BackgroundSync(lambda: client, index, interval_s=0.3) as bg:
        wait_for(lambda: grep_paths(index, "herons") == ["/notes/one.txt"])
        small.state.put_file("alice", "/notes/three.txt", b"a third note about puffins\n")
        wait_for(lambda: grep_paths(index, "puffins") == ["/notes/three.txt"])
        small.reset_requests()

        def succeeded() -> int:
            return len([j for j in bg.jobs.list(limit=100) if j.state == SUCCEEDED])

        before = succeeded()
        wait_for(lambda: succeeded() >= before + 3)   # three more rounds with nothing changed
        rounds = succeeded() - before
        propfinds, requests = small.request_count("PROPFIND"), small.request_count()
    # Each idle round costs one PROPFIND and nothing else (a round in flight at either end may add one).
    assert requests == propfinds and abs(propfinds - rounds) <= 1


def test_a_sync_running_elsewhere_is_joined_not_duplicated(small, client, index):
    store = JobStore(jobs_path_for(index.path))
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        held = store.create_or_join(SYNC_KIND, sync_key(client.account))
        store.claim(held.id, pid=other.pid)            # "another process" is running this account's sync
        small.reset_requests()
        bg = BackgroundSync(lambda: client, index, interval_s=60, jobs=store)
        job = bg.sync_now(wait=0.3)
        assert job.id == held.id and job.state == RUNNING
        assert small.request_count() == 0              # nothing was synced twice
    finally:
        other.kill()
        other.wait()


def test_a_joined_sync_that_ends_cancelled_is_followed_by_a_sync_of_its_own(small, client, index):
    """A serve that attaches while the last one's sync is being cancelled joins that job: when it ends cancelled
    (or interrupted), this thread syncs at once rather than leaving the index incomplete for a whole interval."""
    store = JobStore(jobs_path_for(index.path))
    held = store.create_or_join(SYNC_KIND, sync_key(client.account))
    store.claim(held.id, pid=os.getpid())          # the going serve's thread, in this process, still on it
    bg = BackgroundSync(lambda: client, index, interval_s=600, jobs=store).start()
    try:
        wait_for(lambda: bg.last_job is not None and bg.last_job.id == held.id, what="the running sync joined")
        assert grep_paths(index, "herons") == []
        store.finish(held.id, CANCELLED, error="cancelled: the serve went")
        wait_for(lambda: grep_paths(index, "herons") == ["/notes/one.txt"], what="a sync of its own")
    finally:
        bg.stop()
    assert store.get(held.id).state == CANCELLED and bg.last_job is not None and bg.last_job.id != held.id


def test_the_thread_runs_in_the_environment_of_whoever_started_it(small, client, index, tmp_path):
    """The team's service starts each person's sync within that person's environment: the thread must read
    that person's refusals record, not the service process's."""
    record = tmp_path / "refused-credentials"
    refusals.shared(record).record(refusals.fingerprint(client.account))
    with environment.using({"MCP_NEXTCLOUD_REFUSED": str(record)}):
        bg = BackgroundSync(lambda: client, index, interval_s=600).start()
    try:
        small.reset_requests()
        time.sleep(1.0)      # a round it would run happens at once (sync_first): none may
        assert small.request_count() == 0 and bg.last_job is None
    finally:
        bg.stop()


def test_a_call_after_a_round_that_failed_syncs_again_at_once(small, client, index, monkeypatch):
    """A person whose first sync failed (the server refused a moment) must not wait a whole interval."""
    from mcp_nextcloud.indexer.remote import refresh

    small.faults.add(method="PROPFIND", status=503, times=1000)
    bg = BackgroundSync(lambda: client, index, interval_s=600).start()
    try:
        wait_for(lambda: bg.last_job is not None and bg.jobs.get(bg.last_job.id).state == "failed",
                 what="the first round failed")
        assert bg.retry_failed() is False                  # within RETRY_AFTER_S of the failure: not yet
        small.faults.clear()
        monkeypatch.setattr(refresh, "RETRY_AFTER_S", 0.0)
        assert bg.retry_failed() is True
        wait_for(lambda: grep_paths(index, "herons") == ["/notes/one.txt"], what="the retried round")
        assert bg.retry_failed() is False                  # it succeeded: nothing to retry
    finally:
        bg.stop()


def test_a_call_after_a_round_that_failed_before_its_job_syncs_again(small, client, index, monkeypatch, tmp_path):
    """A round can fail before it makes a job (its jobs database could not be written): a call retries it."""
    from mcp_nextcloud.indexer.remote import refresh

    calls = {"n": 0}

    def factory():
        calls["n"] += 1
        if calls["n"] <= 2:      # the refusals check, then the round's own (the sync key)
            raise OSError("the account could not be read")
        return client

    said: list[str] = []
    bg = BackgroundSync(factory, index, interval_s=600, report=said.append).start()
    try:
        wait_for(lambda: bg.last_error is not None, what="the first round failed")
        assert bg.last_job is None and bg.retry_failed() is False      # within RETRY_AFTER_S: not yet
        assert len(said) == 1 and said[0].startswith("round failed: ") and "OSError" in said[0], said
        monkeypatch.setattr(refresh, "RETRY_AFTER_S", 0.0)
        assert bg.retry_failed() is True
        wait_for(lambda: grep_paths(index, "herons") == ["/notes/one.txt"], what="the retried round")
        wait_for(lambda: said[1:] == ["first sync done"], what="the success said, once")
    finally:
        bg.stop()


def test_a_round_that_fails_while_following_a_joined_sync_does_not_end_the_thread(small, client, index,
                                                                                  monkeypatch):
    """Following a sync run elsewhere can fail (here its job is deleted from under it, as by a hand clearing
    the jobs database): the thread lives on, says why, and a call after RETRY_AFTER_S syncs again."""
    from mcp_nextcloud.indexer.remote import refresh

    elsewhere = JobStore(jobs_path_for(index.path))
    job = elsewhere.create_or_join(SYNC_KIND, sync_key(client.account))
    elsewhere.claim(job.id, pid=os.getpid())
    said: list[str] = []
    bg = BackgroundSync(lambda: client, index, interval_s=600, report=said.append).start()
    try:
        wait_for(lambda: bg.last_job is not None and bg.last_job.id == job.id, what="the running sync joined")
        with elsewhere._conn() as db:
            db.execute("DELETE FROM jobs WHERE id=?", (job.id,))
        wait_for(lambda: said, what="the failed round said")
        assert said[0].startswith("round failed: ") and "JobNotFound" in said[0], said
        assert bg._thread is not None and bg._thread.is_alive()
        monkeypatch.setattr(refresh, "RETRY_AFTER_S", 0.0)
        assert bg.retry_failed() is True
        wait_for(lambda: grep_paths(index, "herons") == ["/notes/one.txt"], what="the retried round")
    finally:
        bg.stop()
        elsewhere.close()


def test_stop_cancels_the_sync_it_is_running(small, client, index):
    for i in range(30):
        small.state.put_file("alice", f"/notes/n{i}.txt", f"note {i}\n".encode())
    small.faults.add(method="GET", delay=0.2, times=100)
    bg = BackgroundSync(lambda: client, index, interval_s=60).start()
    wait_for(lambda: bg.last_job is not None and bg.jobs.get(bg.last_job.id).done >= 1)
    thread = bg._thread
    bg.stop()          # cancels at the next safe point and joins the thread
    assert thread is not None and not thread.is_alive()
    job = bg.jobs.get(bg.last_job.id)
    assert job.state == "cancelled" and job.result["indexed"] < 32


def test_interval_must_be_positive(client, index):
    with pytest.raises(ValueError, match="interval_s"):
        BackgroundSync(lambda: client, index, interval_s=0)
