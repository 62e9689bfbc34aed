"""calendar_list_events: every occurrence in a window, across the account's calendars, one REPORT per calendar.

Recurring events are expanded here (recurring-ical-events), not by the
server's <c:expand>: Nextcloud's expansion converts everything to UTC and
drops the event's own time zone, which the answer must keep. EXDATE and
moved occurrences (RECURRENCE-ID overrides) are honoured by the library.
A calendar that cannot be read is named in `warnings`; the others still answer.
"""
from __future__ import annotations

import datetime as dt
import threading
from collections import OrderedDict
from typing import Any

import icalendar
import recurring_ical_events

from nextcloud.errors import NextcloudError
from server.context import ServerContext
from server.envelope import envelope
from server.errors import misuse
from server.tools.cal_common import CalendarRef, bound, calendars, iso_utc, local_form, parse_when, pick_calendar
from server.tools.first_login import NO_CALENDAR_YET, has_own_calendar

DEFAULT_DAYS = 7
MAX_WINDOW_DAYS = 366
# Parsed objects by (calendar, name, etag): an agent lists the same weeks again and again, and parsing is
# most of a listing's cost. A changed object has a new etag, so an entry is never stale; never mutated.
_PARSED: "OrderedDict[tuple[str, str, str], Any]" = OrderedDict()
_PARSED_MAX = 5000
_PARSED_LOCK = threading.Lock()


def parsed_object(key: tuple[str, str, str], ics: str) -> Any:
    """icalendar.Calendar of a stored object, from the cache when its etag is unchanged."""
    if not key[2]:
        return icalendar.Calendar.from_ical(ics)
    with _PARSED_LOCK:
        hit = _PARSED.get(key)
        if hit is not None:
            _PARSED.move_to_end(key)
            return hit
    cal = icalendar.Calendar.from_ical(ics)
    with _PARSED_LOCK:
        _PARSED[key] = cal
        while len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return cal


def _addr(value: Any) -> str:
    return str(value).split(":", 1)[1] if str(value).lower().startswith("mailto:") else str(value)


def _attendees(comp: Any) -> list[str]:
    raw = comp.get("ATTENDEE") or []
    return [_addr(a) for a in (raw if isinstance(raw, list) else [raw])]


def occurrence_entry(comp: Any, cal: CalendarRef, repeats: bool) -> dict[str, Any]:
    """One occurrence as the model reads it: handles (uid, calendar), times in UTC plus the event's own zone."""
    task = comp.name == "VTODO"
    start = comp.decoded("DTSTART") if comp.get("DTSTART") is not None else None
    end = comp.decoded("DTEND") if comp.get("DTEND") is not None else None
    if task:
        due = comp.decoded("DUE") if comp.get("DUE") is not None else None
        start, end = start or due, due
    if end is None and start is not None and comp.get("DURATION") is not None:
        end = start + comp.decoded("DURATION")
    all_day = start is not None and not isinstance(start, dt.datetime)
    entry: dict[str, Any] = {"uid": str(comp.get("UID") or ""), "calendar": cal.id,
                             "title": str(comp.get("SUMMARY") or "")}
    if start is not None:
        entry["start"] = iso_utc(start)
    if end is not None:
        # All-day: the last day itself (iCalendar's DTEND is the day after, which reads as one day too many).
        entry["end"] = iso_utc(end - dt.timedelta(days=1) if all_day and end > start else end)
    if all_day:
        entry["allDay"] = True
    local = local_form(start)
    if local:
        entry["local"] = local
    if comp.get("LOCATION"):
        entry["location"] = str(comp.get("LOCATION"))
    organizer = _addr(comp.get("ORGANIZER")) if comp.get("ORGANIZER") else None
    people = [p for p in _attendees(comp) if p.lower() != (organizer or "").lower()]
    if people:
        entry["attendees"] = people
    if organizer:
        entry["organizer"] = organizer
    if repeats:
        entry["repeats"] = True
    if str(comp.get("STATUS") or "").upper() == "CANCELLED":
        entry["cancelled"] = True
    if task:
        entry["task"] = True
    return entry


def _sort_key(entry: dict[str, Any]) -> str:
    start = entry.get("start", "")
    return start if "T" in start else start + "T00:00Z"


def _instant(value: dt.date | dt.datetime) -> dt.datetime:
    """A start or end as a UTC instant; floating times and dates read as UTC (as the server's filter does)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)


def _single_in_window(comp: Any, start: dt.datetime, end: dt.datetime) -> bool:
    """RFC 4791 9.9 overlap for one event that does not repeat (most of a calendar: no recurrence engine)."""
    first = comp.decoded("DTSTART")
    if comp.get("DTEND") is not None:
        last = comp.decoded("DTEND")
    elif comp.get("DURATION") is not None:
        last = first + comp.decoded("DURATION")
    else:
        last = first if isinstance(first, dt.datetime) else first + dt.timedelta(days=1)
    lo, hi = _instant(first), _instant(last)
    return lo < end and (hi > start if hi > lo else lo >= start)


def expand_object(ics: str, cal: CalendarRef, start: dt.datetime, end: dt.datetime,
                  component: str, key: tuple[str, str, str] = ("", "", "")) -> list[dict[str, Any]]:
    """The occurrences of one stored object in [start, end); ValueError when its iCalendar is unusable."""
    parsed = parsed_object(key, ics)
    comps = parsed.walk(component)
    # Stored RRULE/RDATE or overrides mean a series (the library marks every occurrence with a RECURRENCE-ID).
    repeats = any(c.get("RRULE") is not None or c.get("RDATE") is not None or c.get("RECURRENCE-ID") is not None
                  for c in comps)
    if not repeats and len(comps) == 1 and component == "VEVENT" and comps[0].get("DTSTART") is not None:
        return [occurrence_entry(comps[0], cal, False)] if _single_in_window(comps[0], start, end) else []
    try:
        found = recurring_ical_events.of(parsed, components=[component]).between(start, end)
    except recurring_ical_events.InvalidCalendar as exc:
        raise ValueError(str(exc)) from None
    # An undated to-do overlaps every window (RFC 4791 9.9): it is not something happening in this one.
    # (Checked on the stored components: the library gives every occurrence a DTSTART.)
    dated_uids = {str(c.get("UID")) for c in comps if c.get("DTSTART") is not None or c.get("DUE") is not None}
    dated = [c for c in found if str(c.get("UID")) in dated_uids]
    return [occurrence_entry(c, cal, repeats) for c in dated]


def _window(start: str, end: str | None) -> tuple[dt.datetime, dt.datetime]:
    lo = bound(start, "start")
    if end:
        hi = bound(end, "end")
        if not isinstance(parse_when(end, "end"), dt.datetime):
            hi += dt.timedelta(days=1)   # a date as the end means "through that day"
    else:
        hi = lo + dt.timedelta(days=DEFAULT_DAYS)
    if hi <= lo:
        raise misuse("end is not after start. Give an end later than start (or leave it out for 7 days). "
                     "Do not retry unchanged.", status="bad_window")
    if hi - lo > dt.timedelta(days=MAX_WINDOW_DAYS):
        raise misuse(f"The window is longer than {MAX_WINDOW_DAYS} days. List a shorter window (a month is "
                     "typical). Do not retry unchanged.", status="bad_window")
    return lo, hi


def _selected(ctx: ServerContext, calendar: str | None, include_app: bool) -> tuple[list[CalendarRef], list[str]]:
    """The calendars to read, and the notes about calendars left out."""
    all_cals = calendars(ctx)
    if calendar:
        return [pick_calendar(all_cals, calendar)], []
    chosen = [c for c in all_cals if (include_app or not c.app)
              and ("VEVENT" in c.components or (c.app and "VTODO" in c.components))]
    notes = [] if has_own_calendar(all_cals) else [NO_CALENDAR_YET]
    skipped = [c for c in all_cals if c.app and not include_app]
    if skipped:
        notes.append(f"{len(skipped)} app calendar(s) (Deck boards' due cards) not listed; "
                     "includeAppCalendars=true adds them.")
    return chosen, notes


def list_events(ctx: ServerContext, *, start: str, end: str | None, calendar: str | None, include_app: bool,
                limit: int) -> Any:
    """Occurrences overlapping [start, end) in the chosen calendars, sorted by start, at most `limit`."""
    lo, hi = _window(start, end)
    cals, notes = _selected(ctx, calendar, include_app)
    caldav = ctx.client().caldav
    events: list[dict[str, Any]] = []
    warnings: list[str] = []
    for cal in cals:
        component = "VEVENT" if "VEVENT" in cal.components else "VTODO"
        try:
            objects = caldav.objects_between(cal.id, lo, hi, component=component)
        except NextcloudError as exc:
            if exc.kind == "auth":
                raise
            warnings.append(f"Calendar {cal.id} ({cal.name}) could not be read ({exc.kind}); "
                            "its events are missing from this answer.")
            continue
        for obj in objects:
            try:
                events.extend(expand_object(obj.ics, cal, lo, hi, component, (cal.id, obj.name, obj.etag)))
            except ValueError:
                warnings.append(f"An entry in calendar {cal.id} is not valid iCalendar and was skipped.")
    events.sort(key=_sort_key)
    total = len(events)
    payload: dict[str, Any] = {
        "from": iso_utc(lo), "to": iso_utc(hi),
        "calendars": {c.id: c.name for c in cals},
        "events": events[:limit], "truncated": total > limit,
        "warnings": warnings + notes,
    }
    if total > limit:
        payload["total"] = total
        payload["hint"] = (f"{total - limit} more; list a shorter window (start at the last start shown) "
                           "or raise limit.")
    elif not events:
        payload["hint"] = NO_CALENDAR_YET if NO_CALENDAR_YET in notes else \
            "No events in this window in the calendars listed."
    return envelope(payload)
