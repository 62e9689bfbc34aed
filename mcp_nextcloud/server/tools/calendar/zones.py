"""Where a time written without a zone ("2026-12-08T10:00") is read: the account's zone, said in the answer.

Used by the calendar, tasks, meet and Deck (due) tools through calendar/common.parse_when.

The account's zone is Nextcloud's user setting (what nextcloud_whoami reports as timeZone), asked once per
context and minute and only when such a time is met. With none set, the command line (a person at their own
machine) reads it in the machine's zone; an agent's server refuses it with the fix, as before: the machine
the server runs on says nothing about where the person is. Every answer that read a time this way says in
which zone (`LocalTimes.notes`).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

if TYPE_CHECKING:
    from mcp_nextcloud.server.context import ServerContext

ACCOUNT = "the account's time zone in Nextcloud"
MACHINE = "this machine's time zone; none is set in Nextcloud"
ZONE_TTL_S = 60.0


class LocalTimes:
    """The zone for times written without one, found on first need (`find`), and the arguments read in it."""

    def __init__(self, find: Callable[[], tuple[ZoneInfo, str] | None]) -> None:
        self._find = find
        self._found: tuple[ZoneInfo, str] | None = None
        self._looked = False
        self.read: list[str] = []

    def zone_for(self, field: str) -> ZoneInfo | None:
        """The zone to read `field` in (recorded), or None when no zone is known."""
        if not self._looked:
            self._found, self._looked = self._find(), True
        if self._found is None:
            return None
        if field not in self.read:
            self.read.append(field)
        return self._found[0]

    def notes(self) -> list[str]:
        """What the answer says when a time was read in the local zone (nothing when none was)."""
        if not self.read or self._found is None:
            return []
        zone, source = self._found
        return [f"{' and '.join(self.read)} had no time zone, so it was read in {zone.key} ({source}); give Z, an "
                "offset or a zone name after the time for another zone."]


def local_times(ctx: ServerContext) -> LocalTimes:
    """The LocalTimes of one call: the event's own zone first where the caller knows one (see `with_zone`)."""
    return LocalTimes(lambda: account_zone(ctx))


def with_zone(zone: ZoneInfo, source: str) -> LocalTimes:
    """A LocalTimes with a known zone (an event's own, when it is updated)."""
    return LocalTimes(lambda: (zone, source))


def account_zone(ctx: ServerContext) -> tuple[ZoneInfo, str] | None:
    """The account's zone (cached a minute), else the machine's where the caller allows it (the CLI), else None."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    def ask() -> str | None:
        try:
            return ctx.client().ocs.current_user().timezone
        except NextcloudError:     # the tool's own request says what is wrong; here only no zone is known
            return None

    named = known_zone(ctx.cached("account-time-zone", ZONE_TTL_S, ask))
    if named is not None:
        return named, ACCOUNT
    machine = machine_zone() if ctx.call_settings.machine_zone else None
    return (machine, MACHINE) if machine is not None else None


def known_zone(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name`, or None when unset or not a zone this machine knows."""
    if not name:
        return None
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        return None


def machine_zone() -> ZoneInfo | None:
    """This machine's zone by its IANA name: $TZ, else where /etc/localtime points; None when unknown."""
    from mcp_nextcloud.environment import environ

    named = known_zone((environ().get("TZ") or "").lstrip(":"))
    if named is not None:
        return named
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return None
    _, found, name = target.partition("zoneinfo/")
    return known_zone(name) if found else None
