"""files_grep's look at the server before answering: what changed since the last sync, does the folder exist.

Every call here is best effort on a read path: it goes through the context's
quick client (one attempt, `settings.best_effort_s` per timeout, no retry), so
a server that hangs or is gone costs about a second, never the request
deadline. Past it the answer comes from the index at once and says so; what
the call met (wrong password, unreachable server) is handed to
server.tools.files.coverage, which explains it. A folder the server does not have
is the one failure that fails the grep: the path is wrong.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from mcp_nextcloud.indexer.models import RecordStatus, iso_time
from mcp_nextcloud.indexer.remote import marks
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError, NotFoundError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import ToolFailure, misuse
from mcp_nextcloud.server.tools.files.coverage import TEAM_SLOWED, SyncState, on_team_server



@dataclass
class Freshness:
    """What the check found: warnings, whether the server confirmed the folder, the failure it met."""

    warnings: list[str]
    folder_seen: bool
    failure: Any = None          # a NextcloudError (auth, network, timeout...) or None
    is_file: bool = False        # the path names a file, not a folder
    checked: bool = False        # the server was asked during this call (not skipped as not due)
    root_seen: bool = False      # the account root's etag was read during this call


def folder_missing(folder: str) -> ToolFailure:
    return misuse(f"The folder {folder} does not exist on the server. Confirm it with files_search (its name, "
                  "or path=/ to list the top level), or drop path to search everything.",
                  status=ToolStatus.FOLDER_NOT_FOUND)


def names_a_file(ctx: ServerContext, folder: str | None) -> bool:
    """True when the index holds a file at exactly this path (grep's path then covers that one file)."""
    if not folder or folder == "/":
        return False
    try:
        return ctx.files_index().get_file(path=folder) is not None
    except Exception:  # noqa: BLE001 - an unreadable index knows no file
        return False


def check_folder(ctx: ServerContext, folder: str) -> Freshness:
    """One bounded PROPFIND: a wrong path raises the instruction; a file or a failure is reported back."""
    try:
        item = ctx.quick_client().webdav.stat(folder)
    except NotFoundError:
        raise folder_missing(folder) from None
    except NextcloudError as exc:
        return Freshness([], folder_seen=False, failure=exc)
    return Freshness([], folder_seen=True, is_file=not getattr(item, "is_dir", True))


def probe(ctx: ServerContext) -> Any:
    """For an index never synced: can the server be reached with these credentials? The failure, or None."""
    try:
        ctx.quick_client().webdav.stat("/")
    except NextcloudError as exc:
        return exc
    return None


def timed_out(ctx: ServerContext, exc: Any = None) -> str:
    """The warning of a freshness check that failed for a moment (no answer within the budget, a 5xx...)."""
    last = marks.read(ctx.index).last_sync_at
    when = f"the last sync at {iso_time(last)}" if last else "the last sync"
    if not isinstance(exc, NextcloudError) or exc.code is ErrorCode.TIMEOUT:
        cause = f"the server did not answer within {ctx.call_settings.best_effort_s:g} s"
        refused = _recent_failed_login(ctx)
        if refused is not None and on_team_server():    # anyone's login: everyone calls from the one address
            cause += f" (a login from this server's address was refused at {iso_time(refused)}: {TEAM_SLOWED})"
        elif refused is not None:
            cause += (f" (a login of this account was refused at {iso_time(refused)}: Nextcloud's brute-force "
                      "protection slows every request from this address after failed logins; fix the app password)")
    else:
        cause = exc.cause.rstrip(".")
    return (f"Could not ask the server what changed since {when}, because {cause}: this "
            "answer comes from the index at once and may miss recent edits; retrying later may see them.")


def _recent_failed_login(ctx: ServerContext) -> float | None:
    from mcp_nextcloud.nextcloud.http import recent_failed_login

    try:
        return recent_failed_login(ctx.account) if ctx.account is not None else None
    except Exception:  # noqa: BLE001 - an unreadable record says nothing
        return None


def freshen(ctx: ServerContext, folder: str | None, state: SyncState, *, force: bool = False,
            root_seen: bool = False) -> Freshness:
    """Index small files changed on the server since the last sync; name the rest.

    Runs at most every `settings.freshness_interval_s` (one bounded WebDAV
    SEARCH) so a burst of greps costs one SEARCH, unless `force` (an empty
    answer, where a file added since matters most) or the account root's etag
    moved since the last check (`_root_moved`: one PROPFIND); never fails the grep
    for an outage: a server that does not answer only produces a warning. `state` is the call's one read
    of the sync marks (server.tools.files.coverage.read_state).
    """
    now = time.monotonic()
    # A failed check counts too: during an outage every grep must not wait on it.
    due = ctx.claim_fresh_check(ctx.call_settings.freshness_interval_s)
    last = ctx.last_fresh_failure
    looked = not due and not force and last is None and not root_seen
    if looked:
        moved, failure = _root_moved(ctx)
        if failure is not None:   # the server is slow or refuses: answered as a failed check (until one passes)
            return _failed(ctx, failure)
        force = moved             # something changed since the last check (a file uploaded a second ago)
    root_seen = root_seen or looked
    if not due and (not force or last is not None):
        # Not due: what the last check could not do still holds (until a check succeeds, answers say so).
        return Freshness(list(last.warnings), folder_seen=False, failure=last.failure, root_seen=root_seen) \
            if last else Freshness([], folder_seen=False, root_seen=root_seen)
    fresh = _check(ctx, folder, now, state.changes_since, root_seen=root_seen)
    fresh.checked = True
    ctx.last_fresh_failure = Freshness(fresh.warnings, False, fresh.failure) if fresh.failure is not None else None
    if fresh.failure is None:
        ctx.last_checked_at = time.time()
    return fresh


def since_last_check(ctx: ServerContext) -> list[str]:
    """For an answer the check was skipped for (not due): a warning only when a change may really be missing.

    The check is not due because one ran within `settings.freshness_interval_s`: that answer is as fresh as
    the interval promises, and saying "grep again" on every answer invites loops (issue 36: 58 of 89
    answers of one session). Only when the last check that reached the server is older than the interval
    (it failed since, or a concurrent one has not finished) is it said, with when.
    """
    when = getattr(ctx, "last_checked_at", None)
    if when is None:
        return []
    ago = max(0, int(time.time() - when))
    if ago <= ctx.call_settings.freshness_interval_s:
        return []
    return [f"The server was last asked what changed at {iso_time(when)} ({ago} s ago): a file added or "
            "changed since then is not searched yet; grep again in a few seconds to include it."]


def drop_deleted(ctx: ServerContext, hits: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str], bool]:
    """Hits the server still has (one bounded SEARCH on their fileIds), a warning naming the rest, and whether
    the server could say (False: the hits are unverified).

    A file deleted since the last sync is dropped from the index at once, so no later answer offers it.
    If the server cannot say (timeout, outage), the hits stay and the caller's warnings say why.
    """
    from mcp_nextcloud.server.tools.files.resolve import forget

    ids = [h["fileId"] for h in hits if h.get("fileId") is not None and h.get("source") != "server"]
    if not ids:
        return hits, [], True
    try:
        present = {int(i.file_id) for i in ctx.quick_client().webdav.present(ids) if i.file_id is not None}
    except NextcloudError:
        return hits, [], False
    gone = [h for h in hits if h.get("fileId") is not None and int(h["fileId"]) not in present
            and h.get("source") != "server"]
    if not gone:
        return hits, [], True
    for h in gone:
        forget(ctx, file_id=int(h["fileId"]))
    names = ", ".join(h["path"] for h in gone[:5]) + (f" and {len(gone) - 5} more" if len(gone) > 5 else "")
    kept = [h for h in hits if h not in gone]
    return kept, [f"Left out {len(gone)} hit(s) the server no longer has (deleted since the last sync): {names}."], True


def _root_moved(ctx: ServerContext) -> tuple[bool, NextcloudError | None]:
    """Whether the account's root etag moved since the last look (one PROPFIND of depth 0; Nextcloud
    propagates every change's new etag up to the root): between two checks, this is how a grep learns that a
    file was uploaded a moment ago. (False, the failure) when the server did not answer it; False too when
    no etag was seen before."""
    try:
        etag = ctx.quick_client().webdav.stat("/").etag
    except NextcloudError as exc:
        return False, exc
    seen, ctx.root_etag = ctx.root_etag, etag or None
    return seen is not None and etag != seen, None


def _failed(ctx: ServerContext, exc: NextcloudError, is_file: bool = False) -> Freshness:
    """A check the server failed (a timeout, a 5xx, a refused login): a warning where it passes, the failure
    for coverage to explain; remembered, so the next greps do not wait on the server until a check passes."""
    fresh = Freshness([timed_out(ctx, exc)] if exc.code.passing else [], folder_seen=False, failure=exc,
                      is_file=is_file, checked=True)
    ctx.last_fresh_failure = Freshness(fresh.warnings, False, exc)
    return fresh


def _check(ctx: ServerContext, folder: str | None, now: float, since: float | None, *,
           root_seen: bool = False) -> Freshness:
    """The freshness check proper: the root's etag (unless this call has just read it: `root_seen`), one
    bounded SEARCH for what changed `since`, then the small changed files folded in."""
    if since is None:  # never synced: coverage explains it; a server too slow to answer is named too
        failure = probe(ctx)
        slow = [timed_out(ctx, failure)] if isinstance(failure, NextcloudError) and failure.code.passing else []
        return Freshness(slow, folder_seen=False, failure=failure)
    is_file = names_a_file(ctx, folder)
    scope = (folder.rsplit("/", 1)[0] or "/") if folder and is_file else folder
    if not root_seen:    # the root's etag as of this check: the next greps compare theirs with it
        failure = _root_moved(ctx)[1]
        if failure is not None:
            return _failed(ctx, failure, is_file)
    try:
        changed = ctx.quick_client().webdav.search(modified_after=since, path=scope or "/",
                                                   limit=ctx.call_settings.fly_max_files * 3)
    except NextcloudError as exc:  # freshness is best effort; grep still answers from the index
        if scope and exc.code is ErrorCode.NOT_FOUND:
            return check_folder(ctx, scope)  # a file given as the folder, or a folder that does not exist
        warnings = [timed_out(ctx, exc)] if exc.code.passing else []
        return Freshness(warnings, folder_seen=False, failure=exc, is_file=is_file)
    return Freshness(_fold_in(ctx, changed, started=now), folder_seen=True, is_file=is_file)


def _fold_in(ctx: ServerContext, changed: list[Any], *, started: float) -> list[str]:
    """Index what changed (small files, within the budget); the warning naming what was not searched."""
    from mcp_nextcloud.server.tools.files.read import load_document

    from mcp_nextcloud.indexer.store import selection as sel

    settings = ctx.call_settings
    chosen = sel.load(ctx.index)
    skipped: list[str] = []
    done = 0
    for item in changed:
        if item.is_dir or not chosen.covers(item.path):
            continue   # a folder the user left out of the index stays out, even when it changes
        try:
            rec = ctx.files_index().get_file(file_id=item.file_id) if item.file_id is not None else None
        except Exception:  # noqa: BLE001 - unknown to the index: fold it in
            rec = None
        if rec is not None and rec.etag == item.etag and rec.status != RecordStatus.PENDING:
            continue  # already this version (the sync, files_read or files_write stored it)
        over_budget = time.monotonic() - started > 2 * settings.best_effort_s
        if done >= settings.fly_max_files or int(item.size or 0) > settings.fly_max_bytes or over_budget:
            skipped.append(item.path)
            continue
        try:
            load_document(ctx, item, best_effort=True)  # download (bounded) + extract + store in the index
            done += 1
        except Exception:  # noqa: BLE001 - an unreadable file is recorded by the index; it must not fail the grep
            skipped.append(item.path)
    if not skipped:
        return []
    names = ", ".join(skipped[:5]) + (f" and {len(skipped) - 5} more" if len(skipped) > 5 else "")
    return [f"Changed on the server since the last sync and not searched yet: {names}. Read them with files_read."]
