"""calendar_create_event, calendar_update_event, calendar_delete_event: the flows around CalDAV writes.

Create: PUT with If-None-Match. Update: REPORT by uid, patch, PUT with
If-Match; a stale etag re-reads and retries once, then reports. Delete:
REPORT by uid, DELETE with If-Match (the whole series); Nextcloud's
scheduling then sends the attendees a cancellation. With attendees, the
ORGANIZER is the account's own address from its calendar-user-address-set.
"""
from __future__ import annotations

import datetime as dt
import re
from zoneinfo import ZoneInfo
from typing import Any, Callable, TypeGuard

from mcp.types import CallToolResult

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import from_nextcloud, misuse, refused
from mcp_nextcloud.server.tools.calendar.common import (CalendarRef, calendars, default_calendar, iso_utc, local_form,
                                                   parse_when, pick_calendar, zone_name)
from mcp_nextcloud.server.tools.calendar.zones import LocalTimes, local_times, with_zone
from mcp_nextcloud.server.tools.people import lookup as directory
from mcp_nextcloud.server.tools.calendar.ics import EventFields, event_people, event_summary, new_event, patch_event
from mcp_nextcloud.server.tools.calendar.instance import cancel_occurrence, occurrence_summary, patch_occurrence


def _nc_error(exc: BaseException) -> TypeGuard[NextcloudError]:
    return isinstance(exc, NextcloudError)


def check_emails(emails: list[str] | None, field: str = "attendees") -> list[str] | None:
    """Attendee addresses, each exactly one addr-spec (a mailto: prefix is fine), de-duplicated; else a misuse."""
    if emails is None:
        return None
    plain = [e.strip().removeprefix("mailto:") if isinstance(e, str) else e for e in emails]
    return directory.addresses(field, plain, "contacts_search")


def check_known(ctx: ServerContext, mails: list[str] | None, typed: list[str] | None,
                already: list[str] | None = None) -> list[str]:
    """The attendees typed by the user that nobody knows (to be said); any other unknown address is refused.

    Known: already on the event, in the address books (accounts included), the account's own address, or
    suggested by Mail. The same rule as mail_compose (people.check_known).
    """
    typed_mails = directory.addresses("typedByUser", typed, "contacts_search")
    if not mails:
        return []
    known = {m.casefold() for m in already or []}
    book: dict[str, str | None] = {}

    def is_known(mail: str) -> bool:
        key = mail.casefold()
        if key in known:
            return True
        if not book:   # fetched once, and only when an address is not on the event already
            book.update(directory.directory_emails(ctx) or {"": None})
        own = (ctx.client().caldav.principal().email or "").casefold()
        return key in book or key == own or directory.mail_knows(ctx, mail)

    return directory.check_known(mails, typed_mails, is_known, "contacts_search")


def unverified_warning(unverified: list[str]) -> list[str]:
    return [f"Typed by the user, unknown to the contacts: {', '.join(unverified)}. They are invited; ask the "
            "user to check the spelling."] if unverified else []


def organizer(ctx: ServerContext) -> tuple[str, str]:
    """(e-mail, display name) from the account's calendar-user-address-set; refused when it has no e-mail."""
    principal = ctx.client().caldav.principal()
    if not principal.email:
        raise refused("This account has no e-mail address, so it cannot organize a meeting: invitations need "
                      "an organizer address (Nextcloud lists none in its calendar-user-address-set). Ask the "
                      "user to set an e-mail in Nextcloud's personal settings, or create the event without "
                      "attendees.", status=ToolStatus.NO_EMAIL)
    return principal.email, principal.display_name


def times(start: str, end: str | None, *, zone_hint: str = "", local: LocalTimes | None = None,
          ) -> tuple[dt.date | dt.datetime, dt.date | dt.datetime | None]:
    """Parsed start and end (a time without a zone in `local`'s); an all-day end is the last day (inclusive),
    stored as the day after."""
    lo = parse_when(start, "start", zone_hint=zone_hint, local=local)
    hi = parse_when(end, "end", zone_hint=zone_hint, local=local) if end else None
    if hi is not None and isinstance(lo, dt.datetime) != isinstance(hi, dt.datetime):
        raise misuse("start and end must both be dates (all day) or both date-times.",
                     status=ToolStatus.BAD_TIME)
    if hi is not None and not isinstance(hi, dt.datetime):
        hi = hi + dt.timedelta(days=1)
    if hi is not None and hi <= lo:
        raise misuse("end is before start. Give an end after start.", status=ToolStatus.BAD_TIME)
    return lo, hi


def _writable(cal: CalendarRef) -> CalendarRef:
    if not cal.writable or cal.app:
        raise misuse(f"Calendar {cal.id} ({cal.name}) is read-only. Use another calendar.",
                     status=ToolStatus.READ_ONLY)
    return cal


def target_calendar(ctx: ServerContext, calendar: str | None) -> tuple[CalendarRef, str | None]:
    """The writable calendar a new event goes to: the one named, else the default (made when there is none;
    the second item then says so)."""
    all_cals = calendars(ctx)
    if calendar:
        return _writable(pick_calendar(all_cals, calendar)), None
    return default_calendar(ctx, all_cals)


def create(ctx: ServerContext, *, title: str, start: str, end: str | None, calendar: str | None,
           location: str | None, description: str | None, repeat: str | None, attendees: list[str] | None,
           typed: list[str] | None = None, uid: str | None = None, checked: bool = False) -> dict[str, Any]:
    """PUT a new event; returns its handles and what the answer should say (used by meet_schedule too).

    `checked`: the caller already applied check_known to the attendees (meet_schedule).
    """
    local = local_times(ctx)
    lo, hi = times(start, end, local=local)
    if hi is None:
        hi = lo + (dt.timedelta(hours=1) if isinstance(lo, dt.datetime) else dt.timedelta(days=1))
    people = check_emails(attendees)
    unverified = [] if checked else check_known(ctx, people, typed)
    cal, made = target_calendar(ctx, calendar)
    fields = EventFields(title=title, start=lo, end=hi, location=location, description=description,
                         rrule=repeat, attendees=people, organizer=organizer(ctx) if people else None)
    uid, ics = new_event(fields, uid=uid)
    try:
        ctx.client().caldav.put_event(cal.id, ics)
    except Exception as exc:
        if _nc_error(exc):
            raise from_nextcloud(exc) from None
        raise
    out = _written(uid, cal, fields, people)
    if made:
        out["hint"] = " ".join(filter(None, [made, out.get("hint")]))
    if unverified or local.read:
        out["warnings"] = local.notes() + unverified_warning(unverified)
    return out


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
                 "it returns. Do not guess.", status=ToolStatus.UNKNOWN_EVENT)


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
            if getattr(exc, "code", None) is not ErrorCode.PRECONDITION:
                raise from_nextcloud(exc) from None
            if attempt == 2:
                raise refused(f"The event {uid} changed again while it was being written (someone else is "
                              "editing it). Call calendar_list_events to see its current state, then decide "
                              "with the user.", status=ToolStatus.CONFLICT) from None
    raise AssertionError("unreachable")


def _new_times(ctx: ServerContext, ics: str, uid: str, start: str | None, end: str | None,
               read_in: list[str]) -> tuple[Any, Any]:
    """The parsed new start and end (None: unchanged); a time without a zone is read in the event's own zone,
    else the account's (the note said goes to `read_in`)."""
    own = zone_name(event_summary(ics, uid)["start"])
    local = with_zone(ZoneInfo(own), "this event's time zone") if own else local_times(ctx)
    if start:
        lo, hi = times(start, end, local=local)
    else:
        lo, hi = None, parse_when(end, "end", local=local) if end else None
        if hi is not None and not isinstance(hi, dt.datetime):
            hi = hi + dt.timedelta(days=1)
    read_in[:] = local.notes()
    return lo, hi


def _event_answer(uid: str, cal: CalendarRef, summary: dict[str, Any]) -> dict[str, Any]:
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
    return out


def update(ctx: ServerContext, *, uid: str, calendar: str | None, title: str | None, start: str | None,
           end: str | None, location: str | None, description: str | None, repeat: str | None,
           attendees: list[str] | None, typed: list[str] | None = None,
           recurrence_id: str | None = None) -> CallToolResult:
    """Patch the event `uid` (never rebuilt), SEQUENCE bumped, If-Match; a stale etag is retried once.

    With `recurrence_id`, only that occurrence changes (an override); the series stays as it is.
    """
    if all(v is None for v in (title, start, end, location, description, repeat, attendees)):
        raise misuse("Nothing to change: give at least one of title, start, end, location, description, repeat "
                     "or attendees.", status=ToolStatus.NO_CHANGE)
    people = check_emails(attendees)
    rid = parse_when(recurrence_id, "recurrenceId") if recurrence_id else None
    caldav = ctx.client().caldav
    unverified: list[str] = []
    read_in: list[str] = []    # the note of a time read in a zone it did not name

    def write(cal: CalendarRef, obj: Any) -> list[str]:
        org_mail, current = event_people(obj.ics, uid)
        unverified[:] = check_known(ctx, people, typed, already=current + ([org_mail] if org_mail else []))
        lo, hi = _new_times(ctx, obj.ics, uid, start, end, read_in)
        fields = EventFields(title=title, start=lo, end=hi, location=location, description=description,
                             rrule=repeat, attendees=people,
                             organizer=organizer(ctx) if people and not org_mail else None)
        text = patch_event(obj.ics, uid, fields) if rid is None else patch_occurrence(obj.ics, uid, rid, fields)[0]
        caldav.put_event(cal.id, text, etag=obj.etag, object_name=obj.name)
        return fields.notes

    cal, obj, notes = _with_one_retry(ctx, uid, calendar, write)
    after = caldav.object_by_uid(cal.id, uid)
    stored = after.ics if after else obj.ics
    out = _event_answer(uid, cal, event_summary(stored, uid) if rid is None else occurrence_summary(stored, uid, rid))
    if rid is not None:
        out["recurrenceId"] = iso_utc(rid)
        notes.append("Only this occurrence changed; the rest of the series is as it was.")
    if event_people(stored, uid)[1]:
        out["hint"] = "Nextcloud e-mails the attendees the change."
    out["warnings"] = read_in[-1:] + notes + unverified_warning(unverified)
    return envelope(out)


# meet_schedule's events point at their Talk room (LOCATION: the room's /call/TOKEN link). A deleted meeting
# keeps its room, and says so: deleting a room deletes its chat and files for every participant, for good,
# while the event itself comes back from Nextcloud's calendar trash bin; a person expects neither to lose
# the conversation by cancelling a date nor to be left with a room nobody mentioned.
ROOM_KEPT = ("This meeting's Talk room (token {token}) was kept, with its chat: deleting a room deletes the "
             "conversation for every participant and cannot be undone. If the user no longer needs it, tell them "
             "to delete it in Talk.")
_ROOM_LINK = re.compile(r"/call/([A-Za-z0-9]{4,32})\b")


def _talk_room(location: str) -> str | None:
    """The Talk room token a meeting's location links to, or None."""
    found = _ROOM_LINK.search(location or "")
    return found.group(1) if found else None


def delete(ctx: ServerContext, *, uid: str, calendar: str | None,
           recurrence_id: str | None = None) -> CallToolResult:
    """DELETE the event `uid` (the whole series) with If-Match; attendees get Nextcloud's cancellation.

    With `recurrence_id`, only that occurrence is cancelled (an EXDATE on the series, written with If-Match).
    """
    caldav = ctx.client().caldav
    rid = parse_when(recurrence_id, "recurrenceId") if recurrence_id else None
    if rid is None:
        def write(c: CalendarRef, o: Any) -> Any:
            return caldav.delete_event(c.id, o.name, etag=o.etag)
    else:
        def write(c: CalendarRef, o: Any) -> Any:
            return caldav.put_event(c.id, cancel_occurrence(o.ics, uid, rid), etag=o.etag, object_name=o.name)
    cal, obj, _ = _with_one_retry(ctx, uid, calendar, write)
    org_mail, mails = event_people(obj.ics, uid)
    summary = event_summary(obj.ics, uid)
    out: dict[str, Any] = {"uid": uid, "calendar": cal.id, "title": summary["title"], "deleted": True}
    if rid is not None:
        out["recurrenceId"] = iso_utc(rid)
        out["warnings"] = ["Only this occurrence was cancelled; the rest of the series stays."]
    elif summary["repeats"]:
        out["series"] = True
    room = _talk_room(summary["location"]) if rid is None else None
    if room:
        out["room"] = room
        out["warnings"] = [ROOM_KEPT.format(token=room)]
    others = [m for m in mails if m.lower() != (org_mail or "").lower()]
    if others:
        me = (ctx.client().caldav.principal().email or "").lower()
        if org_mail and org_mail.lower() != me:
            out["hint"] = f"You were an attendee: Nextcloud tells the organizer ({org_mail}) you declined."
        else:
            out["cancelled"] = others
            out["hint"] = "Nextcloud e-mails these attendees a cancellation."
    return envelope(out)
