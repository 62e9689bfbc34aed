"""An account first used with an app password (no calendar, no address book, ever): the tools work on day one.

The emulator models it as the real Nextcloud 34 shows it (new_accounts=...;
tests/fixtures/test_emulator_first_login.py): a read names the cause and what
the write will do; the first event makes "Personal" and the first task makes
"Tasks", as the Calendar and Tasks apps do on first use, and the answer says
so. No advice to "log in once in a browser" (it cannot help such an account).
"""
from __future__ import annotations

import httpx

CAL = "urn:ietf:params:xml:ns:caldav"


def _calendars(pim, user: str) -> dict[str, list[str]]:
    """{calendar id: components} of `user`'s home, read over plain CalDAV (the app password)."""
    import xml.etree.ElementTree as ET

    from mcp_nextcloud.fixtures.emulator.testing import http_client

    with http_client(pim.emulator, user) as http:
        resp = http.request("PROPFIND", f"/remote.php/dav/calendars/{user}/", headers={"Depth": "1"},
                            content='<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="' + CAL + '">'
                                    "<d:prop><d:resourcetype/><c:supported-calendar-component-set/></d:prop>"
                                    "</d:propfind>")
    out = {}
    for r in ET.fromstring(resp.content).iter("{DAV:}response"):
        if r.find(f".//{{{CAL}}}calendar") is not None:
            name = (r.findtext("{DAV:}href") or "").rstrip("/").rsplit("/", 1)[-1]
            out[name] = [c.get("name") for c in r.iter(f"{{{CAL}}}comp")]
    return out


def test_calendar_list_on_a_new_account_says_what_the_first_event_will_do(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    data = ok(pim.call("calendar_list_events", {"start": "2026-12-01", "end": "2026-12-08"}, user="newbie"))
    assert data["events"] == [] and data["calendars"] == {}
    assert "no calendar for events yet" in data["hint"] and "calendar_create_event creates 'Personal'" in data["hint"]
    assert "browser" not in str(data)
    assert _calendars(pim, "newbie") == {}                                  # a read makes nothing


def test_the_first_event_of_a_new_account_makes_its_personal_calendar(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    made = ok(pim.call("calendar_create_event", {"title": "Kick-off", "start": "2026-12-08T10:00 Europe/Paris"},
                       user="newbie"))
    assert made["calendar"] == "personal"
    assert "'Personal' (id personal) was created" in made["hint"] and "Calendar app" in made["hint"]
    assert _calendars(pim, "newbie") == {"personal": ["VEVENT"]}
    listed = ok(pim.call("calendar_list_events", {"start": "2026-12-08", "end": "2026-12-09"}, user="newbie"))
    assert [e["uid"] for e in listed["events"]] == [made["uid"]]
    again = ok(pim.call("calendar_create_event", {"title": "Next", "start": "2026-12-09T10:00Z"}, user="newbie"))
    assert again["calendar"] == "personal" and "created" not in again.get("hint", "")


def test_the_first_task_of_a_new_account_makes_its_task_list(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    listed = ok(pim.call("tasks_list", {}, user="newbie"))
    assert listed["tasks"] == [] and "tasks_create creates 'Tasks'" in listed["hint"]
    made = ok(pim.call("tasks_create", {"title": "Call the plumber", "due": "2026-12-10"}, user="newbie"))
    assert made["list"] == "tasks" and "'Tasks' (id tasks) was created" in made["hint"]
    assert "Tasks app" in made["hint"]
    assert _calendars(pim, "newbie") == {"tasks": ["VTODO"]}
    assert [t["uid"] for t in ok(pim.call("tasks_list", {}, user="newbie"))["tasks"]] == [made["uid"]]
    second = ok(pim.call("tasks_create", {"title": "Buy paint"}, user="newbie"))
    assert second["list"] == "tasks" and "hint" not in second


def test_an_account_with_events_only_gets_a_task_list_beside_them(pim, ok):
    """bob has Personal (events only): the first task makes Tasks, Personal stays as it was."""
    made = ok(pim.call("tasks_create", {"title": "x"}, user="bob"))
    assert made["list"] == "tasks"
    cals = _calendars(pim, "bob")
    assert cals["tasks"] == ["VTODO"] and "VTODO" not in cals["personal"]


def test_a_taken_id_gets_a_number_as_the_apps_do():
    from mcp_nextcloud.server.tools.account.first_login import free_id

    assert free_id("Tasks", ["personal"]) == "tasks"
    assert free_id("Tasks", ["tasks", "Tasks-1"]) == "tasks-2"
    assert free_id("Personal", []) == "personal"


def test_after_a_password_first_login_the_account_uses_its_personal_calendar(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    with httpx.Client(base_url=pim.emulator.url, auth=("newbie", "newbie-password")) as browser:
        browser.get("/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true"})
    made = ok(pim.call("calendar_create_event", {"title": "Kick-off", "start": "2026-12-08T10:00 Europe/Paris"},
                       user="newbie"))
    assert made["calendar"] == "personal" and "created" not in made.get("hint", "")


def test_contacts_search_on_a_new_account_says_what_it_searched(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    data = ok(pim.call("contacts_search", {"query": "bob"}, user="newbie"))
    assert [p.get("accountId") for p in data["people"]] == ["bob"]       # the directory still answers
    assert any("no address book of its own" in w for w in data["warnings"])
    assert "browser" not in str(data)
    seasoned = ok(pim.call("contacts_search", {"query": "bob"}))
    assert not [w for w in seasoned.get("warnings", []) if "address book of its own" in w]
