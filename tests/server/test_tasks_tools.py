"""tasks_list, tasks_create and tasks_update through the real MCP server against the emulator's CalDAV."""
from __future__ import annotations

import icalendar

HOME = "/remote.php/dav/calendars/alice"
QUERY = ('<?xml version="1.0"?><c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">'
         "<d:prop><d:getetag/><c:calendar-data/></d:prop><c:filter><c:comp-filter name=\"VCALENDAR\">"
         '<c:comp-filter name="VTODO"/></c:comp-filter></c:filter></c:calendar-query>')


def _todo(pim, uid: str, calendar: str = "work") -> icalendar.Todo:
    """The stored VTODO, read back over plain CalDAV."""
    with pim.http() as client:
        resp = client.get(f"{HOME}/{calendar}/{uid}.ics")
        assert resp.status_code == 200, resp.text
    return next(c for c in icalendar.Calendar.from_ical(resp.text).walk("VTODO"))


def test_a_task_created_then_completed_is_a_completed_vtodo(pim, ok):
    made = ok(pim.call("tasks_create", {"title": "Send the invoice", "due": "2027-02-01", "priority": "high",
                                        "description": "to ACME"}))
    assert made["list"] == "work" and made["due"] == "2027-02-01" and made["priority"] == "high"
    todo = _todo(pim, made["uid"])
    assert str(todo["SUMMARY"]) == "Send the invoice" and int(todo["PRIORITY"]) == 1
    assert str(todo["STATUS"]) == "NEEDS-ACTION"
    done = ok(pim.call("tasks_update", {"uid": made["uid"], "done": True}))
    assert done["done"] is True and done["completed"]
    todo = _todo(pim, made["uid"])
    assert str(todo["STATUS"]) == "COMPLETED" and int(todo["PERCENT-COMPLETE"]) == 100 and "COMPLETED" in todo
    assert str(todo["DESCRIPTION"]) == "to ACME"     # untouched by the update
    listed = ok(pim.call("tasks_list", {}))["tasks"]
    assert made["uid"] not in {t["uid"] for t in listed}
    with_done = ok(pim.call("tasks_list", {"completed": True}))["tasks"]
    assert made["uid"] in {t["uid"] for t in with_done}
    reopened = ok(pim.call("tasks_update", {"uid": made["uid"], "done": False}))
    assert reopened["done"] is False
    todo = _todo(pim, made["uid"])
    assert str(todo["STATUS"]) == "NEEDS-ACTION" and "COMPLETED" not in todo


def test_an_update_patches_and_keeps_what_it_cannot_express(pim, ok):
    uid = "task-with-alarm"
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other client//EN\r\nBEGIN:VTODO\r\nUID:task-with-alarm\r\n"
           "DTSTAMP:20261201T000000Z\r\nSUMMARY:Renew passport\r\nX-OTHER-CLIENT:keep me\r\nCATEGORIES:admin\r\n"
           "BEGIN:VALARM\r\nACTION:DISPLAY\r\nTRIGGER:-PT1H\r\nDESCRIPTION:soon\r\nEND:VALARM\r\n"
           "END:VTODO\r\nEND:VCALENDAR\r\n")
    with pim.http() as client:
        assert client.put(f"{HOME}/work/{uid}.ics", content=ics,
                          headers={"Content-Type": "text/calendar"}).status_code == 201
    out = ok(pim.call("tasks_update", {"uid": uid, "due": "2027-03-01T09:00 Europe/Paris", "priority": "low"}))
    assert out["due"] == "2027-03-01T08:00Z" and out["priority"] == "low"
    todo = _todo(pim, uid)
    assert str(todo["X-OTHER-CLIENT"]) == "keep me" and todo.walk("VALARM")
    assert str(todo["SUMMARY"]) == "Renew passport" and int(todo["SEQUENCE"]) == 1
    cleared = ok(pim.call("tasks_update", {"uid": uid, "due": ""}))
    assert "due" not in cleared and "DUE" not in _todo(pim, uid)


def test_filters_due_and_priority(pim, ok):
    soon = ok(pim.call("tasks_create", {"title": "Soon", "due": "2027-01-05", "priority": "medium"}))["uid"]
    later = ok(pim.call("tasks_create", {"title": "Later", "due": "2027-06-05"}))["uid"]
    due = {t["uid"] for t in ok(pim.call("tasks_list", {"dueBefore": "2027-02-01"}))["tasks"]}
    assert soon in due and later not in due
    medium = {t["uid"] for t in ok(pim.call("tasks_list", {"priority": "medium"}))["tasks"]}
    assert soon in medium and later not in medium
    everything = ok(pim.call("tasks_list", {}))
    order = [t["uid"] for t in everything["tasks"]]
    assert order.index(soon) < order.index(later) and everything["lists"] == {"work": "Work"}


def test_a_naive_due_time_is_refused_by_the_calendar_parser(pim, err):
    text = err(pim.call("tasks_create", {"title": "x", "due": "2027-01-05T10:00"}))
    assert "time zone" in text and "Europe/Paris" in text


def test_an_account_without_a_task_list_is_told_the_first_task_makes_one(pim, ok):
    listed = ok(pim.call("tasks_list", {}, user="bob"))
    assert listed["tasks"] == [] and "tasks_create creates 'Tasks'" in listed["hint"]


def test_an_event_calendar_named_as_the_list_is_refused(pim, err):
    text = err(pim.call("tasks_create", {"title": "x", "list": "personal"}))
    assert "not a task list" in text and "work" in text


def test_an_unknown_uid_points_to_tasks_list(pim, err):
    text = err(pim.call("tasks_update", {"uid": "nope", "done": True}))
    assert "tasks_list" in text and "Do not guess" in text
