"""A new account without its first login, on the real server: no calendar and no address book yet, said so.

The account is made with occ for the test (user:add, then an app password,
never a password login) and deleted at the end. The same account after one
password request (the first login) has its Personal calendar.
"""
from __future__ import annotations

import httpx


def _calendars(account) -> list[str]:
    import xml.etree.ElementTree as ET

    with httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60) as http:
        resp = http.request("PROPFIND", f"/remote.php/dav/calendars/{account.user}/", headers={"Depth": "1"})
    assert resp.status_code == 207
    return [(r.findtext("{DAV:}href") or "").rstrip("/").rsplit("/", 1)[-1]
            for r in ET.fromstring(resp.content).iter("{DAV:}response")
            if r.find(".//{urn:ietf:params:xml:ns:caldav}calendar") is not None]


def test_live_an_account_without_a_first_login_is_told_to_log_in_once(throwaway_account, tools_factory):
    newbie = throwaway_account(first_login=False)
    assert _calendars(newbie) == []                                   # the server's own state, read plainly
    tools = tools_factory(account=newbie)
    listed = tools.ok("calendar_list_events", {"start": "2030-03-03", "end": "2030-03-04"})
    assert listed["events"] == [] and "no calendar yet" in listed["hint"] and "browser" in listed["hint"]
    made = tools.error("calendar_create_event", {"title": "x", "start": "2030-03-03T10:00 Europe/Paris"})
    assert "no calendar yet" in made and "first login" in made
    assert _calendars(newbie) == []                                   # nothing was made behind the user's back
    people = tools.ok("contacts_search", {"query": "elodie"})
    assert any("no address book of its own yet" in w for w in people["warnings"])


def test_live_after_the_first_login_the_account_has_its_calendar(throwaway_account, tools_factory):
    seasoned = throwaway_account(first_login=True)
    assert "personal" in _calendars(seasoned)
    listed = tools_factory(account=seasoned).ok("calendar_list_events", {"start": "2030-03-03", "end": "2030-03-04"})
    assert "personal" in listed["calendars"] and "no calendar yet" not in str(listed)


def test_live_a_meeting_without_a_calendar_says_why_and_leaves_no_room(throwaway_account, tools_factory,
                                                                       live_member):
    newbie = throwaway_account(first_login=False)
    title = "Kick-off without a calendar"
    text = tools_factory(account=newbie).error("meet_schedule", {"title": title,
                                                                  "start": "2030-03-03T10:00 Europe/Paris",
                                                                  "participants": [live_member.user]})
    assert "no calendar yet" in text and "browser" in text
    with httpx.Client(base_url=newbie.url, auth=(newbie.user, newbie.app_password), timeout=60,
                      headers={"OCS-APIRequest": "true", "Accept": "application/json"}) as http:
        rooms = http.get("/ocs/v2.php/apps/spreed/api/v4/room", params={"format": "json"}).json()["ocs"]["data"]
    assert title not in [r["displayName"] for r in rooms]
