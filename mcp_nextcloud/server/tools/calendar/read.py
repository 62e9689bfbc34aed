"""calendar_list_events: every occurrence in a window, across the account's calendars, one REPORT per calendar.

Recurring events are expanded here (cal_expand, under a budget per call),
not by the server's <c:expand>: Nextcloud's expansion converts everything to
UTC and drops the event's own time zone, which the answer must keep. EXDATE
and moved occurrences (RECURRENCE-ID overrides) are honoured by the library.
A calendar that cannot be read is named in `warnings`; the others still
answer. So is one stored object that cannot be used (any client may have
written it): it is skipped, named, and the rest of its calendar is listed.
"""
from __future__ import annotations

import datetime as dt
import re
import threading
from collections import OrderedDict
from typing import Any

import icalendar
from mcp.types import CallToolResult

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import misuse
from mcp_nextcloud.server.tools.calendar.zones import LocalTimes, local_times
from mcp_nextcloud.server.tools.calendar.common import (CalendarRef, bound, calendars, iso_utc, local_form, parse_when,
                                                   pick_calendar)
from mcp_nextcloud.server.tools.calendar.expand import Budget, Watchdog, occurrences
from mcp_nextcloud.server.tools.calendar.rrule import BadRule, check_rule, stored_rules
from mcp_nextcloud.server.tools.account.first_login import NO_CALENDAR_YET, has_event_calendar

DEFAULT_DAYS = 7
MAX_WINDOW_DAYS = 366
class _Recent:
    """A bounded, thread-safe map that forgets the least recently used entry first.

    Keys are (calendar, name, etag): a changed object has a new etag, so an entry is never stale."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: "OrderedDict[tuple[str, str, str], Any]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str, str]) -> Any:
        with self._lock:
            hit = self._items.get(key)
            if hit is not None:
                self._items.move_to_end(key)
            return hit

    def put(self, key: tuple[str, str, str], value: Any) -> None:
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)


# An agent lists the same weeks again and again, and parsing is most of a listing's cost. Most objects are
# one event that does not repeat: for those only the answer's entry and its two instants are kept (under
# 1 kB each), so a year of a busy account stays cached; parsed calendars are kept only for series.
_SERIES = _Recent(2_000)
_SINGLES = _Recent(20_000)


def parsed_object(key: tuple[str, str, str], ics: str) -> Any:
    """icalendar.Calendar of a stored object (from the cache when it is a series seen before)."""
    hit = _SERIES.get(key) if key[2] else None
    return hit if hit is not None else icalendar.Calendar.from_ical(ics)


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
        if comp.get("RECURRENCE-ID") is not None:
            # The occurrence's handle within its series (what calendar_update/delete_event take).
            entry["recurrenceId"] = iso_utc(comp.decoded("RECURRENCE-ID"))
    if str(comp.get("STATUS") or "").upper() == "CANCELLED":
        entry["cancelled"] = True
    if task:
        entry["task"] = True
    return entry


def _sort_key(entry: dict[str, Any]) -> str:
    """The start with seconds always written ("...T09:00Z" sorts after "...T09:00:01Z" as text otherwise)."""
    start: str = entry.get("start", "")
    if "T" not in start:
        return start + "T00:00:00Z"
    return start[:-1] + ":00Z" if len(start) == len("2027-03-05T00:00Z") else start


def _instant(value: dt.date | dt.datetime) -> dt.datetime:
    """A start or end as a UTC instant; floating times and dates read as UTC (as the server's filter does)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc) if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    return dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)


def _span(comp: Any) -> tuple[dt.datetime, dt.datetime]:
    """First and last instant of one event that does not repeat (most of a calendar: no recurrence engine)."""
    first = comp.decoded("DTSTART")
    if comp.get("DTEND") is not None:
        last = comp.decoded("DTEND")
    elif comp.get("DURATION") is not None:
        last = first + comp.decoded("DURATION")
    else:
        last = first if isinstance(first, dt.datetime) else first + dt.timedelta(days=1)
    return _instant(first), _instant(last)


def _overlaps(lo: dt.datetime, hi: dt.datetime, start: dt.datetime, end: dt.datetime) -> bool:
    """RFC 4791 9.9 overlap of [lo, hi) with the window [start, end)."""
    return lo < end and (hi > start if hi > lo else lo >= start)


def expand_object(ics: str, cal: CalendarRef, start: dt.datetime, end: dt.datetime, component: str,
                  key: tuple[str, str, str], budget: Budget, watchdog: Watchdog) -> list[dict[str, Any]]:
    """The occurrences of one stored object in [start, end); ValueError (the reason) when it is unusable."""
    single = _SINGLES.get(key) if key[2] else None
    if single is not None:
        entry, lo, hi = single
        return [dict(entry)] if _overlaps(lo, hi, start, end) else []   # a copy: the cached one stays as it was
    parsed = parsed_object(key, ics)
    comps = parsed.walk(component)
    for comp in comps:
        for rule in stored_rules(comp):
            try:
                check_rule(rule, comp.decoded("DTSTART") if comp.get("DTSTART") is not None
                           else dt.date(2000, 1, 1), writing=False)
            except BadRule as exc:
                raise ValueError(f"its repeat rule is not valid ({exc})") from None
    # Stored RRULE/RDATE or overrides mean a series (the library marks every occurrence with a RECURRENCE-ID).
    repeats = any(c.get("RRULE") is not None or c.get("RDATE") is not None or c.get("RECURRENCE-ID") is not None
                  for c in comps)
    if not repeats and len(comps) == 1 and component == "VEVENT" and comps[0].get("DTSTART") is not None:
        entry, lo, hi = occurrence_entry(comps[0], cal, False), *_span(comps[0])
        if key[2]:
            _SINGLES.put(key, (dict(entry), lo, hi))
        return [entry] if _overlaps(lo, hi, start, end) else []
    if key[2]:
        _SERIES.put(key, parsed)
    uid = str(comps[0].get("UID") or "") if comps else ""
    budget.titles[uid] = str(comps[0].get("SUMMARY") or "") if comps else ""
    found = occurrences(parsed, component, start, end, budget, watchdog, uid)
    # An undated to-do overlaps every window (RFC 4791 9.9): it is not something happening in this one.
    # (Checked on the stored components: the library gives every occurrence a DTSTART.)
    dated_uids = {str(c.get("UID")) for c in comps if c.get("DTSTART") is not None or c.get("DUE") is not None}
    dated = [c for c in found if str(c.get("UID")) in dated_uids]
    return [occurrence_entry(c, cal, repeats) for c in dated]


def _window(start: str, end: str | None, local: LocalTimes) -> tuple[dt.datetime, dt.datetime]:
    lo = bound(start, "start", local)
    if end:
        hi = bound(end, "end", local)
        if not isinstance(parse_when(end, "end", local=local), dt.datetime):
            hi += dt.timedelta(days=1)   # a date as the end means "through that day"
    else:
        hi = lo + dt.timedelta(days=DEFAULT_DAYS)
    if hi <= lo:
        raise misuse("end is not after start. Give an end later than start (or leave it out for 7 days).",
                     status=ToolStatus.BAD_WINDOW)
    if hi - lo > dt.timedelta(days=MAX_WINDOW_DAYS):
        raise misuse(f"start to end is longer than {MAX_WINDOW_DAYS} days. List a shorter window (a month is "
                     "typical).", status=ToolStatus.BAD_WINDOW)
    return lo, hi


def _selected(ctx: ServerContext, calendar: str | None, include_app: bool) -> tuple[list[CalendarRef], list[str]]:
    """The calendars to read, and the notes about calendars left out."""
    all_cals = calendars(ctx)
    if calendar:
        return [pick_calendar(all_cals, calendar)], []
    chosen = [c for c in all_cals if (include_app or not c.app)
              and ("VEVENT" in c.components or (c.app and "VTODO" in c.components))]
    notes = [] if has_event_calendar(all_cals) else [NO_CALENDAR_YET]
    skipped = [c for c in all_cals if c.app and not include_app]
    if skipped:
        notes.append(f"{len(skipped)} app calendar(s) (Deck boards' due cards) not listed; "
                     "includeAppCalendars=true adds them.")
    return chosen, notes


_UID_LINE = re.compile(r"^UID:(.{1,200})$", re.MULTILINE)
_SUMMARY_LINE = re.compile(r"^SUMMARY[^:\r\n]*:(.{0,80})", re.MULTILINE)


def _printable(text: str) -> str:
    return "".join(ch if ch.isprintable() else "?" for ch in text.strip())


def _label(ics: str, name: str) -> str:
    """How a skipped object is named: its title and uid read from the raw text (it could not be parsed)."""
    uid = _UID_LINE.search(ics or "")
    title = _SUMMARY_LINE.search(ics or "")
    parts = [f"'{_printable(title.group(1))}'" if title else "",
             f"(uid {_printable(uid.group(1))})" if uid else f"({name})"]
    return "Event " + " ".join(p for p in parts if p)


def _collect(ctx: ServerContext, cals: list[CalendarRef], lo: dt.datetime, hi: dt.datetime, budget: Budget,
             watchdog: Watchdog) -> tuple[list[dict[str, Any]], list[str]]:
    """Every occurrence in the window from each calendar, and the warnings about what could not be read."""
    caldav = ctx.client().caldav
    events: list[dict[str, Any]] = []
    warnings: list[str] = []
    for cal in cals:
        component = "VEVENT" if "VEVENT" in cal.components else "VTODO"
        try:
            objects = caldav.objects_between(cal.id, lo, hi, component=component)
        except NextcloudError as exc:
            if exc.code is ErrorCode.AUTH:
                raise
            warnings.append(f"Calendar {cal.id} ({cal.name}) could not be read ({exc.code.value}); "
                            "its events are missing from this answer.")
            continue
        for obj in objects:
            try:
                events.extend(expand_object(obj.ics, cal, lo, hi, component, (cal.id, obj.name, obj.etag),
                                            budget, watchdog))
            except Exception as exc:  # noqa: BLE001 - foreign data: any failure skips this object, named
                reason = str(exc) if isinstance(exc, ValueError) and str(exc).startswith("its ") else \
                    f"it is not valid iCalendar ({type(exc).__name__})"
                warnings.append(f"{_label(obj.ics, obj.name)} in calendar {cal.id} was skipped: {reason}. "
                                "Fix or delete it in Nextcloud Calendar; the rest of the calendar is listed.")
    return events, warnings


def _budget_notes(budget: Budget) -> list[str]:
    """What the expansion budget left out, by series (title and uid), for `warnings`."""
    notes = []
    for uid in sorted(budget.cut):
        title = _printable(budget.titles.get(uid, ""))[:80]
        notes.append(f"Series '{title}' (uid {_printable(uid)}) repeats too often to expand in one call: "
                     "only the occurrences found within the expansion budget are listed. List a shorter "
                     "window to see the rest.")
    return notes


def list_events(ctx: ServerContext, *, start: str, end: str | None, calendar: str | None, include_app: bool,
                limit: int) -> CallToolResult:
    """Occurrences overlapping [start, end) in the chosen calendars, sorted by start, at most `limit`."""
    local = local_times(ctx)
    lo, hi = _window(start, end, local)
    cals, notes = _selected(ctx, calendar, include_app)
    budget = Budget(per_rule=limit + 1)
    with Watchdog(budget) as watchdog:
        events, warnings = _collect(ctx, cals, lo, hi, budget, watchdog)
    events.sort(key=_sort_key)
    warnings += _budget_notes(budget)
    total = len(events)
    more = total > limit or bool(budget.cut) or bool(budget.capped)
    payload: dict[str, Any] = {
        "from": iso_utc(lo), "to": iso_utc(hi),
        "calendars": {c.id: c.name for c in cals},
        "events": events[:limit], "truncated": more,
        "warnings": local.notes() + warnings + notes,
    }
    if total > limit and not budget.cut and not budget.capped:
        payload["total"] = total
        payload["hint"] = (f"{total - limit} more; list a shorter window (start at the last start shown) "
                           "or raise limit.")
    elif more:
        payload["hint"] = ("More occurrences than listed (a series repeats often, or the expansion budget was "
                           "reached); list a shorter window, starting at the last start shown.")
    elif not events:
        payload["hint"] = NO_CALENDAR_YET if NO_CALENDAR_YET in notes else \
            "No events in this window in the calendars listed."
    return envelope(payload)
