"""Tasks as iCalendar VTODOs, built and patched with `icalendar` (never by string).

A patch changes only the properties a call names, so a VALARM, a
RELATED-TO, categories or an X- property another client wrote survive an
update. Completing follows RFC 5545 and the Tasks app: STATUS:COMPLETED,
COMPLETED (the instant) and PERCENT-COMPLETE:100; reopening undoes all three.
"""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

import icalendar

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import misuse
from mcp_nextcloud.server.tools.calendar.common import iso_utc
from mcp_nextcloud.server.tools.calendar.ics import calendar_text, storable

UTC = dt.timezone.utc
# iCalendar PRIORITY 1 (highest) .. 9 (lowest), 0 undefined; the Tasks app's three levels.
PRIORITY = {"high": 1, "medium": 5, "low": 9}
DONE = ("COMPLETED", "CANCELLED")


@dataclass
class TaskFields:
    """What a create or update sets; None leaves a property as it is, "" (due, description) removes it."""

    title: str | None = None
    due: dt.date | dt.datetime | str | None = None
    priority: str | None = None
    description: str | None = None
    done: bool | None = None


def priority_word(value: Any) -> str | None:
    """PRIORITY as the tools say it: 1-4 high, 5 medium, 6-9 low, 0 or absent none."""
    try:
        n = int(value or 0)
    except (TypeError, ValueError):
        return None
    return None if n <= 0 else "high" if n < 5 else "medium" if n == 5 else "low"


def _set(comp: Any, name: str, value: Any) -> None:
    comp.pop(name, None)
    if value is not None and value != "":
        comp.add(name, value)


def _complete(todo: Any, done: bool, now: dt.datetime) -> None:
    if done:
        _set(todo, "STATUS", "COMPLETED")
        _set(todo, "COMPLETED", now)
        _set(todo, "PERCENT-COMPLETE", 100)
    else:
        _set(todo, "STATUS", "NEEDS-ACTION")
        todo.pop("COMPLETED", None)
        _set(todo, "PERCENT-COMPLETE", 0)


def _apply(todo: Any, fields: TaskFields, now: dt.datetime) -> None:
    if fields.title is not None:
        _set(todo, "SUMMARY", fields.title)
    if fields.description is not None:
        _set(todo, "DESCRIPTION", fields.description)
    if fields.due is not None:
        _set(todo, "DUE", storable(fields.due) if not isinstance(fields.due, str) else None)
    if fields.priority is not None:
        _set(todo, "PRIORITY", PRIORITY.get(fields.priority, 0) or None)
    if fields.done is not None:
        _complete(todo, fields.done, now)


def new_task(fields: TaskFields) -> tuple[str, str]:
    """(uid, iCalendar text) of a new open VTODO."""
    uid = str(uuid.uuid4())
    now = dt.datetime.now(UTC).replace(microsecond=0)
    todo = icalendar.Todo()
    for name, value in (("UID", uid), ("DTSTAMP", now), ("CREATED", now), ("LAST-MODIFIED", now)):
        todo.add(name, value)
    todo.add("STATUS", "NEEDS-ACTION")
    _apply(todo, TaskFields(title=fields.title or "", due=fields.due, priority=fields.priority,
                            description=fields.description), now)
    return uid, calendar_text(todo)


def _todo(cal: Any, uid: str) -> Any:
    for comp in cal.walk("VTODO"):
        if str(comp.get("UID") or "") == uid and comp.get("RECURRENCE-ID") is None:
            return comp
    raise misuse(f"The stored object holds no task {uid!r}. Call tasks_list for its uid.",
                 status=ToolStatus.UNKNOWN_TASK)


def patch_task(ics: str, uid: str, fields: TaskFields) -> str:
    """The stored object with only the named properties changed; SEQUENCE bumped, DTSTAMP renewed."""
    cal = icalendar.Calendar.from_ical(ics)
    todo = _todo(cal, uid)
    now = dt.datetime.now(UTC).replace(microsecond=0)
    _apply(todo, fields, now)
    _set(todo, "SEQUENCE", int(todo.get("SEQUENCE") or 0) + 1)
    _set(todo, "DTSTAMP", now)
    _set(todo, "LAST-MODIFIED", now)
    cal.add_missing_timezones()
    ical: bytes = cal.to_ical()   # icalendar leaves to_ical unannotated
    return ical.decode("utf-8")


def _when(comp: Any, name: str) -> str | None:
    return iso_utc(comp.decoded(name)) if comp.get(name) is not None else None


def summaries(ics: str) -> list[dict[str, Any]]:
    """Every task of a stored object as the tools show it (uid, title, due, priority, status, ...)."""
    out = []
    for todo in icalendar.Calendar.from_ical(ics).walk("VTODO"):
        if todo.get("RECURRENCE-ID") is not None:
            continue   # an override of a repeating task: the master stands for the series
        status = str(todo.get("STATUS") or "NEEDS-ACTION").upper()
        item: dict[str, Any] = {"uid": str(todo.get("UID") or ""), "title": str(todo.get("SUMMARY") or "")}
        due = _when(todo, "DUE")
        if due:
            item["due"] = due
        word = priority_word(todo.get("PRIORITY"))
        if word:
            item["priority"] = word
        done = status in DONE or todo.get("COMPLETED") is not None
        item["done"] = done
        if status not in ("NEEDS-ACTION", "COMPLETED"):
            item["status"] = status.lower()
        if todo.get("COMPLETED") is not None:
            item["completed"] = _when(todo, "COMPLETED")
        text = str(todo.get("DESCRIPTION") or "")
        if text:
            item["description"] = text[:500]
            if len(text) > 500:   # rule 3: a cut says so
                item["descriptionCut"] = len(text)
        if todo.get("RRULE") is not None:
            item["repeats"] = True
        out.append(item)
    return out
