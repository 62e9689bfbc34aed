"""What a new account lacks, and the calendar a tool makes for it the way Nextcloud's own apps do (one owner).

Nextcloud makes a new account's "Personal" calendar and "Contacts" address
book at its first login, and only if that login is the account's very first
request: an account first used with an app password never gets them, not
even from a later browser login (seen on Nextcloud 34). So advice to "log in
once" cannot help. Instead, when the person first asks for an event or a
task and no calendar takes it, the tool makes one as the app would on first
use, and its answer says so:

- the Calendar app, finding no writable calendar, makes "Personal" (events);
- the Tasks app, finding no calendar that takes tasks, makes "Tasks" (tasks).

Both send cdav-library's createCalendarCollection: an extended MKCOL with the
display name, a colour, calendar-enabled and the component set. The id is
the display name made a URI ("personal", "tasks"; "tasks-1" when taken).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Protocol, Sequence

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

# Nextcloud's default theme colour: the Tasks app's colour without a theme (the Calendar app derives one
# from the name; any colour the person can change later does).
COLOR = "#0082c9"


@dataclass(frozen=True)
class Starter:
    """The calendar one app makes on first use: its display name, the one component it takes, the app."""

    name: str
    component: str
    app: str
    kind: str          # how the answer names it: "calendar" (events) or "task list"

    def made(self, cal_id: str) -> str:
        """What the answer says after making it."""
        return (f"This account had no {self.kind} for {'events' if self.component == 'VEVENT' else 'tasks'}, so "
                f"{self.name!r} (id {cal_id}) was created, as the Nextcloud {self.app} app does on first use; "
                "it is used from now on.")

    def missing(self, tool: str) -> str:
        """What a read says while there is none yet."""
        return (f"This account has no {self.kind} for {'events' if self.component == 'VEVENT' else 'tasks'} yet "
                f"(Nextcloud makes none for an account first used with an app password). {tool} creates "
                f"{self.name!r} with the first one, as the Nextcloud {self.app} app does.")


EVENTS = Starter("Personal", "VEVENT", "Calendar", "calendar")
TASKS = Starter("Tasks", "VTODO", "Tasks", "task list")

NO_CALENDAR_YET = EVENTS.missing("calendar_create_event")

NO_ADDRESS_BOOK_YET = ("This account has no address book of its own (Nextcloud makes \"Contacts\" only at an "
                       "account's very first login, and this account's first request used an app password), so "
                       "only the account directory and the server's own books were searched.")


class _ListedCalendar(Protocol):
    """What has_event_calendar reads of a calendar (calendar/common.py's CalendarRef, which imports this module)."""

    @property
    def app(self) -> bool: ...

    @property
    def components(self) -> Sequence[str]: ...


def has_event_calendar(calendars: Iterable[_ListedCalendar]) -> bool:
    """Any calendar of the account's own that takes events (app calendars, e.g. Deck's, do not count)."""
    return any(not c.app and "VEVENT" in c.components for c in calendars)


def free_id(name: str, taken: Iterable[str]) -> str:
    """The display name as a calendar URI, as cdav-library makes it: lower case, '-' for the rest, a number
    added while the id is taken ("tasks", "tasks-1")."""
    base = re.sub(r"[^a-z0-9]+", "-", name.casefold()).strip("-") or "calendar"
    used = {t.casefold() for t in taken}
    out, n = base, 0
    while out in used:
        n += 1
        out = f"{base}-{n}"
    return out


def make(caldav: Any, starter: Starter, taken: Iterable[str]) -> str:
    """Create the starter calendar; its id. Made at the same moment by another client (405): that one is
    used when it takes the component (the caller re-reads); any other failure is raised."""
    cal_id = free_id(starter.name, taken)
    try:
        caldav.make_calendar(cal_id, starter.name, (starter.component,), color=COLOR)
    except NextcloudError as exc:
        if exc.code is not ErrorCode.EXISTS:
            raise
        found = [c for c in caldav.calendars() if c.id == cal_id and starter.component in (c.components or ())]
        if not found:
            raise
    return cal_id
