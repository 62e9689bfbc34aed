"""`mcp-nextcloud index sync` and `mcp-nextcloud jobs ...` as real processes against the emulator.

The sync runs in the detached worker the CLI starts; these tests drive it
from other processes (status, wait, cancel, resume) and kill it with SIGKILL.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.jobs.store import JobStore, jobs_path_for
from mcp_nextcloud.indexer.index import Index
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]
DAV = "/remote.php/dav/files/alice"
FILES = {f"/f{i // 4}/note{i}.txt": f"note number {i} about topic{i}\n".encode() for i in range(12)}


@pytest.fixture
def env(emulator_factory, tmp_path):
    """An emulator with FILES for alice and the environment that points the CLI at it."""
    emu = emulator_factory(seed="empty")
    for path, data in FILES.items():
        folder = path.rsplit("/", 1)[0]
        if emu.state.find("alice", folder) is None:
            emu.state.mkdir("alice", folder)
        emu.state.put_file("alice", path, data)
    acct = emu.account("alice")
    environ = {**os.environ, "PYTHONPATH": str(ROOT), "NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": "alice",
               "NEXTCLOUD_APP_PASSWORD": acct["app_password"],
               "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "no-config.json"),
               "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db")}
    environ.pop("NEXTCLOUD_PUBLIC_URL", None)
    return emu, environ, tmp_path / "index.db"


def cli(environ: dict, *args: str, timeout: float = 120) -> tuple[int, dict, str]:
    out = subprocess.run([sys.executable, "-m", "mcp_nextcloud", *args], cwd=ROOT, env=environ, capture_output=True,
                         text=True, timeout=timeout)
    data = json.loads(out.stdout) if out.stdout.strip().startswith("{") else {}
    return out.returncode, data, out.stdout + out.stderr


def test_index_sync_wait_json_then_jobs_status_and_list(env):
    emu, environ, index_path = env
    code, job, text = cli(environ, "index", "sync", "--wait", "60", "--json")
    assert code == 0, text
    assert job["state"] == "succeeded" and job["result"]["indexed"] == len(FILES)
    assert job["joined"] is False
    assert text.split("\n", 1)[0] == json.dumps(job, separators=(",", ":"), ensure_ascii=False)   # compact
    for secret in (environ["NEXTCLOUD_APP_PASSWORD"], emu.url, "Authorization"):
        assert secret not in text
    code, status, _ = cli(environ, "jobs", "status", job["id"], "--json")
    assert code == 0 and status["id"] == job["id"] and status["state"] == "succeeded"
    with Index.open(index_path) as index:
        assert [h.path for h in index.grep("topic7").hits] == ["/f1/note7.txt"]
    # A second sync with nothing changed: one PROPFIND on the wire.
    emu.reset_requests()
    code, again, _ = cli(environ, "index", "sync", "--wait", "60", "--json")
    assert code == 0 and again["id"] != job["id"] and again["result"]["propfinds"] == 1
    assert emu.request_count() == 1
    code, listing, _ = cli(environ, "jobs", "list", "--json")
    assert [j["id"] for j in listing["jobs"]] == [again["id"], job["id"]]


def test_sync_without_credentials_names_the_login_command(env):
    _, environ, _ = env
    for var in ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD"):
        environ.pop(var)
    code, data, text = cli(environ, "index", "sync", "--json")
    assert code == 2
    assert data["error"]["code"] == "no_credentials" and "mcp-nextcloud login" in data["error"]["action"]
    assert data["error"]["retry"] is False
    assert "Traceback" not in text


def test_bounded_wait_then_join_then_cancel_from_other_processes(env):
    emu, environ, index_path = env
    emu.faults.add(method="GET", delay=2.5, times=100)          # every download is slow (4 at a time)
    code, job, text = cli(environ, "index", "sync", "--json")
    assert code == 75 and job["state"] in ("queued", "running"), text
    t0 = time.monotonic()
    code, waited, _ = cli(environ, "jobs", "wait", job["id"], "--timeout", "0.5", "--json")
    assert code == 75 and waited["state"] == "running" and "jobs wait" in waited["hint"]
    assert time.monotonic() - t0 < 30
    code, joined, _ = cli(environ, "index", "sync", "--json")
    assert joined["id"] == job["id"] and joined["joined"] is True
    code, cancelled, _ = cli(environ, "jobs", "cancel", job["id"], "--json")
    assert code == 0 and cancelled["state"] in ("running", "cancelled")
    code, final, _ = cli(environ, "jobs", "wait", job["id"], "--timeout", "30", "--json")
    assert code == 1 and final["state"] == "cancelled"
    assert final["result"]["cancelled"] is True and final["result"]["indexed"] < len(FILES)
    with Index.open(index_path) as index:
        assert index.folder_etag("/") is None
        assert all(r.status == "indexed" for r in index.files_under("/"))


def test_kill_9_mid_sync_shows_interrupted_and_resume_does_not_download_finished_files(env):
    emu, environ, index_path = env
    emu.faults.add(method="GET", delay=0.3, times=100)
    code, job, text = cli(environ, "index", "sync", "--json")
    assert code == 75, text
    store = JobStore(jobs_path_for(index_path))
    running = wait_for(lambda: (j := store.get(job["id"])).state == "running" and j.done >= 3 and j)
    os.kill(running.pid, signal.SIGKILL)
    wait_for(lambda: store.get(job["id"]).state == "interrupted", timeout=15)
    code, status, _ = cli(environ, "jobs", "status", job["id"], "--json")
    assert status["state"] == "interrupted" and "jobs resume" in status["hint"]
    with Index.open(index_path) as index:
        finished = {r.path for r in index.files_under("/") if r.status == "indexed"}
    assert 1 <= len(finished) < len(FILES)
    # The killed worker's downloads are still being answered (each GET is delayed 0.3 s): let the
    # emulator finish them before counting, or they would be counted as the resume's requests.
    settled = {"n": -1, "since": time.monotonic()}

    def log_settled() -> bool:
        n = len(emu.requests)
        if n != settled["n"]:
            settled.update(n=n, since=time.monotonic())
        return time.monotonic() - settled["since"] > 0.8

    wait_for(log_settled, timeout=15)
    emu.faults.clear()
    emu.reset_requests()
    code, resumed, _ = cli(environ, "jobs", "resume", job["id"], "--json")
    assert code == 0 and resumed["id"] == job["id"] and resumed["state"] in ("queued", "running", "succeeded")
    code, final, _ = cli(environ, "jobs", "wait", job["id"], "--timeout", "60", "--json")
    assert code == 0 and final["state"] == "succeeded" and final["attempts"] == 2
    for path in finished:
        assert emu.request_count("GET", DAV + path) == 0, path
    assert emu.request_count("GET") <= len(FILES) - len(finished) + 1   # +1: the file cut mid-download
    with Index.open(index_path) as index:
        assert {r.path for r in index.files_under("/") if r.status == "indexed"} == set(FILES)


def test_jobs_commands_answer_clearly_for_an_unknown_id(env):
    _, environ, _ = env
    code, data, text = cli(environ, "jobs", "wait", "nosuchjob", "--timeout", "1", "--json")
    assert code == 2 and "jobs list" in data["error"]["message"] and "Traceback" not in text


def test_readable_output_names_state_progress_failures_and_hint(tmp_path, capsys):
    from mcp_nextcloud.indexer.jobs.run import run_job
    from mcp_nextcloud.cli.sync import print_job

    store = JobStore(tmp_path / "j.db")
    job = store.create_or_join("sync", "k")
    print_job(store.get(job.id), False)
    queued = capsys.readouterr().out
    assert f"job {job.id}: queued" in queued and "jobs wait" in queued
    result = {"indexed": 3, "failed": 1, "failures": [{"path": "/a/x.pdf", "reason": "download failed: timeout"}]}
    final = run_job(store, job.id, lambda h: (h.progress(done=4, total=4), result)[1])
    print_job(final, False)
    out = capsys.readouterr().out
    assert f"job {job.id}: succeeded (4/4 files)" in out
    assert "indexed 3, failed 1" in out and "failed: /a/x.pdf: download failed: timeout" in out
