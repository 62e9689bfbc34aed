"""When the remote source was last synced, and why the last sync stopped: the meta keys, the margin, reading back.

One owner for these facts: the sync writes the marks (`record`,
`record_failure`, `record_account`), files_grep's freshness check and the
coverage warnings read them (`snapshot`: every mark in one read; `read`, `read_failure`).
The keys themselves are indexer.store.sync_keys's, so the store can drop them with the account.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.indexer.store.sync_keys import (ACCOUNT, ACCOUNT_KEYS, CHANGES_SINCE, LAST_FULL_SYNC_AT,
                                                   LAST_SYNC_AT, LAST_SYNC_FAILURE, LAST_SYNC_REPORT)
from mcp_nextcloud.nextcloud.errors import STORED, ErrorCode, NextcloudError

# "Changes since" is the sync's START time minus this margin: a file changed while the walk was
# running (after its folder was listed) or with a clock a little behind ours is still asked for.
CHANGES_SINCE_MARGIN_S = 2.0
# A recorded failure (LAST_SYNC_FAILURE) lets the tools say "the index could not be brought up to date,
# because..." instead of letting "no hit" pass for evidence.


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


def other_account(index: Any, account: Any) -> str | None:
    """The account an index's remote part comes from, when it is not `account` (None: the same, or none yet)."""
    recorded = index.get_meta(ACCOUNT)
    mine = f"{account.user} on {getattr(account, 'url', '')}"
    return recorded if recorded and recorded != mine else None


def record_failure(writer: Any, exc: BaseException, *, at: float) -> None:
    """Remember why a sync stopped: the error table's parts (so each front end can word it), or a safe summary."""
    if isinstance(exc, NextcloudError):
        data: dict[str, Any] = {"kind": exc.code.value, "message": exc.render(STORED), "cause": exc.cause,
                                "action": exc.action, "step": exc.user_step}
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


@dataclass(frozen=True)
class SyncSnapshot:
    """Every mark of the synced account as one read saw them: what a tool call reasons from."""

    marks: SyncMarks
    failure: SyncFailure | None
    account: str | None
    report: dict[str, Any]           # the last sync's report (`index sync --json` shows it); {} when none


def snapshot(index: Any) -> SyncSnapshot:
    """The account's marks in one read of the index. Best effort: an unreadable index reads as never synced."""
    try:
        values: dict[str, str] = index.get_metas(ACCOUNT_KEYS)
    except Exception:  # a damaged or locked index: treat as never recorded
        values = {}
    finished = _meta_time(values, LAST_SYNC_AT)
    marks = SyncMarks(last_sync_at=finished, last_full_sync_at=_meta_time(values, LAST_FULL_SYNC_AT),
                      changes_since=_changes_since(values, finished))
    return SyncSnapshot(marks, _failure(values.get(LAST_SYNC_FAILURE)), values.get(ACCOUNT) or None,
                        _report(values.get(LAST_SYNC_REPORT)))


def _report(raw: str | None) -> dict[str, Any]:
    try:
        report = json.loads(raw) if raw else {}
    except ValueError:  # unreadable: as if none was recorded
        return {}
    return report if isinstance(report, dict) else {}


def read(index: Any) -> SyncMarks:
    """The marks of this index (one read; see `snapshot`)."""
    return snapshot(index).marks


def read_failure(index: Any) -> SyncFailure | None:
    """The recorded failure of the newest sync, or None (none recorded, or unreadable)."""
    return snapshot(index).failure


def _failure(raw: str | None) -> SyncFailure | None:
    try:
        data = json.loads(raw) if raw else None
    except ValueError:  # unreadable = nothing recorded
        return None
    if not isinstance(data, dict) or not data.get("message"):
        return None
    code = ErrorCode.parse(str(data.get("kind") or ""))
    error = None
    if code is not None:
        error = NextcloudError(code, cause=str(data.get("cause") or data["message"]),
                               action=str(data.get("action") or ""), user_step=data.get("step") or None)
    return SyncFailure(code, str(data["message"]), str(data.get("at") or ""), error)


def _changes_since(values: dict[str, str], finished: float | None) -> float | None:
    """The recorded mark; for indexes written before it existed, derived from the finish time and duration."""
    mark = _meta_time(values, CHANGES_SINCE)
    if mark is not None or finished is None:
        return mark
    try:
        seconds = float(_report(values.get(LAST_SYNC_REPORT)).get("seconds") or 0.0)
    except (TypeError, ValueError):  # an odd report: assume an instant sync, the margin still applies
        seconds = 0.0
    return finished - seconds - CHANGES_SINCE_MARGIN_S


def _meta_time(values: dict[str, str], key: str) -> float | None:
    value = values.get(key)
    if not value:
        return None
    try:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
