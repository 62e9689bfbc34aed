"""CalDAV: calendars of the account, events in a time range (with or without expansion), event CRUD.

Events come back as CalendarEvent objects parsed with `icalendar`; the
calendar's id and the event UID are the handles, never hrefs.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from typing import Callable
from urllib.parse import unquote

import icalendar

from . import paths
from .davxml import APPLE, CALDAV, DAV, DavResponse, escape, parse_multistatus, q
from .errors import ErrorCode, NextcloudError, error_for
from .http import Transport

SOURCE = "caldav"
# Characters XML 1.0 forbids. A server that stored one in an event (Sabre drops them from PUTs, but data
# older than that, or another server, may hold one) writes it raw into the REPORT, which no XML parser reads:
# without this, one event would hide its whole calendar.
_NOT_XML = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_CAL_NS = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:x1="http://apple.com/ns/ical/"'


@dataclass(frozen=True)
class Calendar:
    id: str                      # the collection name, e.g. "personal"
    name: str                    # display name
    color: str | None = None
    components: list[str] = field(default_factory=list)   # VEVENT, VTODO
    writable: bool = True


@dataclass(frozen=True)
class CalendarEvent:
    uid: str
    calendar: str
    summary: str
    start: datetime | date | None
    end: datetime | date | None
    all_day: bool = False
    location: str = ""
    description: str = ""
    recurrence_id: str | None = None
    rrule: str | None = None
    organizer: str | None = None
    attendees: list[str] = field(default_factory=list)
    etag: str = ""
    object_name: str = ""        # the object's name in its calendar (e.g. "uid.ics"), for writes


@dataclass(frozen=True)
class CalendarObject:
    """One stored calendar object as the server holds it: its name, etag and iCalendar text."""

    calendar: str
    name: str                    # e.g. "uid.ics" (server-generated for scheduling copies)
    etag: str
    ics: str


@dataclass(frozen=True)
class Principal:
    """The account as CalDAV scheduling sees it: display name and calendar-user addresses."""

    display_name: str
    addresses: list[str]         # "mailto:..." first when the account has an e-mail, then the principal URL

    @property
    def email(self) -> str | None:
        """The account's scheduling e-mail (from calendar-user-address-set), or None when it has none."""
        for addr in self.addresses:
            if addr.lower().startswith("mailto:"):
                return addr[7:]
        return None


def _utc(value: datetime | date) -> str:
    """'20261201T000000Z' as CalDAV time-range wants it."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    else:
        dt = datetime(value.year, value.month, value.day, tzinfo=timezone.utc)
    return dt.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _addr(value: object) -> str:
    return str(value).removeprefix("mailto:").removeprefix("MAILTO:")


def events_from_ics(ics: str, calendar: str, etag: str = "", object_name: str = "") -> list[CalendarEvent]:
    """Every VEVENT of an iCalendar text (masters and expanded instances alike)."""
    try:
        cal = icalendar.Calendar.from_ical(ics)
    except ValueError:
        raise error_for(SOURCE, None, condition="invalid_response", path=calendar, detail="invalid iCalendar") from None
    out = []
    for ev in cal.walk("VEVENT"):
        start = ev.decoded("DTSTART") if ev.get("DTSTART") is not None else None
        end = ev.decoded("DTEND") if ev.get("DTEND") is not None else None
        if end is None and start is not None and ev.get("DURATION") is not None:
            end = start + ev.decoded("DURATION")
        rid = ev.get("RECURRENCE-ID")
        rrule = ev.get("RRULE")
        attendees = ev.get("ATTENDEE") or []
        if not isinstance(attendees, list):
            attendees = [attendees]
        out.append(CalendarEvent(
            uid=str(ev.get("UID") or ""), calendar=calendar, summary=str(ev.get("SUMMARY") or ""),
            start=start, end=end, all_day=isinstance(start, date) and not isinstance(start, datetime),
            location=str(ev.get("LOCATION") or ""), description=str(ev.get("DESCRIPTION") or ""),
            recurrence_id=rid.to_ical().decode() if rid is not None else None,
            rrule=rrule.to_ical().decode() if rrule is not None else None,
            organizer=_addr(ev.get("ORGANIZER")) if ev.get("ORGANIZER") else None,
            attendees=[_addr(a) for a in attendees], etag=etag, object_name=object_name))
    return out


def calendars_from_multistatus(body: bytes | str) -> list[Calendar]:
    """Calendars (resourcetype cal:calendar) of a Depth 1 PROPFIND on the calendar home."""
    out = []
    for r in parse_multistatus(body, source=SOURCE):
        rtype = r.props.get(q(DAV, "resourcetype"))
        if rtype is None or rtype.find(q(CALDAV, "calendar")) is None:
            continue
        cid = unquote(r.href.rstrip("/").rsplit("/", 1)[-1])
        comps_el = r.props.get(q(CALDAV, "supported-calendar-component-set"))
        comps = [c.get("name", "") for c in comps_el] if comps_el is not None else []
        privs = r.props.get(q(DAV, "current-user-privilege-set"))
        writable = privs is None or privs.find(f".//{q(DAV, 'write')}") is not None \
            or privs.find(f".//{q(DAV, 'all')}") is not None
        out.append(Calendar(id=cid, name=r.text(DAV, "displayname") or cid,
                            color=r.text(APPLE, "calendar-color"), components=comps, writable=writable))
    return out


def _multistatus(body: bytes, calendar: str) -> list[DavResponse]:
    """The REPORT's responses; characters XML forbids are replaced by U+FFFD first (only when there are some)."""
    try:
        return parse_multistatus(body, source=SOURCE, path=calendar)
    except NextcloudError:
        if not _NOT_XML.search(body):
            raise
        return parse_multistatus(_NOT_XML.sub("\ufffd".encode(), body), source=SOURCE, path=calendar)


class CalDAV:
    """Calendars of one account."""

    def __init__(self, transport: Transport, user_id: Callable[[], str]) -> None:
        self._t = transport
        self._user_id = user_id

    def _home(self) -> str:
        return "/remote.php/dav/calendars" + paths.encode(self._user_id()) + "/"

    def _cal_url(self, calendar: str) -> str:
        if not calendar or "/" in calendar or calendar in (".", ".."):
            raise error_for(SOURCE, None, condition="bad_path", path=calendar)
        return self._home() + paths.encode(calendar)[1:] + "/"

    def calendars(self) -> list[Calendar]:
        """Event/task calendars in the home (inbox, outbox and trash bin left out)."""
        body = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_CAL_NS}><d:prop><d:displayname/>'
                "<d:resourcetype/><c:supported-calendar-component-set/><x1:calendar-color/>"
                "<d:current-user-privilege-set/></d:prop></d:propfind>")
        resp = self._t.request("PROPFIND", self._home(), source=SOURCE, path="calendars", dav=True,
                               headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                               content=body.encode(), ok=(207,))
        return calendars_from_multistatus(resp.content)

    def make_calendar(self, calendar: str, display_name: str, components: tuple[str, ...],
                      color: str | None = None) -> None:
        """Create the calendar `calendar` as Nextcloud's Calendar and Tasks apps do: an extended MKCOL (RFC 5689,
        cdav-library's createCalendarCollection) with its name, colour and component set. 201 on Nextcloud 34;
        a name already taken answers 405 (code EXISTS)."""
        comps = "".join(f'<c:comp name="{escape(c)}"/>' for c in components)
        colour = f"<x1:calendar-color>{escape(color)}</x1:calendar-color>" if color else ""
        body = (f'<?xml version="1.0" encoding="UTF-8"?><d:mkcol {_CAL_NS} xmlns:oc="http://owncloud.org/ns">'
                "<d:set><d:prop><d:resourcetype><d:collection/><c:calendar/></d:resourcetype>"
                f"<d:displayname>{escape(display_name)}</d:displayname>{colour}"
                "<oc:calendar-enabled>1</oc:calendar-enabled>"
                f"<c:supported-calendar-component-set>{comps}</c:supported-calendar-component-set>"
                "</d:prop></d:set></d:mkcol>")
        self._t.request("MKCOL", self._cal_url(calendar), source=SOURCE, path=calendar, dav=True,
                        headers={"Content-Type": "application/xml; charset=utf-8"}, content=body.encode(),
                        ok=(201,), no_retry=(405,))

    def principal(self) -> Principal:
        """Display name and calendar-user-address-set of the account (PROPFIND Depth 0 on its principal)."""
        url = "/remote.php/dav/principals/users" + paths.encode(self._user_id()) + "/"
        body = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_CAL_NS}><d:prop><d:displayname/>'
                "<c:calendar-user-address-set/></d:prop></d:propfind>")
        resp = self._t.request("PROPFIND", url, source=SOURCE, path="principal", dav=True,
                               headers={"Depth": "0", "Content-Type": "application/xml; charset=utf-8"},
                               content=body.encode(), ok=(207,))
        found = parse_multistatus(resp.content, source=SOURCE)
        if not found:
            return Principal(display_name=self._user_id(), addresses=[])
        r = found[0]
        el = r.props.get(q(CALDAV, "calendar-user-address-set"))
        hrefs = [(h.text or "").strip() for h in el.iter(q(DAV, "href"))] if el is not None else []
        return Principal(display_name=r.text(DAV, "displayname") or self._user_id(), addresses=[h for h in hrefs if h])

    def query(self, calendar: str, comp_filter: str, *, expand: tuple[str, str] | None = None) -> list[CalendarObject]:
        """One calendar-query REPORT: the stored objects matching `comp_filter` (raw, unparsed)."""
        data = "<c:calendar-data/>" if expand is None else \
            f'<c:calendar-data><c:expand start="{expand[0]}" end="{expand[1]}"/></c:calendar-data>'
        body = (f'<?xml version="1.0" encoding="UTF-8"?><c:calendar-query {_CAL_NS}><d:prop><d:getetag/>{data}'
                f'</d:prop><c:filter><c:comp-filter name="VCALENDAR">{comp_filter}</c:comp-filter></c:filter>'
                "</c:calendar-query>")
        resp = self._t.request("REPORT", self._cal_url(calendar), source=SOURCE, path=calendar, dav=True,
                               headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                               content=body.encode(), ok=(207,))
        out: list[CalendarObject] = []
        for r in _multistatus(resp.content, calendar):
            ics = r.text(CALDAV, "calendar-data")
            if ics:
                out.append(CalendarObject(calendar, unquote(r.href.rstrip("/").rsplit("/", 1)[-1]),
                                          (r.text(DAV, "getetag") or "").strip('"'), ics))
        return out

    def objects_between(self, calendar: str, start: datetime | date, end: datetime | date, *,
                        component: str = "VEVENT") -> list[CalendarObject]:
        """Objects with a `component` overlapping [start, end): recurring masters once, with RRULE and overrides."""
        flt = (f'<c:comp-filter name="{component}"><c:time-range start="{_utc(start)}" end="{_utc(end)}"/>'
               "</c:comp-filter>")
        return self.query(calendar, flt)

    def object_by_uid(self, calendar: str, uid: str) -> CalendarObject | None:
        """The stored object holding the event `uid` (master and overrides together), or None."""
        flt = ('<c:comp-filter name="VEVENT"><c:prop-filter name="UID">'
               f'<c:text-match collation="i;octet" match-type="equals">{escape(uid)}</c:text-match>'
               "</c:prop-filter></c:comp-filter>")
        for obj in self.query(calendar, flt):
            if any(ev.uid == uid for ev in events_from_ics(obj.ics, calendar)):
                return obj
        return None

    def _query(self, calendar: str, comp_filter: str, *, expand: tuple[str, str] | None = None) -> list[CalendarEvent]:
        out: list[CalendarEvent] = []
        for obj in self.query(calendar, comp_filter, expand=expand):
            out.extend(events_from_ics(obj.ics, calendar, obj.etag, obj.name))
        return out

    def events(self, calendar: str, start: datetime | date, end: datetime | date, *,
               expand: bool = False) -> list[CalendarEvent]:
        """Events overlapping [start, end). expand=True returns each occurrence of recurring events (in UTC)."""
        s, e = _utc(start), _utc(end)
        flt = f'<c:comp-filter name="VEVENT"><c:time-range start="{s}" end="{e}"/></c:comp-filter>'
        events = self._query(calendar, flt, expand=(s, e) if expand else None)
        return sorted(events, key=lambda ev: _utc(ev.start) if ev.start else "")

    def get_event(self, calendar: str, uid: str) -> CalendarEvent:
        """The event (master) with this UID; NextcloudError not_found when absent."""
        flt = ('<c:comp-filter name="VEVENT"><c:prop-filter name="UID">'
               f'<c:text-match collation="i;octet" match-type="equals">{escape(uid)}</c:text-match>'
               "</c:prop-filter></c:comp-filter>")
        found = [ev for ev in self._query(calendar, flt) if ev.uid == uid]
        if not found:
            raise NextcloudError(ErrorCode.NOT_FOUND, f"No event with uid {uid} in calendar {calendar}. "
                                 "List events in a time range to find its uid; do not guess.", status=404)
        masters = [ev for ev in found if ev.recurrence_id is None]
        return (masters or found)[0]

    def put_event(self, calendar: str, ics: str, *, etag: str | None = None,
                  object_name: str | None = None) -> str:
        """Create (no etag: If-None-Match *) or replace (If-Match etag) an event; returns the new etag or ''."""
        events = events_from_ics(ics, calendar)
        if not events or not events[0].uid:
            raise NextcloudError(ErrorCode.BAD_REQUEST, "The iCalendar text has no VEVENT with a UID. "
                                 "Add a UID and try again.")
        name = object_name or f"{events[0].uid}.ics"
        headers = {"Content-Type": "text/calendar; charset=utf-8"}
        if etag:
            headers["If-Match"] = etag if etag.startswith('"') else f'"{etag}"'
        else:
            headers["If-None-Match"] = "*"
        url = self._cal_url(calendar) + paths.encode(name)[1:]
        resp = self._t.request("PUT", url, source=SOURCE, path=f"{calendar}/{events[0].uid}", dav=True,
                               headers=headers, content=ics.encode("utf-8"),
                               conditions={} if etag else {412: "exists"})
        # A PUT the server modified (scheduling) answers without an ETag: re-read if needed.
        return (resp.headers.get("etag") or "").strip('"')

    def delete_event(self, calendar: str, object_name: str, *, etag: str | None = None) -> None:
        """Delete an event object (If-Match etag when given)."""
        headers = {}
        if etag:
            headers["If-Match"] = etag if etag.startswith('"') else f'"{etag}"'
        url = self._cal_url(calendar) + paths.encode(object_name)[1:]
        self._t.request("DELETE", url, source=SOURCE, path=f"{calendar}/{object_name}", dav=True, headers=headers)

    # -- tasks (VTODO), as the Tasks app stores them: one VTODO per object -------------------
    def todos(self, calendar: str, *, open_only: bool = False) -> list[CalendarObject]:
        """The stored objects holding a VTODO in `calendar` (open_only: without COMPLETED), unparsed."""
        return self.query(calendar, _todo_filter(open_only=open_only))

    def todo_by_uid(self, calendar: str, uid: str) -> CalendarObject | None:
        """The stored object holding the task `uid`, or None."""
        found = self.query(calendar, _todo_filter(uid=uid))
        return found[0] if found else None

    def put_todo(self, calendar: str, uid: str, ics: str, *, etag: str | None = None,
                 object_name: str | None = None) -> str:
        """Create (If-None-Match *) or replace (If-Match) a task object; returns the new etag or ''.

        A calendar whose supported-calendar-component-set lacks VTODO answers 403
        (Sabre's InvalidComponentType): kind "forbidden", which callers explain.
        """
        headers = {"Content-Type": "text/calendar; charset=utf-8"}
        if etag:
            headers["If-Match"] = etag if etag.startswith('"') else f'"{etag}"'
        else:
            headers["If-None-Match"] = "*"
        url = self._cal_url(calendar) + paths.encode(object_name or f"{uid}.ics")[1:]
        resp = self._t.request("PUT", url, source=SOURCE, path=f"{calendar}/{uid}", dav=True, headers=headers,
                               content=ics.encode("utf-8"), conditions={} if etag else {412: "exists"})
        return (resp.headers.get("etag") or "").strip('"')


# -- the task filters of CalDAV.todos / todo_by_uid --------------------------------------------------------
def _todo_filter(uid: str | None = None, open_only: bool = False) -> str:
    inner = ""
    if uid is not None:
        inner += ('<c:prop-filter name="UID"><c:text-match collation="i;octet" match-type="equals">'
                  f"{escape(uid)}</c:text-match></c:prop-filter>")
    if open_only:   # Nextcloud evaluates is-not-defined on the server (seen on 34): completed tasks stay there
        inner += '<c:prop-filter name="COMPLETED"><c:is-not-defined/></c:prop-filter>'
    return f'<c:comp-filter name="VTODO">{inner}</c:comp-filter>'
