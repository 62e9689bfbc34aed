"""What the calendar tools share: reading times the model gives, writing times it reads, finding calendars and events.

Times in: a date ("2026-12-24", all-day), or a date-time with Z or an offset,
or with an IANA zone name after a space ("2026-12-10T14:00 Europe/Paris",
which also keeps the event in that zone); a space between the date and the
time is read as the T. A time without a zone is read in the account's zone
(calendar/zones.py: Nextcloud's user setting, else the machine's at the
command line) and the answer says so; with none known it is refused with the
fix: guessing the zone is how meetings end up an hour off. Every instant must lie in [EARLIEST, LATEST): outside
it a time is a typing slip, and datetime arithmetic near years 1 and 9999
overflows. Times out: UTC with minute precision ("2026-12-07T08:30Z"), which
the tools accept back. The calendar, meet and Deck tools all read times here.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp_nextcloud.nextcloud.errors import NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import from_nextcloud, misuse
from mcp_nextcloud.server.tools.account import first_login
from mcp_nextcloud.server.tools.calendar.zones import LocalTimes

# Deck's per-board calendars ("app-generated--deck--board-4"): the cards of a board, not events of the person.
APP_CALENDAR_PREFIX = "app-generated--"
UTC = dt.timezone.utc
# The instants the tools accept (documented in README): wide enough for history and plans, far from the
# datetime limits where "+1 hour" or a zone conversion overflows.
EARLIEST = dt.datetime(1900, 1, 1, tzinfo=UTC)
LATEST = dt.datetime(2200, 1, 1, tzinfo=UTC)
RANGE_TEXT = "1900-01-01 to 2199-12-31 (UTC)"
# "2026-12-08 10:00", "2026-12-08 10:00:30+01:00": a date, a space, a time (the space stands for the T).
_SPACED_TIME = re.compile(r"^(\d{4}-\d{2}-\d{2}) +(\d{1,2}:\d{2}\S*)(.*)$")


def zone(name: str, field: str = "") -> ZoneInfo:
    """The IANA zone `name`; an unknown name is a misuse naming the argument and examples."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        named = f"{field}: time zone" if field else "Time zone"
        raise misuse(f"{named} {name!r} is not an IANA name. Use one such as Europe/Paris, America/New_York "
                     "or UTC.", status=ToolStatus.BAD_TIME_ZONE) from None


def split_zone(value: str) -> tuple[str, ZoneInfo | None]:
    """'2026-12-10T14:00 Europe/Paris' -> ('2026-12-10T14:00', Europe/Paris); no zone -> (text, None).

    '2026-12-10 14:00 Europe/Paris' is the same: the space between date and time is the T.
    """
    text, rest = _split(value)
    return text, (zone(rest) if rest else None)


def _split(value: str) -> tuple[str, str]:
    """(the date or date-time text, the zone name after it or "")."""
    stripped = (value or "").strip()
    spaced = _SPACED_TIME.match(stripped)
    if spaced:
        stripped = f"{spaced.group(1)}T{spaced.group(2)}{spaced.group(3)}"
    text, _, rest = stripped.partition(" ")
    return text, rest.strip()


def in_range(when: dt.date | dt.datetime, field: str, value: str) -> None:
    """Refuse an instant outside [EARLIEST, LATEST) naming the argument and the range."""
    try:
        instant = as_utc(when)
        inside = EARLIEST <= instant < LATEST
    except (OverflowError, ValueError):
        inside = False
    if not inside:
        raise misuse(f"{field} {value!r} is outside the times these tools accept ({RANGE_TEXT}). Check the "
                     "year.", status=ToolStatus.TIME_OUT_OF_RANGE)


def parse_when(value: str, field: str, *, zone_hint: str = "", local: LocalTimes | None = None,
               ) -> dt.date | dt.datetime:
    """A date (all day) or an aware date-time; a naive time without a zone name is read in `local`'s zone (the
    account's), and refused with the fix when none is known.

    '2026-12-10T14:00 Europe/Paris' is 14:00 in Paris, kept in that zone;
    '2026-12-10T13:00Z Europe/Paris' is that instant, kept in Paris time.
    """
    text, zone_text = _split(value)
    try:
        if len(text) == 10:
            day = dt.date.fromisoformat(text)
            in_range(day, field, value)
            return day
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise misuse(f"{field} {value!r} is not a date or date-time. Use 2026-12-24 (all day), "
                     "2026-12-10T14:00Z (UTC) or 2026-12-10T14:00 Europe/Paris.",
                     status=ToolStatus.BAD_TIME) from None
    tz = zone(zone_text, field) if zone_text else None
    if when.tzinfo is None and tz is None and local is not None:
        tz = local.zone_for(field)
    if when.tzinfo is None and tz is None:
        unset = "; this account has no time zone set in Nextcloud" if local else ""
        raise misuse(f"{field} {value!r} has no time zone, so it could be any of 24 instants. Add Z for UTC "
                     f"({text}Z), an offset ({text}+01:00) or a zone name after a space ({text} Europe/Paris)"
                     f"{zone_hint}{unset}.", status=ToolStatus.NAIVE_TIME)
    aware = when.replace(tzinfo=tz) if when.tzinfo is None else when
    in_range(aware, field, value)
    return aware.astimezone(tz) if tz and when.tzinfo is not None else aware


def parse_instant(value: str, field: str, local: LocalTimes | None = None) -> dt.datetime:
    """An instant in UTC (Deck due dates): a date is its midnight UTC; the same forms as parse_when."""
    return as_utc(parse_when(value, field, local=local))


def bound(value: str, field: str, local: LocalTimes | None = None) -> dt.datetime:
    """A window bound as an instant: a date is its midnight (in the zone named after it, else UTC)."""
    when = parse_when(value, field, local=local)
    if isinstance(when, dt.datetime):
        return when.astimezone(UTC)
    tz = split_zone(value)[1] or UTC
    return dt.datetime(when.year, when.month, when.day, tzinfo=tz).astimezone(UTC)


def as_utc(value: dt.date | dt.datetime) -> dt.datetime:
    """An instant in UTC; a date is its midnight UTC (window bounds)."""
    if isinstance(value, dt.datetime):
        return value.astimezone(UTC)
    return dt.datetime(value.year, value.month, value.day, tzinfo=UTC)


def iso_utc(value: dt.date | dt.datetime) -> str:
    """'2026-12-07T08:30Z' (seconds only when not zero), or '2026-12-24' for a date."""
    if not isinstance(value, dt.datetime):
        return value.isoformat()
    utc = value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%SZ" if utc.second else "%Y-%m-%dT%H:%MZ")


def zone_name(value: Any) -> str | None:
    """The IANA name of an aware datetime's zone ("Europe/Paris"); None for UTC, floating times and dates."""
    if not isinstance(value, dt.datetime) or value.tzinfo is None:
        return None
    key = getattr(value.tzinfo, "key", None) or getattr(value.tzinfo, "zone", None)
    # A fixed offset has no name worth keeping: the UTC time says it all.
    return None if not key or key in ("UTC", "Etc/UTC", "GMT", "Z") else str(key)


def local_form(value: Any) -> str | None:
    """'2026-12-07T09:30 Europe/Berlin': a zoned time as its own wall clock and zone (what the tools accept)."""
    tz = zone_name(value)
    return f"{value.replace(tzinfo=None).isoformat(timespec='minutes')} {tz}" if tz else None


@dataclass(frozen=True)
class CalendarRef:
    """A calendar as the tools name it: its id (what `calendar` arguments take) and display name."""

    id: str
    name: str
    writable: bool
    components: tuple[str, ...]

    @property
    def app(self) -> bool:
        return self.id.startswith(APP_CALENDAR_PREFIX)


def calendars(ctx: ServerContext) -> list[CalendarRef]:
    """The account's calendars (one PROPFIND), app-generated ones included; callers filter."""
    try:
        found = ctx.client().caldav.calendars()
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None
    return [CalendarRef(c.id, c.name, c.writable, tuple(c.components or ("VEVENT",))) for c in found]


def pick_calendar(all_cals: list[CalendarRef], wanted: str, field: str = "calendar") -> CalendarRef:
    """The calendar whose id or display name is `wanted` (case-insensitive); else a misuse listing the ids."""
    key = wanted.strip().casefold()
    for cal in all_cals:
        if cal.id.casefold() == key or cal.name.casefold() == key:
            return cal
    known = ", ".join(f"{c.id} ({c.name})" for c in all_cals if not c.app) or "none"
    raise misuse(f"{field}: no calendar {wanted!r}. Calendars: {known}. Use one of these ids.",
                 status=ToolStatus.UNKNOWN_CALENDAR)


def default_calendar(ctx: ServerContext, all_cals: list[CalendarRef]) -> tuple[CalendarRef, str | None]:
    """Where a new event goes when no calendar is named: "personal", else the first writable event calendar;
    with none, "Personal" is made as the Calendar app makes it (the note says so)."""
    usable = [c for c in all_cals if c.writable and not c.app and "VEVENT" in c.components]
    if usable:
        return next((c for c in usable if c.id == "personal"), usable[0]), None
    made = make_starter(ctx, first_login.EVENTS, all_cals)
    return made, first_login.EVENTS.made(made.id)


def make_starter(ctx: ServerContext, starter: first_login.Starter, all_cals: list[CalendarRef]) -> CalendarRef:
    """Create the calendar a Nextcloud app makes on first use (server/tools/account/first_login.py)."""
    try:
        cal_id = first_login.make(ctx.client().caldav, starter, [c.id for c in all_cals])
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None
    return CalendarRef(cal_id, starter.name, True, (starter.component,))
