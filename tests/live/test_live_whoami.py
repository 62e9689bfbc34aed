"""nextcloud_whoami on a real Nextcloud 34 says the time and the account's time zone (issue 37).

The zone is the user's core/timezone preference, which cloud/user answers as "timezone" ("" when never set:
seen on this server for a new account). It is set here with occ, as the web UI sets it at a login.
"""
from __future__ import annotations

import datetime as dt

import httpx


def _own_timezone(account) -> str:
    with httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60,
                      headers={"OCS-APIRequest": "true"}) as http:
        return http.get("/ocs/v2.php/cloud/user", params={"format": "json"}).json()["ocs"]["data"]["timezone"]


def test_live_whoami_says_the_time_and_the_zone(throwaway_account, tools_factory, server_admin):
    plain = throwaway_account(first_login=True)
    assert _own_timezone(plain) == ""                                   # never set: unknown
    me = tools_factory(account=plain).ok("nextcloud_whoami", {})
    said = dt.datetime.strptime(me["now"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    assert abs((dt.datetime.now(dt.timezone.utc) - said).total_seconds()) < 300
    assert "timeZone" not in me and "time zone is unknown" in me["hint"] and me["weekday"].endswith("(UTC)")
    tokyo = throwaway_account(first_login=True)
    server_admin.occ("user:setting", tokyo.user, "core", "timezone", "Asia/Tokyo")
    assert _own_timezone(tokyo) == "Asia/Tokyo"
    me = tools_factory(account=tokyo).ok("nextcloud_whoami", {})
    assert me["timeZone"] == "Asia/Tokyo" and me["localTime"].endswith(" Asia/Tokyo")
    local = dt.datetime.now(dt.timezone(dt.timedelta(hours=9)))
    assert me["weekday"] in (local.strftime("%A"), (local - dt.timedelta(minutes=5)).strftime("%A"))
