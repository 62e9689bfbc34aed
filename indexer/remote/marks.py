"""When the remote source was last synced, and why the last sync stopped: the meta keys, the margin, reading back.

One owner for these facts: the sync writes the marks (`record`,
`record_failure`, `record_account`), files_grep's freshness check and the
coverage warnings read them (`read`, `read_failure`).
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from indexer.models import iso_time
from nextcloud.errors import ErrorCode, NextcloudError

# "Changes since" is the sync's START time minus this margin: a file changed while the walk was
# running (after its folder was listed) or with a clock a little behind ours is still asked for.
CHANGES_SINCE_MARGIN_S = 2.0
# Meta keys: the human-facing finish time of any sync (and its report), and the marks only a complete
# sync of the whole account may move (a partial or subtree sync does not vouch for what it did not see).
LAST_SYNC_AT = "last_sync_at"
LAST_SYNC_REPORT = "last_sync"
CHANGES_SINCE = "changes_since"
LAST_FULL_SYNC_AT = "last_full_sync_at"
# Why the last sync stopped before finishing ("" once a sync finishes): the tools say "the index could not
# be brought up to date, because..." instead of letting "no hit" pass for evidence.
LAST_SYNC_FAILURE = "last_sync_failure"
ACCOUNT = "account"   # "user on https://server": whose files the remote part of the index holds
# Every key that describes the synced account (dropped together when the account's files are removed).
ACCOUNT_KEYS = (LAST_SYNC_AT, LAST_SYNC_REPORT, CHANGES_SINCE, LAST_FULL_SYNC_AT, LAST_SYNC_FAILURE, ACCOUNT)


@dataclass(frozen=True)
class SyncMarks:
    """The marks as unix seconds (None when never recorded or unreadable)."""

    last_sync_at: float | None
    last_full_sync_at: float | None
    changes_since: float | None


def record(writer: Any, *, started: float, finished: float, report: dict[str, Any], whole_account: bool,
           complete: bool) -> None:
    """Record a finished sync; move the "changes since" mark only after a complete account sync.

    The mark is the START of the sync minus a margin, floored to the second
    (flooring only moves it earlier: safe), because a file changed during the
    walk may have been listed before the change. Asking a little too far back
    costs nothing: files whose etag the index already holds are skipped.
    """
    writer.set_meta(LAST_SYNC_AT, iso_time(finished))
    writer.set_meta(LAST_SYNC_FAILURE, "")
    writer.set_meta(LAST_SYNC_REPORT, json.dumps(report, separators=(",", ":")))
    if whole_account and complete:
        writer.set_meta(CHANGES_SINCE, iso_time(started - CHANGES_SINCE_MARGIN_S))
        writer.set_meta(LAST_FULL_SYNC_AT, iso_time(finished))


def record_account(writer: Any, account: Any) -> None:
    """Name the account this index's remote part comes from (`index status` shows it)."""
    if account is not None and getattr(account, "user", None):
        writer.set_meta(ACCOUNT, f"{account.user} on {getattr(account, 'url', '')}")


def record_failure(writer: Any, exc: BaseException, *, at: float) -> None:
    """Remember why a sync stopped: the error table's parts (so each front end can word it), or a safe summary."""
    if isinstance(exc, NextcloudError):
        data: dict[str, Any] = {"kind": exc.code.value, "message": str(exc), "cause": exc.cause, "action": exc.action,
                                "step": exc.user_step}
    else:
        data = {"kind": "internal", "message": f"the sync stopped on {type(exc).__name__}"}
    data["at"] = iso_time(at)
    writer.set_meta(LAST_SYNC_FAILURE, json.dumps(data, separators=(",", ":")))


@dataclass(frozen=True)
class SyncFailure:
    """Why the newest sync stopped: its code (None for a crash), when, and the error rebuilt from its parts."""

    code: ErrorCode | None
    message: str
    at: str
    error: NextcloudError | None


def read_failure(index: Any) -> SyncFailure | None:
    """The recorded failure of the newest sync, or None (none recorded, or unreadable)."""
    try:
        raw = index.get_meta(LAST_SYNC_FAILURE)
        data = json.loads(raw) if raw else None
    except Exception:  # unreadable = nothing recorded
        return None
    if not isinstance(data, dict) or not data.get("message"):
        return None
    code = ErrorCode.parse(str(data.get("kind") or ""))
    error = None
    if code is not None:
        error = NextcloudError(code, cause=str(data.get("cause") or data["message"]),
                               action=str(data.get("action") or ""), user_step=data.get("step") or None)
    return SyncFailure(code, str(data["message"]), str(data.get("at") or ""), error)


def read(index: Any) -> SyncMarks:
    """The marks of this index. Best effort: an unreadable index reads as never synced."""
    finished = _meta_time(index, LAST_SYNC_AT)
    return SyncMarks(last_sync_at=finished, last_full_sync_at=_meta_time(index, LAST_FULL_SYNC_AT),
                     changes_since=_changes_since(index, finished))


def _changes_since(index: Any, finished: float | None) -> float | None:
    """The recorded mark; for indexes written before it existed, derived from the finish time and duration."""
    mark = _meta_time(index, CHANGES_SINCE)
    if mark is not None or finished is None:
        return mark
    try:
        seconds = float(json.loads(index.get_meta(LAST_SYNC_REPORT) or "{}").get("seconds") or 0.0)
    except Exception:  # unreadable or odd report: assume an instant sync, the margin still applies
        seconds = 0.0
    return finished - seconds - CHANGES_SINCE_MARGIN_S


def _meta_time(index: Any, key: str) -> float | None:
    try:
        value = index.get_meta(key)
    except Exception:  # a damaged or locked index: treat as never recorded
        return None
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
