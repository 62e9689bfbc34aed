"""Building and patching iCalendar objects with `icalendar` (never by string).

A new event is assembled from typed values; an existing one is patched in
place: only the properties a change names are replaced, so an RRULE, a
VALARM or an X- property this server cannot express survives an update.
"""
from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass, field
from typing import Any

import icalendar
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import misuse
from mcp_nextcloud.server.tools.calendar.rrule import BadRule, check_rule

PRODID = "-//mcp-nextcloud//EN"
UTC = dt.timezone.utc
When = dt.date | dt.datetime


@dataclass
class EventFields:
    """What a create or update sets; None means "leave as it is" (update) or "absent" (create)."""

    title: str | None = None
    start: When | None = None
    end: When | None = None
    location: str | None = None
    description: str | None = None
    rrule: str | None = None
    attendees: list[str] | None = None
    organizer: tuple[str, str] | None = None     # (email, display name), from the account's principal
    notes: list[str] = field(default_factory=list)  # what the patch did that the answer must say


def normalize_rrule(text: str, start: When) -> icalendar.vRecur:
    """'FREQ=WEEKLY;BYDAY=MO;COUNT=8' (an RRULE: prefix is fine) as a vRecur; a rule cal_rrule refuses is a misuse."""
    try:
        rule: icalendar.vRecur = icalendar.vRecur.from_ical(check_rule(text, start, writing=True))
        return rule
    except BadRule as exc:
        raise misuse(f"repeat {text[:120]!r} is not a usable RRULE: {exc}. Examples: FREQ=WEEKLY;BYDAY=MO;COUNT=8 "
                     "or FREQ=MONTHLY;UNTIL=20271231T000000Z.", status=ToolStatus.BAD_RRULE) from None


def storable(value: When) -> When:
    """A time as stored: a date stays a date; an IANA-zoned time keeps its zone; a fixed offset becomes UTC."""
    if isinstance(value, dt.datetime) and value.tzinfo is not None and not hasattr(value.tzinfo, "key"):
        return value.astimezone(UTC)
    return value


def _attendee(email: str, *, chair: bool = False, name: str | None = None) -> icalendar.vCalAddress:
    addr = icalendar.vCalAddress(f"mailto:{email}")
    if name:
        addr.params["CN"] = icalendar.vText(name)
    addr.params["CUTYPE"] = icalendar.vText("INDIVIDUAL")
    addr.params["ROLE"] = icalendar.vText("CHAIR" if chair else "REQ-PARTICIPANT")
    addr.params["PARTSTAT"] = icalendar.vText("ACCEPTED" if chair else "NEEDS-ACTION")
    if not chair:
        addr.params["RSVP"] = icalendar.vText("TRUE")
    return addr


def _set(comp: Any, name: str, value: Any) -> None:
    comp.pop(name, None)
    if value is not None and value != "":
        comp.add(name, value)


def _set_people(ev: Any, fields: EventFields) -> None:
    """ORGANIZER and ATTENDEEs: kept attendees keep their answers (PARTSTAT), new ones are invited."""
    wanted = [a.strip() for a in fields.attendees or []]
    old = ev.get("ATTENDEE") or []
    old = old if isinstance(old, list) else [old]
    by_mail = {str(a).split(":", 1)[-1].lower(): a for a in old}
    ev.pop("ATTENDEE", None)
    if not wanted:
        ev.pop("ORGANIZER", None)
        return
    if fields.organizer and ev.get("ORGANIZER") is None:
        mail, name = fields.organizer
        org = icalendar.vCalAddress(f"mailto:{mail}")
        org.params["CN"] = icalendar.vText(name)
        ev.add("ORGANIZER", org)
        if mail.lower() not in {w.lower() for w in wanted}:
            ev.add("ATTENDEE", by_mail.get(mail.lower()) or _attendee(mail, chair=True, name=name))
    for mail in wanted:
        ev.add("ATTENDEE", by_mail.get(mail.lower()) or _attendee(mail))


def new_event(fields: EventFields, *, uid: str | None = None) -> tuple[str, str]:
    """(uid, iCalendar text) of a new VEVENT with VTIMEZONEs for the zones it uses."""
    uid = uid or f"{uuid.uuid4()}"
    now = dt.datetime.now(UTC).replace(microsecond=0)
    ev = icalendar.Event()
    ev.add("UID", uid)
    ev.add("DTSTAMP", now)
    ev.add("CREATED", now)
    ev.add("LAST-MODIFIED", now)
    ev.add("SEQUENCE", 0)
    ev.add("SUMMARY", fields.title or "")
    assert fields.start is not None and fields.end is not None
    ev.add("DTSTART", storable(fields.start))
    ev.add("DTEND", storable(fields.end))
    if fields.rrule:
        ev.add("RRULE", normalize_rrule(fields.rrule, fields.start))
    _set(ev, "LOCATION", fields.location)
    _set(ev, "DESCRIPTION", fields.description)
    if fields.attendees:
        _set_people(ev, fields)
    return uid, calendar_text(ev)


def calendar_text(component: Any) -> str:
    """One new component (VEVENT, VTODO) as the iCalendar object stored for it, with the zones it uses."""
    cal = icalendar.Calendar()
    cal.add("PRODID", PRODID)
    cal.add("VERSION", "2.0")
    cal.add_component(component)
    cal.add_missing_timezones()
    ical: bytes = cal.to_ical()   # icalendar leaves to_ical unannotated
    return ical.decode("utf-8")


def _components(cal: Any, uid: str) -> tuple[Any, list[Any]]:
    """(master, overrides) of the event `uid` in a stored object."""
    comps = [c for c in cal.walk("VEVENT") if str(c.get("UID") or "") == uid]
    if not comps:
        raise ValueError(f"no VEVENT with uid {uid}")
    masters = [c for c in comps if c.get("RECURRENCE-ID") is None]
    master = masters[0] if masters else comps[0]
    return master, [c for c in comps if c is not master]


def _shift_series(master: Any, overrides: list[Any], delta: dt.timedelta) -> None:
    """Moving a series moves its exceptions with it: EXDATEs and overrides' RECURRENCE-IDs shift by `delta`."""
    raw = master.get("EXDATE")
    if raw is not None:
        values = [d.dt for item in (raw if isinstance(raw, list) else [raw]) for d in item.dts]
        master.pop("EXDATE")
        for value in values:
            master.add("EXDATE", value + delta if isinstance(value, dt.datetime) else value)
    for comp in overrides:
        rid = comp.decoded("RECURRENCE-ID")
        if isinstance(rid, dt.datetime):
            comp.pop("RECURRENCE-ID")
            comp.add("RECURRENCE-ID", rid + delta)


def _move(master: Any, overrides: list[Any], fields: EventFields) -> None:
    old_start = master.decoded("DTSTART")
    old_end = master.decoded("DTEND") if master.get("DTEND") is not None else None
    if old_end is None and master.get("DURATION") is not None:
        old_end = old_start + master.decoded("DURATION")
    start = fields.start if fields.start is not None else old_start
    if isinstance(start, dt.datetime) and isinstance(old_start, dt.datetime) and fields.start is not None \
            and getattr(old_start.tzinfo, "key", None) and not hasattr(start.tzinfo, "key"):
        start = start.astimezone(old_start.tzinfo)   # a UTC/offset time keeps the event in its own zone
    same_kind = isinstance(start, dt.datetime) == isinstance(old_start, dt.datetime)
    if fields.end is not None:
        end = fields.end
    elif same_kind and old_end is not None:
        end = start + (old_end - old_start)
    else:
        end = start + (dt.timedelta(hours=1) if isinstance(start, dt.datetime) else dt.timedelta(days=1))
    if isinstance(end, dt.datetime) and isinstance(start, dt.datetime) and hasattr(start.tzinfo, "key") \
            and not hasattr(end.tzinfo, "key"):
        end = end.astimezone(start.tzinfo)
    if isinstance(end, dt.datetime) != isinstance(start, dt.datetime) or end <= start:
        raise misuse("The new end is not after the event's start (or mixes a date with a time). Give an end "
                     "after the start, or both start and end.", status=ToolStatus.BAD_TIME)
    if master.get("RRULE") is not None and fields.start is not None:
        if isinstance(start, dt.datetime) and isinstance(old_start, dt.datetime) and start != old_start:
            _shift_series(master, overrides, start - old_start)
        fields.notes.append("The whole series moved; its occurrences follow its rule "
                            f"({master.get('RRULE').to_ical().decode()}).")
    _set(master, "DTSTART", storable(start))
    master.pop("DURATION", None)
    _set(master, "DTEND", storable(end))


def patch_event(ics: str, uid: str, fields: EventFields) -> str:
    """The stored object with only the named fields changed, SEQUENCE bumped and DTSTAMP renewed."""
    cal = icalendar.Calendar.from_ical(ics)
    master, overrides = _components(cal, uid)
    if fields.title is not None:
        _set(master, "SUMMARY", fields.title)
    if fields.location is not None:
        _set(master, "LOCATION", fields.location)
    if fields.description is not None:
        _set(master, "DESCRIPTION", fields.description)
    if fields.rrule is not None:
        _set(master, "RRULE", normalize_rrule(fields.rrule, master.decoded("DTSTART")) if fields.rrule else None)
    if fields.start is not None or fields.end is not None:
        _move(master, overrides, fields)
    if fields.attendees is not None:
        _set_people(master, fields)
    now = dt.datetime.now(UTC).replace(microsecond=0)
    for comp in (master, *overrides):
        sequence = int(comp.get("SEQUENCE") or 0) + 1
        _set(comp, "SEQUENCE", sequence)
        _set(comp, "DTSTAMP", now)
        _set(comp, "LAST-MODIFIED", now)
    cal.add_missing_timezones()
    ical: bytes = cal.to_ical()   # icalendar leaves to_ical unannotated
    return ical.decode("utf-8")


def event_people(ics: str, uid: str) -> tuple[str | None, list[str]]:
    """(organizer e-mail, attendee e-mails) of the event `uid`."""
    master, _ = _components(icalendar.Calendar.from_ical(ics), uid)
    org = master.get("ORGANIZER")
    raw = master.get("ATTENDEE") or []
    mails = [str(a).split(":", 1)[-1] for a in (raw if isinstance(raw, list) else [raw])]
    return (str(org).split(":", 1)[-1] if org else None), mails


def event_summary(ics: str, uid: str) -> dict[str, Any]:
    """title, start/end (as stored), repeats of the event `uid`, for answers."""
    master, _ = _components(icalendar.Calendar.from_ical(ics), uid)
    return {"title": str(master.get("SUMMARY") or ""),
            "start": master.decoded("DTSTART") if master.get("DTSTART") is not None else None,
            "end": master.decoded("DTEND") if master.get("DTEND") is not None else None,
            "repeats": master.get("RRULE") is not None, "location": str(master.get("LOCATION") or "")}
