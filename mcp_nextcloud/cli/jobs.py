"""`mcp-nextcloud jobs status|wait|cancel|resume|list`: follow the durable jobs (index sync) from any process.

Jobs live in a small database next to the index (`<index>.jobs.db`), so these
commands work from another terminal while the worker runs. A job whose worker
died (kill -9, reboot) is shown as `interrupted`; `jobs resume ID` (or the next
`index sync`) continues it without downloading finished files again.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_nextcloud.cli.errors import report
from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.sync import EXIT_FAILED, EXIT_OK, EXIT_USAGE, exit_code, print_job
from mcp_nextcloud.cli.console import index_file, stdout

PROG = "mcp-nextcloud jobs"


def register(subparsers: Subcommands) -> None:
    """Add the `jobs` command group."""
    p = subparsers.add_parser("jobs", help="follow the background index-sync jobs",
                              description="Follow, wait for, cancel or resume background jobs (index sync) "
                              "from any terminal. Jobs live next to the index, in <index>.jobs.db.",
                              epilog="Example: mcp-nextcloud jobs list")
    sub = p.add_commands(dest="jobs_command", metavar="ACTION")

    def common(sp: argparse.ArgumentParser) -> None:
        add_json(sp)
        add_index(sp, "the one whose jobs to show")

    s = sub.add_parser("status", help="show a job's state and progress",
                       epilog="Example: mcp-nextcloud jobs status 5f2c9a1e7b30 --json")
    s.add_argument("id", metavar="ID", help="job id, as `index sync` or `jobs list` printed it")
    common(s)
    s.set_defaults(func=_status, repeatable=True)

    w = sub.add_parser("wait", help="wait (bounded) for a job to finish; may answer still running",
                       description="Wait up to --timeout seconds. Exit code 0 succeeded, 1 failed, cancelled or "
                       "interrupted, 75 still running after the timeout.",
                       epilog="Example: mcp-nextcloud jobs wait 5f2c9a1e7b30 --timeout 120")
    w.add_argument("id", metavar="ID", help="job id")
    w.add_argument("--timeout", type=float, default=60.0, metavar="S", help="seconds to wait at most (default 60)")
    common(w)
    w.set_defaults(func=_wait)

    c = sub.add_parser("cancel", help="ask a job to stop (between files; the index stays consistent)",
                       epilog="Example: mcp-nextcloud jobs cancel 5f2c9a1e7b30")
    c.add_argument("id", metavar="ID", help="job id")
    common(c)
    c.set_defaults(func=_cancel)

    r = sub.add_parser("resume", help="continue a job a crash interrupted",
                       epilog="Example: mcp-nextcloud jobs resume 5f2c9a1e7b30")
    r.add_argument("id", metavar="ID", help="job id of an interrupted job")
    common(r)
    r.set_defaults(func=_resume)

    ls = sub.add_parser("list", help="the most recent jobs", epilog="Example: mcp-nextcloud jobs list --limit 5")
    ls.add_argument("--limit", type=int, default=20, help="how many (default 20)")
    common(ls)
    ls.set_defaults(func=_list, repeatable=True)

    p.set_defaults(func=p.help_command())


def _store(args: argparse.Namespace) -> Any:
    from mcp_nextcloud.indexer.jobs.store import JobStore, jobs_path_for
    from mcp_nextcloud.nextcloud.config import load_account
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    try:
        account = load_account()
    except NextcloudError:
        account = None      # the jobs of the default index are still readable
    return JobStore(jobs_path_for(index_file(args.index))), account


def _with_job(args: argparse.Namespace, action: str) -> int:
    from mcp_nextcloud.indexer.jobs.store import JobNotFound

    store, account = _store(args)
    try:
        if action == "status":
            job = store.get(args.id)
        elif action == "wait":
            if args.timeout < 0:
                return report(ValueError("--timeout must be zero or a number of seconds"), args.json, PROG)
            job = store.wait(args.id, args.timeout)
        elif action == "cancel":
            job = store.request_cancel(args.id)
        else:
            job = _do_resume(args, store, account)
            if job is None:
                return EXIT_USAGE
    except JobNotFound as err:
        return report(err, args.json, f"{PROG} {action}")
    print_job(job, args.json)
    if action == "wait":
        return exit_code(job)
    return EXIT_OK if action != "resume" or job.state in ("queued", "running", "succeeded") else EXIT_FAILED


def _do_resume(args: argparse.Namespace, store: Any, account: Any) -> Any:
    from mcp_nextcloud.indexer.jobs.store import QUEUED
    from mcp_nextcloud.indexer.remote.sync_worker import spawn
    from mcp_nextcloud.nextcloud.config import no_account

    job = store.get(args.id)
    if job.state != "interrupted":
        return job          # nothing to resume: its state says why
    if account is None:
        report(no_account(), args.json, f"{PROG} resume")
        return None
    job = store.resume(job.id)
    if job.state == QUEUED and job.pid is None:
        spawn(job.id, index_file(args.index), store=store)
    return store.get(job.id)


def _status(args: argparse.Namespace) -> int:
    return _with_job(args, "status")


def _wait(args: argparse.Namespace) -> int:
    return _with_job(args, "wait")


def _cancel(args: argparse.Namespace) -> int:
    return _with_job(args, "cancel")


def _resume(args: argparse.Namespace) -> int:
    return _with_job(args, "resume")


def _list(args: argparse.Namespace) -> int:
    store, _ = _store(args)
    jobs = store.list(limit=max(1, args.limit))
    if args.json:
        print(json.dumps({"jobs": [j.to_dict() for j in jobs]}, separators=(",", ":"), ensure_ascii=False),
              file=stdout())
        return EXIT_OK
    if not jobs:
        print("no jobs yet; start one with 'mcp-nextcloud index sync'", file=stdout())
    for j in jobs:
        d = j.to_dict()
        print(f"{d['id']}  {d['kind']:<5} {d['state']:<11} {d['progress']['done']}/{d['progress']['total']}  "
              f"{d['createdAt']}", file=stdout())
    return EXIT_OK
