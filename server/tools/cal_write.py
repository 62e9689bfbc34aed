"""calendar_create_event, calendar_update_event, calendar_delete_event: the flows around CalDAV writes.

Create: PUT with If-None-Match. Update: REPORT by uid, patch, PUT with
If-Match; a stale etag re-reads and retries once, then reports. Delete:
REPORT by uid, DELETE with If-Match (the whole series); Nextcloud's
scheduling then sends the attendees a cancellation. With attendees, the
ORGANIZER is the account's own address from its calendar-user-address-set.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Callable, TypeGuard

from nextcloud.errors import NextcloudError
from server.context import ServerContext
from server.envelope import envelope
from server.errors import from_nextcloud, misuse, refused
from server.tools.cal_common import (CalendarRef, calendars, default_calendar, iso_utc, local_form, parse_when,
                                     pick_calendar, zone_name)
from server.tools.cal_ics import EventFields, event_people, event_summary, new_event, patch_event


def _nc_error(exc: BaseException) -> TypeGuard[NextcloudError]:
    return isinstance(exc, NextcloudError)


def check_emails(emails: list[str] | None, field: str = "attendees") -> list[str] | None:
    """Attendee addresses, trimmed and de-duplicated; anything that is not an e-mail address is a misuse."""
    if emails is None:
        return None
    out: list[str] = []
    for raw in emails:
        mail = raw.strip().removeprefix("mailto:")
        local, at, domain = mail.partition("@")
        if not (local and at and "." in domain) or any(ch.isspace() for ch in mail):
            raise misuse(f"{field}: {raw!r} is not an e-mail address. Give addresses (find them with "
                         "contacts_search). Do not retry unchanged.", status="bad_attendee")
        if mail.lower() not in {o.lower() for o in out}:
            out.append(mail)
    return out


def organizer(ctx: ServerContext) -> tuple[str, str]:
    """(e-mail, display name) from the account's calendar-user-address-set; refused when it has no e-mail."""
    principal = ctx.client().caldav.principal()
    if not principal.email:
        raise refused("This account has no e-mail address, so it cannot organize a meeting: invitations need "
                      "an organizer address (Nextcloud lists none in its calendar-user-address-set). Ask the "
                      "user to set an e-mail in Nextcloud's personal settings, or create the event without "
                      "attendees. Do not retry unchanged.", status="no_email")
    return principal.email, principal.display_name


def times(start: str, end: str | None, *, zone_hint: str = "",
          ) -> tuple[dt.date | dt.datetime, dt.date | dt.datetime | None]:
    """Parsed start and end; an all-day end is the last day (inclusive), stored as the day after."""
    lo = parse_when(start, "start", zone_hint=zone_hint)
    hi = parse_when(end, "end", zone_hint=zone_hint) if end else None
    if hi is not None and isinstance(lo, dt.datetime) != isinstance(hi, dt.datetime):
        raise misuse("start and end must both be dates (all day) or both date-times. Do not retry unchanged.",
                     status="bad_time")
    if hi is not None and not isinstance(hi, dt.datetime):
        hi = hi + dt.timedelta(days=1)
    if hi is not None and hi <= lo:
        raise misuse("end is before start. Give an end after start. Do not retry unchanged.", status="bad_time")
    return lo, hi


def _writable(cal: CalendarRef) -> CalendarRef:
    if not cal.writable or cal.app:
        raise misuse(f"Calendar {cal.id} ({cal.name}) is read-only. Use another calendar. Do not retry unchanged.",
                     status="read_only")
    return cal


def create(ctx: ServerContext, *, title: str, start: str, end: str | None, calendar: str | None,
           location: str | None, description: str | None, repeat: str | None, attendees: list[str] | None,
           uid: str | None = None) -> dict[str, Any]:
    """PUT a new event; returns its handles and what the answer should say (used by meet_schedule too)."""
    lo, hi = times(start, end)
    if hi is None:
        hi = lo + (dt.timedelta(hours=1) if isinstance(lo, dt.datetime) else dt.timedelta(days=1))
    people = check_emails(attendees)
    all_cals = calendars(ctx)
    cal = _writable(pick_calendar(all_cals, calendar) if calendar else default_calendar(all_cals))
    fields = EventFields(title=title, start=lo, end=hi, location=location, description=description,
                         rrule=repeat, attendees=people, organizer=organizer(ctx) if people else None)
    uid, ics = new_event(fields, uid=uid)
    try:
        ctx.client().caldav.put_event(cal.id, ics)
    except Exception as exc:
        if _nc_error(exc):
            raise from_nextcloud(exc) from None
        raise
    return _written(uid, cal, fields, people)


def _written(uid: str, cal: CalendarRef, fields: EventFields, people: list[str] | None) -> dict[str, Any]:
    assert fields.start is not None
    all_day = not isinstance(fields.start, dt.datetime)
    end = fields.end
    out: dict[str, Any] = {"uid": uid, "calendar": cal.id, "title": fields.title,
                           "start": iso_utc(fields.start)}
    if end is not None:
        out["end"] = iso_utc(end - dt.timedelta(days=1) if all_day else end)
    if all_day:
        out["allDay"] = True
    if local_form(fields.start):
        out["local"] = local_form(fields.start)
    if fields.location:
        out["location"] = fields.location
    if fields.rrule:
        out["repeats"] = True
    if people:
        out["attendees"] = people
        out["hint"] = "Nextcloud e-mails the invitations to the attendees."
    return out


def locate(ctx: ServerContext, uid: str, calendar: str | None) -> tuple[CalendarRef, Any]:
    """(calendar, stored object) of the event `uid`: one REPORT per calendar searched."""
    all_cals = calendars(ctx)
    if calendar:
        search = [pick_calendar(all_cals, calendar)]
    else:
        search = [c for c in all_cals if not c.app and "VEVENT" in c.components]
    caldav = ctx.client().caldav
    for cal in search:
        try:
            obj = caldav.object_by_uid(cal.id, uid)
        except Exception as exc:
            if _nc_error(exc):
                raise from_nextcloud(exc) from None
            raise
        if obj is not None:
            return cal, obj
    where = f"calendar {search[0].id}" if calendar else "any calendar"
    raise misuse(f"No event with uid {uid!r} in {where}. Call calendar_list_events to find it and use the uid "
                 "it returns. Do not guess; do not retry this uid.", status="unknown_event")


def _with_one_retry(ctx: ServerContext, uid: str, calendar: str | None,
                    write: Callable[[CalendarRef, Any], Any]) -> tuple[CalendarRef, Any, Any]:
    """Run `write(cal, obj)` (which sends If-Match); a stale etag re-reads the event and tries once more."""
    for attempt in (1, 2):
        cal, obj = locate(ctx, uid, calendar)
        _writable(cal)
        try:
            return cal, obj, write(cal, obj)
        except Exception as exc:
            if not _nc_error(exc):
                raise
            if getattr(exc, "kind", "") != "precondition":
                raise from_nextcloud(exc) from None
            if attempt == 2:
                raise refused(f"The event {uid} changed again while it was being written (someone else is "
                              "editing it). Call calendar_list_events to see its current state, then decide "
                              "with the user. Do not retry blindly.", status="conflict") from None
    raise AssertionError("unreachable")


def update(ctx: ServerContext, *, uid: str, calendar: str | None, title: str | None, start: str | None,
           end: str | None, location: str | None, description: str | None,
           repeat: str | None, attendees: list[str] | None) -> Any:
    """Patch the event `uid` (never rebuilt), SEQUENCE bumped, If-Match; a stale etag is retried once."""
    if all(v is None for v in (title, start, end, location, description, repeat, attendees)):
        raise misuse("Nothing to change: give at least one of title, start, end, location, description, repeat "
                     "or attendees. Do not retry unchanged.", status="no_change")
    people = check_emails(attendees)
    caldav = ctx.client().caldav

    def write(cal: CalendarRef, obj: Any) -> list[str]:
        current = event_summary(obj.ics, uid)
        own = zone_name(current["start"])
        hint = f"; this event's zone is {own}" if own else ""
        if start:
            lo, hi = times(start, end, zone_hint=hint)
        else:
            lo, hi = None, (parse_when(end, "end", zone_hint=hint) if end else None)
            if hi is not None and not isinstance(hi, dt.datetime):
                hi = hi + dt.timedelta(days=1)
        org_mail = event_people(obj.ics, uid)[0]
        fields = EventFields(title=title, start=lo, end=hi, location=location, description=description,
                             rrule=repeat, attendees=people,
                             organizer=organizer(ctx) if people and not org_mail else None)
        caldav.put_event(cal.id, patch_event(obj.ics, uid, fields), etag=obj.etag, object_name=obj.name)
        return fields.notes

    cal, obj, notes = _with_one_retry(ctx, uid, calendar, write)
    after = caldav.object_by_uid(cal.id, uid)
    summary = event_summary(after.ics if after else obj.ics, uid)
    out: dict[str, Any] = {"uid": uid, "calendar": cal.id, "title": summary["title"]}
    if summary["start"] is not None:
        out["start"] = iso_utc(summary["start"])
        if summary["end"] is not None:
            all_day = not isinstance(summary["start"], dt.datetime)
            out["end"] = iso_utc(summary["end"] - dt.timedelta(days=1) if all_day else summary["end"])
        if local_form(summary["start"]):
            out["local"] = local_form(summary["start"])
    if summary["repeats"]:
        out["repeats"] = True
    mails = event_people(after.ics if after else obj.ics, uid)[1]
    if mails:
        out["hint"] = "Nextcloud e-mails the attendees the change."
    out["warnings"] = notes
    return envelope(out)


def delete(ctx: ServerContext, *, uid: str, calendar: str | None) -> Any:
    """DELETE the event `uid` (the whole series) with If-Match; attendees get Nextcloud's cancellation."""
    caldav = ctx.client().caldav
    cal, obj, _ = _with_one_retry(ctx, uid, calendar,
                                  lambda c, o: caldav.delete_event(c.id, o.name, etag=o.etag))
    org_mail, mails = event_people(obj.ics, uid)
    summary = event_summary(obj.ics, uid)
    out: dict[str, Any] = {"uid": uid, "calendar": cal.id, "title": summary["title"], "deleted": True}
    if summary["repeats"]:
        out["series"] = True
    others = [m for m in mails if m.lower() != (org_mail or "").lower()]
    if others:
        me = (ctx.client().caldav.principal().email or "").lower()
        if org_mail and org_mail.lower() != me:
            out["hint"] = f"You were an attendee: Nextcloud tells the organizer ({org_mail}) you declined."
        else:
            out["cancelled"] = others
            out["hint"] = "Nextcloud e-mails these attendees a cancellation."
    return envelope(out)
