"""nextcloud_whoami says what day and time it is, in the account's time zone when Nextcloud knows it (issue 37).

Nextcloud 34's cloud/user answers the user's time zone preference ("timezone", "" when never set: seen on the
real server, tests/live/test_live_errors.py::test_live_whoami_says_the_time_and_the_zone); unknown is said so.
"""
from __future__ import annotations

import datetime as dt

from mcp_nextcloud.fixtures.emulator.state import User
from mcp_nextcloud.server.tools.account.whoami import clock


def _users(zone: str) -> list[User]:
    return [User("alice", "Alice Test", "alice@example.invalid", "alice-password", timezone=zone),
            User("bob", "Bob Builder", "bob@example.invalid", "bob-password"),
            User("admin", "admin", None, "admin-password", is_admin=True)]


def _near_now(text: str) -> bool:
    said = dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    return abs((dt.datetime.now(dt.timezone.utc) - said).total_seconds()) < 120


def test_whoami_gives_the_time_and_the_accounts_zone(pim_factory, ok):
    me = ok(pim_factory(users=_users("Europe/Paris")).call("nextcloud_whoami", {}))
    assert me["timeZone"] == "Europe/Paris" and _near_now(me["now"])
    assert me["localTime"].endswith(" Europe/Paris") and me["weekday"] in (
        "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
    assert "time zone is unknown" not in me.get("hint", "")


def test_an_unset_zone_is_said_as_unknown(pim_factory, ok):
    me = ok(pim_factory(users=_users("")).call("nextcloud_whoami", {}))
    assert "timeZone" not in me and "localTime" not in me and _near_now(me["now"])
    assert me["weekday"].endswith("(UTC)") and "time zone is unknown" in me["hint"]


def test_a_zone_this_machine_does_not_know_is_unknown(pim_factory, ok):
    me = ok(pim_factory(users=_users("Mars/Olympus")).call("nextcloud_whoami", {}))
    assert "timeZone" not in me and "time zone is unknown" in me["hint"]


def test_the_local_day_can_differ_from_utcs():
    late = dt.datetime(2026, 12, 4, 23, 30, tzinfo=dt.timezone.utc)     # a Friday in UTC, Saturday in Tokyo
    tokyo = clock("Asia/Tokyo", late)
    assert tokyo == {"now": "2026-12-04T23:30:00Z", "localTime": "2026-12-05T08:30 Asia/Tokyo",
                     "weekday": "Saturday"}
    assert clock(None, late)["weekday"] == "Friday (UTC)"
