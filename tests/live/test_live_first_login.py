"""A new account first used with an app password, on the real server: it takes a task and an event on day one.

The account is made with occ for the test (user:add, then an app password,
never a password login first) and deleted at the end. Nextcloud never makes
its calendar, even after a later password login; the tools make "Personal"
and "Tasks" as the Calendar and Tasks apps do, and say so. The same account
after one password request first (the first login) has its Personal calendar.
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


def test_live_a_fresh_account_takes_a_task_and_an_event_on_day_one(throwaway_account, tools_factory):
    """First used with an app password, as a real client's first request: Nextcloud never makes its calendar.
    The first event makes "Personal" and the first task "Tasks", as the Calendar and Tasks apps do."""
    newbie = throwaway_account(first_login=False)
    assert _calendars(newbie) == []                                   # the server's own state, read plainly
    tools = tools_factory(account=newbie)
    listed = tools.ok("calendar_list_events", {"start": "2030-03-03", "end": "2030-03-04"})
    assert listed["events"] == [] and "no calendar for events yet" in listed["hint"]
    assert "browser" not in str(listed) and _calendars(newbie) == []  # a read makes nothing
    made = tools.ok("calendar_create_event", {"title": "Day one", "start": "2030-03-03T10:00 Europe/Paris"})
    assert made["calendar"] == "personal" and "was created" in made["hint"]
    task = tools.ok("tasks_create", {"title": "First task", "due": "2030-03-05"})
    assert task["list"] == "tasks" and "was created" in task["hint"]
    assert sorted(_calendars(newbie)) == ["personal", "tasks"]
    assert _components(newbie) == {"personal": ["VEVENT"], "tasks": ["VTODO"]}
    with httpx.Client(base_url=newbie.url, auth=(newbie.user, newbie.app_password), timeout=60) as http:
        event = http.get(f"/remote.php/dav/calendars/{newbie.user}/personal/{made['uid']}.ics")
        todo = http.get(f"/remote.php/dav/calendars/{newbie.user}/tasks/{task['uid']}.ics")
    assert event.status_code == 200 and "SUMMARY:Day one" in event.text
    assert todo.status_code == 200 and "SUMMARY:First task" in todo.text
    people = tools.ok("contacts_search", {"query": "elodie"})
    assert any("no address book of its own" in w for w in people["warnings"]) and "browser" not in str(people)


def test_live_a_later_password_login_makes_no_calendar(throwaway_account):
    """Why "log in once in a browser" was untrue: after an app-password request, a password login makes none."""
    newbie = throwaway_account(first_login=False)
    with httpx.Client(base_url=newbie.url, auth=(newbie.user, newbie.app_password), timeout=60) as http:
        assert http.get("/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true"}).status_code == 200
    assert _calendars(newbie) == []
    password = throwaway_account.password_of(newbie.user)
    with httpx.Client(base_url=newbie.url, auth=(newbie.user, password), timeout=60) as login:
        assert login.get("/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true"}).status_code == 200
    assert _calendars(newbie) == []


def _components(account) -> dict[str, list[str]]:
    import xml.etree.ElementTree as ET

    cal = "urn:ietf:params:xml:ns:caldav"
    body = (f'<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="{cal}"><d:prop><d:resourcetype/>'
            "<c:supported-calendar-component-set/></d:prop></d:propfind>")
    with httpx.Client(base_url=account.url, auth=(account.user, account.app_password), timeout=60) as http:
        resp = http.request("PROPFIND", f"/remote.php/dav/calendars/{account.user}/", headers={"Depth": "1"},
                            content=body)
    return {(r.findtext("{DAV:}href") or "").rstrip("/").rsplit("/", 1)[-1]: [c.get("name") for c in
                                                                              r.iter(f"{{{cal}}}comp")]
            for r in ET.fromstring(resp.content).iter("{DAV:}response") if r.find(f".//{{{cal}}}calendar") is not None}


def test_live_after_the_first_login_the_account_has_its_calendar(throwaway_account, tools_factory):
    seasoned = throwaway_account(first_login=True)
    assert "personal" in _calendars(seasoned)
    listed = tools_factory(account=seasoned).ok("calendar_list_events", {"start": "2030-03-03", "end": "2030-03-04"})
    assert "personal" in listed["calendars"] and "no calendar yet" not in str(listed)


def test_live_a_meeting_on_a_fresh_account_makes_its_calendar(throwaway_account, tools_factory, live_member,
                                                               server_admin):
    newbie = throwaway_account(first_login=False)
    server_admin.occ("user:setting", newbie.user, "settings", "email", f"{newbie.user}@example.invalid")
    title = "Kick-off on day one"
    made = tools_factory(account=newbie).ok("meet_schedule", {"title": title,
                                                              "start": "2030-03-03T10:00 Europe/Paris",
                                                              "participants": [live_member.user]})
    assert made["event"]["calendar"] == "personal" and "was created" in made["hint"]
    assert "personal" in _calendars(newbie)
