"""One occurrence of a series: moved or changed (an override VEVENT with RECURRENCE-ID), or cancelled (EXDATE).

An occurrence is named by its recurrenceId: its original start, as
calendar_list_events gives it (UTC). The RECURRENCE-ID and EXDATE written
are typed like the series' DTSTART (a date, a time in the series' zone, or
UTC), as RFC 5545 requires and as clients match them. The master is left as
it is apart from its EXDATEs; attendees are told by the server's scheduling,
which compares the stored object with the new one.
"""
from __future__ import annotations

import datetime as dt
from typing import Any

import icalendar

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import misuse
from mcp_nextcloud.server.tools.calendar.expand import Budget, Watchdog, occurrences
from mcp_nextcloud.server.tools.calendar.ics import EventFields, When, _components, _move, _set, _set_people, storable

UTC = dt.timezone.utc
# What an override does not copy from its master: the rule itself and the per-object bookkeeping.
_NOT_COPIED = {"RRULE", "RDATE", "EXDATE", "EXRULE", "RECURRENCE-ID", "DTSTART", "DTEND", "DURATION", "SEQUENCE",
               "DTSTAMP", "CREATED", "LAST-MODIFIED"}


def _instant(value: When) -> dt.datetime:
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=UTC)


def typed_like(value: When, start: When) -> When:
    """`value` (an instant or a date) typed like the series' DTSTART: date, zoned, floating or UTC."""
    if not isinstance(start, dt.datetime):
        return value.date() if isinstance(value, dt.datetime) else value
    instant = _instant(value)
    if start.tzinfo is None:
        return instant.replace(tzinfo=None)   # a floating series: its wall clock read as UTC (as listings do)
    return instant.astimezone(start.tzinfo) if hasattr(start.tzinfo, "key") else instant


def _series(cal: Any, uid: str) -> tuple[Any, list[Any]]:
    master, overrides = _components(cal, uid)
    if master.get("RRULE") is None and master.get("RDATE") is None:
        raise misuse(f"The event {uid} does not repeat, so it has no occurrences to name: leave recurrenceId out "
                     "to change or delete the event itself.", status=ToolStatus.NOT_A_SERIES)
    return master, overrides


def _override(overrides: list[Any], key: When) -> Any:
    for comp in overrides:
        if _instant(comp.decoded("RECURRENCE-ID")) == _instant(key):
            return comp
    return None


def _is_occurrence(cal: Any, key: When) -> bool:
    """Whether the series has an occurrence starting at `key` (expanded within a small budget)."""
    lo = _instant(key)
    budget = Budget(per_rule=2, seconds=1.0)
    with Watchdog(budget) as watchdog:
        found = occurrences(cal, "VEVENT", lo, lo + dt.timedelta(minutes=1), budget, watchdog)
    return any(_instant(c.decoded("DTSTART")) == lo for c in found if c.get("DTSTART") is not None)


def _unknown(uid: str, rid: When) -> Exception:
    when = rid.isoformat() if not isinstance(rid, dt.datetime) else _instant(rid).strftime("%Y-%m-%dT%H:%MZ")
    return misuse(f"The series {uid} has no occurrence at {when}. Use the recurrenceId calendar_list_events gives "
                  "for that occurrence.", status=ToolStatus.UNKNOWN_OCCURRENCE)


def _new_override(master: Any, key: When) -> Any:
    """An override that starts as a copy of the occurrence: the master's properties, alarms included."""
    comp = icalendar.Event()
    for name, value in master.property_items(recursive=False):
        if name not in _NOT_COPIED and name not in ("BEGIN", "END"):
            comp.add(name, value, encode=False)
    for sub in master.subcomponents:
        comp.add_component(sub)
    start = master.decoded("DTSTART")
    if master.get("DTEND") is not None:
        length = master.decoded("DTEND") - start
    elif master.get("DURATION") is not None:
        length = master.decoded("DURATION")
    else:
        length = dt.timedelta(days=1) if not isinstance(start, dt.datetime) else dt.timedelta(0)
    comp.add("RECURRENCE-ID", key)
    comp.add("DTSTART", key)
    comp.add("DTEND", key + length)
    comp.add("SEQUENCE", int(master.get("SEQUENCE") or 0))
    return comp


def _touch(comp: Any) -> None:
    now = dt.datetime.now(UTC).replace(microsecond=0)
    _set(comp, "SEQUENCE", int(comp.get("SEQUENCE") or 0) + 1)
    _set(comp, "DTSTAMP", now)
    _set(comp, "LAST-MODIFIED", now)


def patch_occurrence(ics: str, uid: str, rid: When, fields: EventFields) -> tuple[str, Any]:
    """(stored text, the override) with one occurrence changed; the rest of the series as it was."""
    if fields.rrule is not None:
        raise misuse("repeat changes the whole series: leave recurrenceId out to change the rule.",
                     status=ToolStatus.BAD_ARGUMENT)
    cal = icalendar.Calendar.from_ical(ics)
    master, overrides = _series(cal, uid)
    key = typed_like(rid, master.decoded("DTSTART"))
    comp = _override(overrides, key)
    if comp is None:
        if not _is_occurrence(cal, key):
            raise _unknown(uid, rid)
        comp = _new_override(master, storable(key))
        cal.add_component(comp)
    for name, value in (("SUMMARY", fields.title), ("LOCATION", fields.location),
                        ("DESCRIPTION", fields.description)):
        if value is not None:
            _set(comp, name, value)
    if fields.start is not None or fields.end is not None:
        _move(comp, [], fields)
    if fields.attendees is not None:
        _set_people(comp, fields)
    _touch(comp)
    cal.add_missing_timezones()
    return cal.to_ical().decode("utf-8"), comp


def cancel_occurrence(ics: str, uid: str, rid: When) -> str:
    """The stored text with one occurrence cancelled: an EXDATE on the master, its override (if any) removed."""
    cal = icalendar.Calendar.from_ical(ics)
    master, overrides = _series(cal, uid)
    key = typed_like(rid, master.decoded("DTSTART"))
    moved = _override(overrides, key)
    if moved is None and not _is_occurrence(cal, key):
        raise _unknown(uid, rid)
    if moved is not None:
        cal.subcomponents.remove(moved)
    master.add("EXDATE", storable(key))
    _touch(master)
    ical: bytes = cal.to_ical()   # icalendar leaves to_ical unannotated
    return ical.decode("utf-8")


def occurrence_summary(ics: str, uid: str, rid: When) -> dict[str, Any]:
    """title, start/end (as stored), repeats of one occurrence's override, in event_summary's shape."""
    cal = icalendar.Calendar.from_ical(ics)
    master, overrides = _components(cal, uid)
    comp = _override(overrides, typed_like(rid, master.decoded("DTSTART"))) or master
    return {"title": str(comp.get("SUMMARY") or ""),
            "start": comp.decoded("DTSTART") if comp.get("DTSTART") is not None else None,
            "end": comp.decoded("DTEND") if comp.get("DTEND") is not None else None,
            "repeats": True}
