"""Hostile input on the calendar tools (issue 23): rules that hang, objects that do not parse, far years, bad attendees.

Everything goes through the real MCP server against the emulator; objects
"another client wrote" are PUT with a plain client, or (where the emulator,
like Sabre, would refuse them) written straight into its store.
"""
from __future__ import annotations

import datetime as dt
import time

import icalendar
import pytest

from tests.server.test_calendar_tools import PERSONAL, SERIES, WORK, _master, _put, _stored


def _event(uid: str, summary: str, start: str, extra: str = "") -> str:
    return ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//other client//EN\r\nBEGIN:VEVENT\r\n"
            f"UID:{uid}\r\nDTSTAMP:20261201T000000Z\r\nDTSTART:{start}\r\nDURATION:PT30M\r\n"
            f"SUMMARY:{summary}\r\n{extra}END:VEVENT\r\nEND:VCALENDAR\r\n")


def _store_raw(pim, calendar: str, name: str, text: str, uid: str) -> None:
    """An object as a lenient server would keep it (Sabre refuses some of these; other servers do not)."""
    from mcp_nextcloud.fixtures.emulator.caldav import (_state)  # noqa: PLC2701 - writing the server's copy, as another client's

    class _Req:
        state = pim.emulator.state

    with pim.emulator.state.lock:
        _state(_Req()).home("alice")[calendar].store(name, text, uid)


@pytest.mark.parametrize("rule, needle", [
    ("FREQ=DAILY;INTERVAL=0", "INTERVAL must be 1 or more"),
    ("FREQ=DAILY;COUNT=-1", "COUNT must be 1 or more"),
    ("FREQ=DAILY;BYHOUR=25", "BYHOUR=25"),
    ("FREQ=MONTHLY;BYMONTHDAY=0", "BYMONTHDAY=0"),
    ("FREQ=WEEKLY;X-EVIL=1", "X-EVIL is not an RRULE part"),
    ("FREQ=SECONDLY", "more often than hourly"),
    ("FREQ=MINUTELY;COUNT=5", "more often than hourly"),
    ("FREQ=YEARLY;BYSETPOS=1;BYHOUR=" + ",".join(map(str, range(24))) + ";BYMINUTE="
     + ",".join(map(str, range(60))), "BYSETPOS"),
])
def test_invalid_or_flooding_rules_are_refused_naming_the_part(pim, ok, err, rule, needle):
    before = ok(pim.call("calendar_list_events", {"start": "2026-01-01", "end": "2026-01-31"}))["events"]
    text = err(pim.call("calendar_create_event", {"title": "t", "start": "2026-01-01T00:00Z", "repeat": rule}))
    assert needle in text and "repeat" in text and "Do not repeat this call unchanged" in text
    assert ok(pim.call("calendar_list_events", {"start": "2026-01-01", "end": "2026-01-31"}))["events"] == before


def test_a_valid_rule_is_still_accepted(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "Standup", "start": "2027-02-01T09:00Z",
                                                 "repeat": "RRULE:FREQ=WEEKLY;BYDAY=MO,WE;COUNT=6"}))
    assert made["repeats"] is True
    listed = ok(pim.call("calendar_list_events", {"start": "2027-02-01", "end": "2027-02-28"}))["events"]
    assert len([e for e in listed if e["uid"] == made["uid"]]) == 6


def test_hostile_series_of_other_clients_are_listed_within_budget_with_the_rest(pim, ok):
    # Each is stored as another client would: a secondly series begun in the window, a daily series from
    # year 1, a daily rule that can never occur (dateutil walks to year 9999 without yielding).
    _put(pim, WORK + "secondly.ics", _event("secondly@x", "Every second", "20270305T000000Z",
                                            "RRULE:FREQ=SECONDLY\r\n"))
    _put(pim, WORK + "year1.ics", _event("year1@x", "Since year 1", "00010101T080000Z", "RRULE:FREQ=DAILY\r\n"))
    _put(pim, WORK + "never.ics", _event("never@x", "Never", "20270301T000000Z",
                                         "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30\r\n"))
    _put(pim, PERSONAL + "plain.ics", _event("plain@x", "Ordinary meeting", "20270303T100000Z"))
    t0 = time.monotonic()
    data = ok(pim.call("calendar_list_events", {"start": "2027-03-01", "end": "2027-03-07", "limit": 200}))
    elapsed = time.monotonic() - t0
    by_uid: dict[str, list] = {}
    for e in data["events"]:
        by_uid.setdefault(e["uid"], []).append(e)
    assert len(by_uid["secondly@x"]) >= 100 and by_uid["secondly@x"][1]["start"] == "2027-03-05T00:00:01Z"
    # The emulator, like Sabre, stops after 3500 instances: the year-1 series is not in the REPORT at all.
    assert "year1@x" not in by_uid
    assert [e["title"] for e in by_uid["plain@x"]] == ["Ordinary meeting"]
    assert data["truncated"] is True and "shorter window" in data["hint"]
    assert any("'Never'" in w and "never@x" in w and "expansion budget" in w for w in data["warnings"])
    assert elapsed < 60   # a hang guard, not a speed figure (benchmarks/test_calendar_hostile_bench.py has those)


def test_an_invalid_rule_stored_by_another_server_is_skipped_and_named(pim, ok):
    _store_raw(pim, "work", "zero.ics", _event("zero@x", "Interval zero", "20270301T090000Z",
                                               "RRULE:FREQ=DAILY;INTERVAL=0\r\n"), "zero@x")
    _put(pim, WORK + "fine.ics", _event("fine@x", "Fine", "20270302T090000Z"))
    data = ok(pim.call("calendar_list_events", {"start": "2027-03-01", "end": "2027-03-07"}))
    assert [e["uid"] for e in data["events"]] == ["fine@x"]
    assert any("'Interval zero'" in w and "zero@x" in w and "INTERVAL must be 1 or more" in w
               for w in data["warnings"])


def test_an_object_that_does_not_parse_is_skipped_and_named_the_rest_listed(pim, ok):
    broken = _event("broken@x", "Bro\x07ken", "20270301T090000Z").replace("DTSTART:20270301T090000Z",
                                                                          "DTSTART:20270301T09XX00Z")
    _store_raw(pim, "work", "broken.ics", broken, "broken@x")
    _put(pim, WORK + "fine.ics", _event("fine@x", "Fine", "20270302T090000Z"))
    data = ok(pim.call("calendar_list_events", {"start": "2027-03-01", "end": "2027-03-07"}))
    assert "fine@x" in [e["uid"] for e in data["events"]]
    warning = next(w for w in data["warnings"] if "broken@x" in w)
    assert "Bro" in warning and "skipped" in warning and "\x07" not in warning


def test_a_control_character_put_by_a_plain_client_does_not_hide_the_calendar(pim, ok):
    _put(pim, WORK + "bell.ics", _event("bell@x", "a\x07b", "20270301T090000Z"))
    data = ok(pim.call("calendar_list_events", {"start": "2027-03-01", "end": "2027-03-07"}))
    assert [(e["uid"], e["title"]) for e in data["events"]] == [("bell@x", "ab")]   # Sabre drops it; so do we


@pytest.mark.parametrize("tool, args, field", [
    ("calendar_create_event", {"title": "t", "start": "9999-12-31T23:30Z"}, "start"),
    ("calendar_create_event", {"title": "t", "start": "0001-01-01T00:00+01:00"}, "start"),
    ("calendar_create_event", {"title": "t", "start": "2027-01-01T10:00Z", "end": "9999-12-31T23:59Z"}, "end"),
    ("calendar_list_events", {"start": "9999-12-31T23:30Z"}, "start"),
    ("calendar_list_events", {"start": "0001-01-01"}, "start"),
    ("calendar_update_event", {"uid": "work-single-1@nextcloud.test", "start": "9999-12-31T23:30Z"}, "start"),
])
def test_times_outside_the_range_are_refused_naming_the_argument(pim, err, tool, args, field):
    text = err(pim.call(tool, args))
    assert f"{field} " in text and "1900-01-01 to 2199-12-31" in text and "internal" not in text


def test_a_date_and_time_with_a_space_read_as_the_calendar_forms(pim, ok, err):
    text = err(pim.call("calendar_create_event", {"title": "t", "start": "2026-12-08 10:00"}))
    assert "no time zone" in text and "2026-12-08T10:00 Europe/Paris" in text and "IANA" not in text
    made = ok(pim.call("calendar_create_event", {"title": "t", "start": "2026-12-08 10:00 Europe/Paris"}))
    assert made["start"] == "2026-12-08T09:00Z" and made["local"] == "2026-12-08T10:00 Europe/Paris"
    made = ok(pim.call("calendar_create_event", {"title": "t", "start": "2026-12-08 10:00+01:00"}))
    assert made["start"] == "2026-12-08T09:00Z"


@pytest.mark.parametrize("item", ["evil@x.example,other@x.example", "a@b.example;RSVP=TRUE:mailto:evil@x.example",
                                  '"evil"@x.example', "a@b.example:X-EVIL", "Bob <bob@example.invalid>",
                                  "a b@example.invalid", "a@b.example\nATTENDEE:mailto:c@d.example"])
def test_each_attendee_is_exactly_one_address(pim, err, item):
    text = err(pim.call("calendar_create_event", {"title": "t", "start": "2027-01-11T09:00Z",
                                                  "attendees": ["bob@example.invalid", item], "typedByUser": [item]}))
    assert "attendees" in text
    if "\n" in item:   # the argument validator refuses the line break before any address rule runs
        assert "control character" in text and "\n" not in text
    else:
        assert "not an e-mail address" in text and (repr(item)[:20] in repr(text) or item[:10] in text)


def test_an_address_made_up_from_a_name_is_refused_unless_the_user_typed_it(pim, ok, err):
    text = err(pim.call("calendar_create_event", {"title": "t", "start": "2027-01-11T09:00Z",
                                                  "attendees": ["jane.doe@example.com"]}))
    assert "Never build an address from a name" in text and "typedByUser" in text and "contacts_search" in text
    made = ok(pim.call("calendar_create_event", {"title": "t", "start": "2027-01-11T09:00Z",
                                                 "attendees": ["jane.doe@example.com"],
                                                 "typedByUser": ["jane.doe@example.com"]}))
    assert made["attendees"] == ["jane.doe@example.com"] and "jane.doe@example.com" in made["warnings"][0]
    # Known people need no marking: a contact card's address and an account's address.
    ok(pim.call("calendar_create_event", {"title": "t", "start": "2027-01-11T09:00Z",
                                          "attendees": ["elodie.muller@example.invalid", "bob@example.invalid"]}))


def test_an_update_keeps_existing_attendees_without_asking_again(pim, ok, err):
    made = ok(pim.call("calendar_create_event", {"title": "t", "start": "2027-01-11T09:00Z",
                                                 "attendees": ["jane.doe@example.com"],
                                                 "typedByUser": ["jane.doe@example.com"]}))
    ok(pim.call("calendar_update_event", {"uid": made["uid"],
                                          "attendees": ["jane.doe@example.com", "bob@example.invalid"]}))
    text = err(pim.call("calendar_update_event", {"uid": made["uid"], "attendees": ["john.doe@example.com"]}))
    assert "Never build" in text


def _occurrences(pim, ok, uid: str) -> list[dict]:
    listed = ok(pim.call("calendar_list_events", {"start": "2027-01-01", "end": "2027-03-31", "limit": 200}))
    return [e for e in listed["events"] if e["uid"] == uid]


def test_one_occurrence_moved_leaves_the_series_and_tells_attendees(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "Weekly", "start": "2027-01-11T09:00 Europe/Paris",
                                                 "repeat": "FREQ=WEEKLY;COUNT=4",
                                                 "attendees": ["bob@example.invalid"]}))
    before = _occurrences(pim, ok, made["uid"])
    assert [e["recurrenceId"] for e in before] == ["2027-01-11T08:00Z", "2027-01-18T08:00Z", "2027-01-25T08:00Z",
                                                   "2027-02-01T08:00Z"]
    out = ok(pim.call("calendar_update_event", {"uid": made["uid"], "recurrenceId": "2027-01-18T08:00Z",
                                                "start": "2027-01-19T14:00 Europe/Paris", "title": "Weekly (moved)"}))
    assert out["recurrenceId"] == "2027-01-18T08:00Z" and out["start"] == "2027-01-19T13:00Z"
    assert out["title"] == "Weekly (moved)" and "Only this occurrence" in out["warnings"][0]
    after = _occurrences(pim, ok, made["uid"])
    assert [(e["start"], e["title"]) for e in after] == [
        ("2027-01-11T08:00Z", "Weekly"), ("2027-01-19T13:00Z", "Weekly (moved)"),
        ("2027-01-25T08:00Z", "Weekly"), ("2027-02-01T08:00Z", "Weekly")]
    stored = _stored(pim, "personal", made["uid"])
    override = next(c for c in stored.walk("VEVENT") if "RECURRENCE-ID" in c)
    assert override.decoded("RECURRENCE-ID") == dt.datetime(2027, 1, 18, 8, tzinfo=dt.timezone.utc)
    assert str(override["RECURRENCE-ID"].params.get("TZID")) == "Europe/Paris"
    assert [str(a) for a in override.get("ATTENDEE") if "bob" in str(a)] == ["mailto:bob@example.invalid"]
    bob = _stored(pim, "personal", made["uid"], user="bob")   # the attendee's copy has the moved occurrence
    assert any(str(c.get("SUMMARY")) == "Weekly (moved)" for c in bob.walk("VEVENT"))


def test_one_occurrence_cancelled_is_an_exdate_and_the_rest_stays(pim, ok, err):
    _put(pim, WORK + "series.ics", SERIES)
    out = ok(pim.call("calendar_delete_event", {"uid": "series-1@test", "recurrenceId": "2027-01-26T09:00Z"}))
    assert out["deleted"] is True and out["recurrenceId"] == "2027-01-26T09:00Z" and "series" not in out
    starts = [e["start"] for e in _occurrences(pim, ok, "series-1@test")]
    assert "2027-01-26T09:00Z" not in starts and "2027-02-02T09:00Z" in starts and "2027-01-20T14:00Z" in starts
    master = _master(_stored(pim, "work", "series-1@test"), "series-1@test")
    assert master["X-MOZ-GENERATION"] == "7" and master.get("VALARM") is None or master.walk("VALARM")
    # Cancelling the moved one removes its override too.
    ok(pim.call("calendar_delete_event", {"uid": "series-1@test", "recurrenceId": "2027-01-19T09:00Z"}))
    starts = [e["start"] for e in _occurrences(pim, ok, "series-1@test")]
    assert "2027-01-20T14:00Z" not in starts
    assert not [c for c in _stored(pim, "work", "series-1@test").walk("VEVENT") if "RECURRENCE-ID" in c]
    text = err(pim.call("calendar_delete_event", {"uid": "series-1@test", "recurrenceId": "2027-01-27T09:00Z"}))
    assert "no occurrence at 2027-01-27T09:00Z" in text and "calendar_list_events" in text
    text = err(pim.call("calendar_update_event", {"uid": "work-single-1@nextcloud.test", "title": "x",
                                                  "recurrenceId": "2026-12-03T09:00Z"}))
    assert "does not repeat" in text


def test_the_listing_exposes_recurrence_ids_only_for_series(pim, ok):
    data = ok(pim.call("calendar_list_events", {"start": "2026-12-01", "end": "2026-12-31"}))
    assert all(("recurrenceId" in e) == bool(e.get("repeats")) for e in data["events"])
    assert icalendar  # imported for _stored's parsed objects
