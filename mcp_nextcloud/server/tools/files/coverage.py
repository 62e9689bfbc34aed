"""What an answer from the index can and cannot vouch for: sync running, sync failed and why, index age.

files_grep and files_search answer from the local index. An empty (or thin)
answer is only evidence when the index is complete and current; this module
reads the sync state (the index's meta table and the durable sync jobs) and
turns it into the warnings and hint that say so, with the one next step that
helps. It never calls the server: the freshness check (server.tools.files.freshness)
hands in what it learned.
"""
from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass, field
from typing import Any

from mcp_nextcloud.indexer.errors import IndexCode
from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.indexer.remote import marks
from mcp_nextcloud.indexer.remote.marks import SyncFailure
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import AGENT, ToolFailure, agent_text
from mcp_nextcloud.environment import environ

NOT_EVIDENCE = "a missing hit is not evidence that no file contains it"
COLD_START_RETRY_S = 30
FIX_FIRST = "Retrying will not help until the cause in warnings is fixed"


@dataclass(frozen=True)
class SyncState:
    """The index's view of its own freshness."""

    last_sync: float | None          # the last sync that finished (any scope)
    last_full: float | None          # the last complete sync of the whole account
    failure: SyncFailure | None      # why the newest sync stopped, when that is newer than last_sync
    running: Any                     # the account's queued / running sync job (indexer.jobs.store.Job), or None
    changes_since: float | None = None   # what the freshness check asks the server for (indexer.remote.marks)
    report: dict[str, Any] = field(default_factory=dict)   # the last sync's report ({} when none)


@dataclass(frozen=True)
class Coverage:
    """Warnings for an answer, and whether the index may be missing what was asked (then the hint says so)."""

    warnings: list[str]
    incomplete: bool
    retry: str = "Retry later"       # what the hint of an empty answer advises: later, or once the cause is fixed


def read_state(ctx: ServerContext) -> SyncState:
    """The sync state from one read of the index meta (a tool call takes it once and hands it on); the jobs
    database is only read while no full sync has finished."""
    synced = marks.snapshot(ctx.index)
    last_sync, last_full = synced.marks.last_sync_at, synced.marks.last_full_sync_at
    failure = _recorded_failure(synced.failure, last_sync)
    running = _running_sync(ctx) if last_full is None or failure is not None else None
    return SyncState(last_sync, last_full, failure, running, synced.marks.changes_since, synced.report)


def _recorded_failure(failure: SyncFailure | None, last_sync: float | None) -> SyncFailure | None:
    if failure is None:
        return None
    try:
        when: float | None = dt.datetime.fromisoformat(failure.at.replace("Z", "+00:00")).timestamp()
    except ValueError:
        when = None
    if last_sync is not None and when is not None and when < last_sync:
        return None  # a later sync finished: that failure is history
    return failure


JOBS_KEY = "coverage.jobs"     # the context's cache entry of the jobs store that _running_sync reads


def _running_sync(ctx: ServerContext) -> Any:
    """The account's queued or running sync job (the durable jobs next to the index), or None."""
    try:
        from mcp_nextcloud.indexer.jobs.store import ACTIVE_STATES, JobStore, jobs_path_for
        from mcp_nextcloud.indexer.remote.sync_worker import SYNC_KIND, sync_key

        store = ctx.cached(JOBS_KEY, float("inf"), lambda: JobStore(jobs_path_for(ctx.files_index().path)))
        key = sync_key(ctx.account) if ctx.account is not None else None
        for job in store.list(10, kind=SYNC_KIND):
            if job.state in ACTIVE_STATES and (key is None or job.key == key):
                return job
    except Exception:  # noqa: BLE001 - the jobs database is advisory: no job known
        return None
    return None


def credentials_from_environment(ctx: ServerContext) -> bool:
    """True when the account's app password came from the environment (an MCP host's configuration)."""
    password = getattr(ctx.account, "app_password", None)
    return bool(password) and environ().get("NEXTCLOUD_APP_PASSWORD") == password


HOST_CONFIG_ACTION = ("This server takes its app password from the MCP host's configuration "
                      "(NEXTCLOUD_APP_PASSWORD): tell the user to put a valid app password there and restart the "
                      "MCP server; `mcp-nextcloud login` alone does not change it")
# Set in the calls of a person of the team server (team/people.py): their app password came from their sign-in,
# so the fix is signing in again from their MCP client, not a variable or a command on a machine they never see.
TEAM_SIGN_IN = "MCP_NEXTCLOUD_TEAM_SIGN_IN"
TEAM_ACTION = ("Signed out: sign in again from your MCP client (signing in asks Nextcloud for a new app "
               "password)")


# On the team server a throttle is the whole server's address (everyone's failed logins from it, or many people
# behind one address), never this person's password: their fix is the server's administrator, not a sign-in.
TEAM_THROTTLED_ACTION = ("This address is the team server's (everyone's calls come from it), and your password is "
                         "not the cause: signing in again does not help. Tell this server's administrator: they can "
                         "put its address on Nextcloud's brute-force IP allowlist (Settings > Administration > "
                         "Security) or reset it (`occ security:bruteforce:reset <address>`)")
TEAM_SLOWED = ("Nextcloud's brute-force protection slows every request from this server's address after failed "
               "logins from it; its administrator can put the address on Nextcloud's brute-force IP allowlist")


# A team person cannot move the server's files nor run its commands, and the index's path is the server's layout.
TEAM_INDEX_CAUSE = "This server's index of your files is damaged or cannot be used"
TEAM_INDEX_ACTION = ("Tell this server's administrator: set aside, your index on this server is built again "
                     "from Nextcloud; your files in Nextcloud are not affected. The tools that need no index work")


def on_team_server() -> bool:
    """True in the calls of a person of the team server (team/people.py sets TEAM_SIGN_IN)."""
    return environ().get(TEAM_SIGN_IN) == "1"


def throttled_action(code: Any) -> str | None:
    """The next step when Nextcloud's brute-force protection throttles the team server (None elsewhere: the
    error table's own words, for a person whose own failed logins caused it)."""
    return TEAM_THROTTLED_ACTION if code is ErrorCode.THROTTLED and on_team_server() else None


def refused_credentials_action(ctx: ServerContext | None) -> str | None:
    """The next step when Nextcloud refuses the credentials, by where they came from: a team server sign-in, the
    MCP host's configuration, or None (the error table's own: `mcp-nextcloud login`)."""
    if on_team_server():
        return TEAM_ACTION
    if ctx is not None and credentials_from_environment(ctx):
        return HOST_CONFIG_ACTION
    return None


def account_advice(ctx: ServerContext, code: ErrorCode | None, message: str,
                   error: NextcloudError | None = None) -> str:
    """The error table's instruction worded for a tool answer; credentials from elsewhere than `mcp-nextcloud
    login` get their own fix (refused_credentials_action)."""
    action = refused_credentials_action(ctx) if code in (ErrorCode.AUTH, ErrorCode.NO_CREDENTIALS) else \
        throttled_action(code)
    if action is not None:
        cause = error.cause if error is not None else message
        return f"{cause.rstrip('.')}. {action}. {AGENT.retry_no}".rstrip(".")
    return (agent_text(error) if error is not None else message).rstrip(".")


def with_host_advice(ctx: ServerContext | None, failure: ToolFailure) -> ToolFailure:
    """A refused-credentials failure, worded with the fix for where the credentials came from (and a throttle
    of the team server's address with the administrator's)."""
    if failure.status is IndexCode.INDEX_UNUSABLE and on_team_server():
        return ToolFailure(TEAM_INDEX_CAUSE, TEAM_INDEX_ACTION, category=failure.category, status=failure.status,
                           retry=False)
    action = refused_credentials_action(ctx) if failure.status is ErrorCode.AUTH else throttled_action(failure.status)
    return failure if action is None else failure.reworded(action)


def _age(ts: float | None) -> str:
    if ts is None:
        return "The index has never been synced with the server"
    seconds = max(0.0, time.time() - ts)
    if seconds < 90:
        ago = f"{int(seconds)} s"
    elif seconds < 5400:
        ago = f"{int(seconds // 60)} min"
    elif seconds < 172800:
        ago = f"{seconds / 3600:.1f} h"
    else:
        ago = f"{int(seconds // 86400)} days"
    return f"The index was last synced {iso_time(ts)} ({ago} ago)"


def coverage(ctx: ServerContext, *, check_failure: Any = None, state: SyncState | None = None) -> Coverage:
    """The warnings an answer from the index needs; `check_failure` is a NextcloudError the caller just met."""
    state = state or read_state(ctx)
    if isinstance(check_failure, NextcloudError) and check_failure.code.blocks_sync:
        return Coverage([_failed(ctx, check_failure.code, str(check_failure), state, check_failure)], incomplete=True,
                        retry=FIX_FIRST)
    if state.running is not None and state.last_full is None:
        return Coverage([_cold_start(state)], incomplete=True)
    if state.failure is not None:
        failure = state.failure
        retry = FIX_FIRST if failure.code is not None and failure.code.blocks_sync else "Retry later"
        return Coverage([_failed(ctx, failure.code, failure.message, state, failure.error)], incomplete=True,
                        retry=retry)
    if state.last_sync is None and state.last_full is None:
        return Coverage(["The index has never been synced with the server: it holds no file of this account "
                         f"yet, so {NOT_EVIDENCE}. Ask the user to sync the index (background sync or the command "
                         "line); meanwhile files_search asks the server by name, files_read reads a file by path."],
                        incomplete=True)
    return Coverage([], incomplete=False)


def _failed(ctx: ServerContext, code: ErrorCode | None, message: str, state: SyncState, error: Any = None) -> str:
    again = f" A new sync is running ({_progress(state.running)})." if state.running is not None else ""
    known = error if isinstance(error, NextcloudError) else None
    return (f"The index could not be brought up to date: {account_advice(ctx, code, message, known)}. "
            f"{_age(state.last_sync)}, so {NOT_EVIDENCE}.{again}")


def _progress(job: Any) -> str:
    if job.state == "running" and job.total:
        return f"{job.done} of {job.total} files known so far are done"
    return "it has not listed any file yet"


def _cold_start(state: SyncState) -> str:
    return (f"The first sync of this account is running ({_progress(state.running)}): the index is partial, "
            f"so {NOT_EVIDENCE}. "
            f"Retry in about {COLD_START_RETRY_S} s for a fuller answer; files_read reads any file by path now.")


def empty_hint(folder: str | None, retry: str = "Retry later") -> str:
    """The hint of an empty answer from an index that may be missing files (the warnings say why)."""
    where = f" under {folder}" if folder else ""
    search = f"files_search(path={folder!r})" if folder else "files_search"
    return (f"No hit{where} in what the index holds, but the index is incomplete (see warnings): this is not "
            f"evidence of absence. {retry}; {search} asks the server for file names and files_read reads a "
            "file by path.")


def index_warnings(res: Any, cover: Coverage) -> list[str]:
    """The index's own warnings, minus those the tool answer replaces.

    "nothing is indexed under /" reads as a wrong path when none was given (a
    wrong folder is checked against the server instead), and the index's age
    is already in the coverage warning when there is one.
    """
    out = [w for w in res.warnings if w != res.nothing_indexed]
    if cover.warnings:
        out = [w for w in out if not w.startswith("index last updated")]
    return out


def grep_hint(res: Any, folder: str | None, cover: Coverage, *, is_file: bool = False) -> str:
    """files_grep's hint: only what holds for the hits shown (more=, phrase=), else why nothing was found."""
    if res.hits:
        # Short: it comes with every answer (matches are [offset, length] pairs, see passages.Passage).
        parts = ["Pass nextCursor for more files."] if res.truncated else []
        parts.append("matches: [offset, length]; files_read(path, offset=...) reads around one.")
        if any(h.more for h in res.hits):
            parts.append("more=true: more in the file; files_read(path, find=...) lists them.")
        if any(not h.phrase and getattr(h, "match", None) != "meaning" for h in res.hits):
            parts.append("phrase=false: the words, not as the phrase.")
        if any(getattr(h, "match", None) == "meaning" for h in res.hits):
            parts.append("match=meaning: related in meaning, not by the words; the passage is the closest text. "
                         "score 0-1: 0.5+ holds the words, meaning only 0.3-0.8.")
        if cover.incomplete:
            parts.append("The index is incomplete (see warnings): other files may match too.")
        return " ".join(parts)
    if is_file and folder:
        return file_hint(folder)
    if cover.incomplete:
        return empty_hint(folder, cover.retry)
    if folder:
        return (f"No indexed document under {folder} contains this. Try fewer or other words; "
                f"files_search(path={folder!r}) lists the files there and files_read reads any of them.")
    return ("No indexed document contains this. Try fewer or other words, or files_search "
            "if you know part of the file name.")


def file_hint(folder: str) -> str:
    """What an empty grep under a file's path says: the path is a file, and how to search inside it."""
    parent = folder.rsplit("/", 1)[0] or "/"
    return (f"{folder} is a file, not a folder: files_grep searched only that file and found no hit. "
            f"files_read(path={folder!r}, find=...) searches inside it; path={parent!r} searches its folder.")
