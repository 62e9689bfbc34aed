"""`mcp-nextcloud index sync`: sync the Nextcloud account into the index as a durable background job.

The command queues the sync (or joins the one already queued or running for
this account, or resumes one a crash interrupted), starts a detached worker
process and answers at once with the job's id and state, or after a bounded
`--wait` that may still say "running". Follow it with `mcp-nextcloud jobs`.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mcp_nextcloud.cli.errors import report
from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import index_file, stdout

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_RUNNING = 0, 1, 2, 75   # 75 = EX_TEMPFAIL: not finished yet
POLL_S = 0.25    # how often `index sync --wait` on a terminal redraws its bar from the job's record


def register_sync(index_subparsers: Subcommands) -> None:
    """Add `sync` under `mcp-nextcloud index` (called by cli/index.py)."""
    p = index_subparsers.add_parser(
        "sync", help="sync the Nextcloud account into the index (a background job)",
        description="Queue a sync of the configured Nextcloud account into the index and start it in the "
        "background. Only folders whose etag changed are walked, so a resync with nothing changed costs one "
        "request. A sync already running for the account is joined, an interrupted one is resumed.",
        epilog="Example: mcp-nextcloud index sync --wait 60")
    p.add_argument("--wait", type=float, default=0.0, metavar="SECONDS",
                   help="wait up to SECONDS for the sync to finish (default: answer at once); "
                   "the answer may still say running")
    add_json(p, "the job")
    add_index(p, "the index `mcp-nextcloud grep` reads")
    p.add_argument("--max-file-bytes", type=int, default=None, metavar="N",
                   help="files larger than N bytes are recorded as too large and never downloaded")
    p.add_argument("--include", action="append", metavar="FOLDER",
                   help="index only this folder (repeat for several); kept for later syncs and serve")
    p.add_argument("--exclude", action="append", metavar="FOLDER",
                   help="never index this folder (repeat for several); kept for later syncs and serve")
    p.add_argument("--max-index-mb", type=float, default=None, metavar="MB",
                   help="stop indexing new files when the index reaches MB on disk (0 = no budget)")
    p.add_argument("--all", action="store_true", dest="whole_account",
                   help="forget --include/--exclude/--max-index-mb and index the whole account")
    p.set_defaults(func=run_sync)


def _update_selection(index_path: Path, args: argparse.Namespace) -> Any:
    """Store a changed selection in the index before the job starts; the stored one otherwise."""
    from mcp_nextcloud.indexer.store import selection as sel
    from mcp_nextcloud.indexer.index import Index

    with Index.open(index_path) as index:
        current = sel.load(index)
        if args.whole_account:
            chosen = sel.Selection()
        elif args.include or args.exclude or args.max_index_mb is not None:
            budget = current.max_index_bytes if args.max_index_mb is None else int(args.max_index_mb * 1024 * 1024)
            chosen = sel.Selection.of(args.include if args.include else list(current.include),
                                      args.exclude if args.exclude else list(current.exclude), budget)
        else:
            return current
        if chosen != current:
            sel.save(index, chosen)
        return chosen



def print_job(job: Any, as_json: bool, **extra: Any) -> None:
    """A job on stdout: compact JSON, or one readable line (plus its hint)."""
    data = job.to_dict()
    data.update(extra)
    if as_json:
        print(json.dumps(data, separators=(",", ":"), ensure_ascii=False), file=stdout())
        return
    prog = data["progress"]
    line = f"job {data['id']}: {data['state']}"
    if prog["total"] or prog["done"]:
        line += f" ({prog['done']}/{prog['total']} files)"
    if extra.get("joined"):
        line += " [joined the sync already in progress]"
    print(line, file=stdout())
    if data.get("result"):
        r = data["result"]
        keys = ("indexed", "moved", "removed", "skippedTooLarge", "unsupported", "failed", "unchanged", "propfinds")
        print("  " + ", ".join(f"{k} {r[k]}" for k in keys if k in r), file=stdout())
        if r.get("overBudget"):
            print(f"  the index reached its size budget: {r['overBudget']} files not indexed, in "
                  f"{', '.join(r.get('budgetFolders', []))}; raise it with --max-index-mb or narrow --include",
                        file=stdout())
        for f in r.get("failures", [])[:5]:
            print(f"  failed: {f['path']}: {f['reason']}", file=stdout())
    if data.get("error"):
        from mcp_nextcloud.cli.errors import stored_words

        print(f"  error: {stored_words(data['error'])}", file=stdout())
    if data.get("hint"):
        print(f"  {data['hint']}", file=stdout())


def exit_code(job: Any) -> int:
    """0 succeeded, 1 failed/cancelled/interrupted, 75 still queued or running."""
    if job.state == "succeeded":
        return EXIT_OK
    if job.state in ("queued", "running"):
        return EXIT_RUNNING
    return EXIT_FAILED


def run_sync(args: argparse.Namespace) -> int:
    """Queue or join the account's sync, start its worker, answer with the job."""
    from mcp_nextcloud.indexer.remote.sync_worker import start_sync
    from mcp_nextcloud.nextcloud.config import load_account, no_account
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    prog = "mcp-nextcloud index sync"
    try:
        account = load_account()
    except NextcloudError as err:
        return report(err, args.json, prog)
    if account is None:
        return report(no_account(), args.json, prog)
    if args.wait < 0:
        return report(ValueError("--wait must be zero or a number of seconds"), args.json, prog)
    path = index_file(args.index)
    try:
        chosen = _update_selection(path, args)
    except ValueError as err:
        return report(err, args.json, prog)
    from mcp_nextcloud.cli.progress import FilesProgress

    drawn = FilesProgress("syncing", enabled=None if args.wait > 0 and not args.json else False)
    job, joined = start_sync(path, account, wait=0.0 if drawn.enabled else args.wait,
                             max_file_bytes=args.max_file_bytes)
    if drawn.enabled:
        job = wait_drawing(path, job, args.wait, drawn)
    print_job(job, args.json, joined=joined, **({"selection": describe(chosen)} if not chosen.whole_account
                                                else {}))
    return exit_code(job)


def wait_drawing(index_path: Path, job: Any, seconds: float, progress: Any) -> Any:
    """Wait up to `seconds` for the job as `--wait` does, drawing its files done of those known (and the bytes
    downloaded) meanwhile.

    The worker records its progress in the job store (indexer/jobs/run.py); this reads it back a few times a
    second. In the index service the bar reaches the caller's terminal through its stderr stream.
    """
    import time

    from mcp_nextcloud.indexer.jobs.store import ACTIVE_STATES, JobStore, jobs_path_for

    deadline = time.monotonic() + seconds
    store = JobStore(jobs_path_for(index_path))
    try:
        with progress:
            while True:
                job = store.wait(job.id, min(POLL_S, max(0.0, deadline - time.monotonic())))
                progress(job.done, job.total, job.message, job.bytes)
                if job.state not in ACTIVE_STATES or time.monotonic() >= deadline:
                    return job
    finally:
        store.close()


def describe(selection: Any) -> dict[str, Any]:
    """The selection as index status and sync show it."""
    out: dict[str, Any] = {"include": list(selection.include) or ["/"], "exclude": list(selection.exclude)}
    if selection.max_index_bytes:
        out["maxIndexMb"] = round(selection.max_index_bytes / 1048576, 1)
    return out
