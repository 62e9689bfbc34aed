"""tasks_* on a real Nextcloud: a task created and completed is a VTODO with STATUS:COMPLETED, read over CalDAV."""
from __future__ import annotations

import re
import uuid

import icalendar
import pytest

from tests.live.live_tools import call, tool_server


@pytest.fixture
def task_list(live_http, live_account):
    """A task list of its own (MKCALENDAR with VTODO only), deleted at the end."""
    name = f"mcp-live-tasks-{uuid.uuid4().hex[:8]}"
    url = f"/remote.php/dav/calendars/{live_account.user}/{name}/"
    body = ('<?xml version="1.0"?><c:mkcalendar xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:set>'
            f"<d:prop><d:displayname>{name}</d:displayname><c:supported-calendar-component-set>"
            '<c:comp name="VTODO"/></c:supported-calendar-component-set></d:prop></d:set></c:mkcalendar>')
    assert live_http.request("MKCALENDAR", url, content=body).status_code == 201
    try:
        yield name, url
    finally:
        # Without this header the calendar only moves to the calendar trash bin (and stays listed as deleted).
        live_http.request("DELETE", url, headers={"X-NC-CalDAV-No-Trashbin": "1"})


@pytest.fixture
def server(live_account):
    yield from tool_server(live_account)


def _todo(live_http, url: str, uid: str) -> icalendar.Todo:
    resp = live_http.get(f"{url}{uid}.ics")
    assert resp.status_code == 200, resp.text
    return next(iter(icalendar.Calendar.from_ical(resp.text).walk("VTODO")))


def test_live_a_task_created_and_completed_is_a_completed_vtodo(server, task_list, live_http):
    name, url = task_list
    made = call(server, "tasks_create", {"title": f"Follow up {name}", "due": "2027-01-15", "priority": "high",
                                         "list": name})
    todo = _todo(live_http, url, made["uid"])
    assert str(todo["SUMMARY"]) == f"Follow up {name}" and int(todo["PRIORITY"]) == 1
    assert made["uid"] in {t["uid"] for t in call(server, "tasks_list", {"list": name})["tasks"]}
    call(server, "tasks_update", {"uid": made["uid"], "done": True})
    todo = _todo(live_http, url, made["uid"])
    assert str(todo["STATUS"]) == "COMPLETED" and int(todo["PERCENT-COMPLETE"]) == 100 and "COMPLETED" in todo
    assert made["uid"] not in {t["uid"] for t in call(server, "tasks_list", {"list": name})["tasks"]}
    call(server, "tasks_update", {"uid": made["uid"], "done": False, "description": "reopened"})
    todo = _todo(live_http, url, made["uid"])
    assert str(todo["STATUS"]) == "NEEDS-ACTION" and "COMPLETED" not in todo
    assert str(todo["DESCRIPTION"]) == "reopened" and str(todo["DUE"].to_ical().decode()) == "20270115"


def test_live_an_event_only_calendar_takes_no_task(server, live_http, live_account):
    """The account's own Personal calendar accepts events only (as after a first login): the tool says so."""
    text = call(server, "tasks_create", {"title": "x", "list": "personal"}, error=True)
    assert "not a task list" in text


def test_live_an_account_without_a_task_list_is_told_the_first_task_makes_one(live_member, live_http):
    """The colleague has only the calendars of a first login (Personal: events only). The first task's list is
    made on a throwaway account (test_live_first_login.py), never on this shared one."""
    from tests.live.conftest import plain_client

    with plain_client(live_member) as member_http:
        body = ('<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop>'
                "<c:supported-calendar-component-set/></d:prop></d:propfind>")
        resp = member_http.request("PROPFIND", f"/remote.php/dav/calendars/{live_member.user}/",
                                   headers={"Depth": "1"}, content=body)
        blocks = re.findall(r"<d:response>(.*?)</d:response>", resp.text, re.S)
        if any('name="VTODO"' in b and "app-generated--" not in b for b in blocks):
            pytest.skip("the colleague has a task list on this server")
    for server in tool_server(live_member):
        listed = call(server, "tasks_list", {})
        assert listed["tasks"] == [] and "tasks_create creates 'Tasks'" in listed["hint"]
