"""The detached process that runs one sync job: `python -m mcp_nextcloud.indexer.remote.sync_worker JOBID --index PATH`.

`mcp-nextcloud index sync` queues (or joins) the job and starts this process in
a session of its own, so the CLI can exit while the sync goes on. The worker
loads the account itself (config file, environment overrides), claims the job,
beats while it works and records the outcome as an instruction text: never a
traceback, a URL or a credential.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

from mcp_nextcloud.nextcloud.errors import NextcloudError, clean_detail

from mcp_nextcloud.indexer.jobs import embed
from mcp_nextcloud.indexer.jobs.run import JobHandle, run_job
from mcp_nextcloud.indexer.jobs.store import QUEUED, Job, JobStore, jobs_path_for
from mcp_nextcloud.indexer.remote.sync import DEFAULT_MAX_FILE_BYTES, sync
from mcp_nextcloud.indexer.store.index import Index
from mcp_nextcloud.environment import for_child

SYNC_KIND = "sync"


def sync_key(account: Any) -> str:
    """The join key of an account's sync: one running sync per account (and index)."""
    return f"{account.user}@{account.url}"


def error_text(exc: BaseException) -> str:
    """What a failed job shows: the error table's instruction, or a safe summary of a bug."""
    if isinstance(exc, NextcloudError):
        return str(exc)
    detail = clean_detail(str(exc)) or ""
    return (f"the sync stopped on an unexpected error ({type(exc).__name__}: {detail}). "
            "Run 'mcp-nextcloud index sync' again (finished files are kept); if it happens again, report it.")


def sync_body(index_path: Path, client_factory: Callable[[], Any], *,
              max_file_bytes: int = DEFAULT_MAX_FILE_BYTES, close_client: bool = True,
              index: Index | None = None) -> Callable[[JobHandle], dict[str, Any]]:
    """The job body for one sync (shared by this worker and the MCP server's BackgroundSync)."""

    def body(handle: JobHandle) -> dict[str, Any]:
        client = client_factory()
        own_index = index is None
        idx = Index.open(index_path) if index is None else index
        try:
            report = sync(client, idx, job=handle, max_file_bytes=max_file_bytes)
        finally:
            if own_index:
                idx.close()
            if close_client:
                client.close()
        return report.to_dict()

    return body


def _client_from_config() -> Any:
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import load_account, no_account

    account = load_account()
    if account is None:
        raise no_account()
    return NextcloudClient(account)


def run(job_id: str, index_path: Path, *, max_file_bytes: int = DEFAULT_MAX_FILE_BYTES) -> Job:
    """Run the queued job `job_id` in this process, syncing the configured account into `index_path`."""
    store = JobStore(jobs_path_for(index_path))
    body = sync_body(index_path, _client_from_config, max_file_bytes=max_file_bytes)
    job = run_job(store, job_id, body, error_text=error_text)
    embed.build_detached(index_path)   # this process is the background: the meaning index follows the words
    return job


def spawn(job_id: str, index_path: Path, *, store: JobStore | None = None,
          max_file_bytes: int | None = None, env: dict[str, str] | None = None) -> int:
    """Start a detached worker for a queued job; return its pid (recorded on the job)."""
    cmd = [sys.executable, "-m", "mcp_nextcloud.indexer.remote.sync_worker", job_id, "--index", str(index_path)]
    if max_file_bytes is not None:
        cmd += ["--max-file-bytes", str(int(max_file_bytes))]
    root = str(Path(__file__).resolve().parents[3])   # the folder that holds mcp_nextcloud/
    child_env = for_child() if env is None else dict(env)
    # The worker must import this very checkout, wherever the CLI was started from.
    child_env["PYTHONPATH"] = root + (os.pathsep + child_env["PYTHONPATH"] if child_env.get("PYTHONPATH") else "")
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True, env=child_env, cwd=root)
    (store or JobStore(jobs_path_for(index_path))).set_worker(job_id, proc.pid)
    return proc.pid


def start_sync(index_path: Path, account: Any, *, wait: float = 0.0,
               max_file_bytes: int | None = None) -> tuple[Job, bool]:
    """Queue (or join, or resume) the account's sync and start a detached worker when one is needed.

    Returns (job, joined): joined is True when a sync already queued or running
    elsewhere was joined. With `wait` > 0 the job is returned after at most
    that many seconds, possibly still running.
    """
    store = JobStore(jobs_path_for(index_path))
    job = store.create_or_join(SYNC_KIND, sync_key(account))
    joined = job.state != QUEUED or job.pid is not None
    if job.state == QUEUED and job.pid is None:
        spawn(job.id, index_path, store=store, max_file_bytes=max_file_bytes)
    job = store.wait(job.id, wait) if wait > 0 else store.get(job.id)
    return job, joined


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcp_nextcloud.indexer.remote.sync_worker",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("job_id")
    parser.add_argument("--index", required=True, help="the index database the job syncs into")
    parser.add_argument("--max-file-bytes", type=int, default=DEFAULT_MAX_FILE_BYTES)
    args = parser.parse_args(argv)
    job = run(args.job_id, Path(args.index), max_file_bytes=args.max_file_bytes)
    return 0 if job.state == "succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
