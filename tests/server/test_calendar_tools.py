"""calendar_list_events / create / update / delete through the real MCP server against the emulator."""
from __future__ import annotations

import icalendar
import pytest

WORK = "/remote.php/dav/calendars/alice/work/"
PERSONAL = "/remote.php/dav/calendars/alice/personal/"

# Weekly on Tuesdays 10:00 Paris from 2027-01-05; the 12th is cancelled (EXDATE), the 19th moved to Wed 20th 15:00.
SERIES = """BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//test//EN
BEGIN:VEVENT
UID:series-1@test
DTSTAMP:20261201T000000Z
DTSTART;TZID=Europe/Paris:20270105T100000
DTEND;TZID=Europe/Paris:20270105T110000
RRULE:FREQ=WEEKLY;BYDAY=TU;COUNT=10
EXDATE;TZID=Europe/Paris:20270112T100000
SUMMARY:Design review
LOCATION:Room 4
X-MOZ-GENERATION:7
BEGIN:VALARM
ACTION:DISPLAY
DESCRIPTION:Design review soon
TRIGGER:-PT10M
END:VALARM
END:VEVENT
BEGIN:VEVENT
UID:series-1@test
DTSTAMP:20261201T000000Z
RECURRENCE-ID;TZID=Europe/Paris:20270119T100000
DTSTART;TZID=Europe/Paris:20270120T150000
DTEND;TZID=Europe/Paris:20270120T160000
SUMMARY:Design review (moved)
END:VEVENT
END:VCALENDAR
"""


def _put(pim, url: str, ics: str) -> None:
    with pim.http() as client:
        assert client.put(url, content=ics, headers={"If-None-Match": "*"}).status_code == 201


def _stored(pim, calendar: str, uid: str, user: str = "alice") -> icalendar.Calendar:
    """The stored object holding `uid`, read straight from the emulator's state."""
    from mcp_nextcloud.fixtures.emulator.caldav import _state  # noqa: PLC2701 - reading the server's copy, not our code

    class _Req:
        state = pim.emulator.state

    with pim.emulator.state.lock:
        obj = _state(_Req()).home(user)[calendar].by_uid(uid)
    assert obj is not None, f"{uid} not in {calendar}"
    return icalendar.Calendar.from_ical(obj.data)


def _master(cal: icalendar.Calendar, uid: str):
    return next(c for c in cal.walk("VEVENT") if str(c["UID"]) == uid and "RECURRENCE-ID" not in c)


def test_weekly_series_over_a_month_honours_exdate_and_the_moved_occurrence(pim, ok):
    _put(pim, WORK + "series.ics", SERIES)
    pim.emulator.reset_requests()
    data = ok(pim.call("calendar_list_events", {"start": "2027-01-01", "end": "2027-01-31"}))
    mine = [e for e in data["events"] if e["uid"] == "series-1@test"]
    assert [e["start"] for e in mine] == ["2027-01-05T09:00Z", "2027-01-20T14:00Z", "2027-01-26T09:00Z"]
    assert mine[1]["title"] == "Design review (moved)"
    assert all(e["repeats"] and e["calendar"] == "work" for e in mine)
    assert [e["local"] for e in mine] == ["2027-01-05T10:00 Europe/Paris", "2027-01-20T15:00 Europe/Paris",
                                          "2027-01-26T10:00 Europe/Paris"]
    assert mine[0]["end"] == "2027-01-05T10:00Z"
    assert data["from"] == "2027-01-01T00:00Z" and data["to"] == "2027-02-01T00:00Z"
    # Discovery folded in: one PROPFIND for the calendars, one REPORT per calendar, nothing per event.
    methods = [m for m, p, _ in pim.emulator.requests if p.startswith("/remote.php/dav/calendars/")]
    assert methods.count("PROPFIND") == 1 and methods.count("REPORT") == len(data["calendars"])


def test_listing_gives_handles_zones_attendees_and_all_day_dates(pim, ok):
    data = ok(pim.call("calendar_list_events", {"start": "2026-12-01", "end": "2026-12-31"}))
    by_uid = {e["uid"]: e for e in data["events"]}
    allday = by_uid["personal-allday-1@nextcloud.test"]
    assert (allday["start"], allday["end"], allday["allDay"]) == ("2026-12-24", "2026-12-24", True)
    meeting = by_uid["work-meeting-bob@nextcloud.test"]
    assert meeting["attendees"] == ["bob@example.invalid"]   # the organizer is named once, as organizer
    assert meeting["organizer"] == "alice@example.invalid" and "repeats" not in meeting
    assert by_uid["personal-dentist@nextcloud.test"]["location"] == "Dr. Weiß, Hauptstraße 5"
    standups = [e for e in data["events"] if e["uid"] == "work-weekly-standup@nextcloud.test"]
    assert len(standups) == 4 and standups[0]["local"] == "2026-12-07T09:30 Europe/Berlin"
    assert data["calendars"] == {"personal": "Personal", "contact_birthdays": "Contact birthdays", "work": "Work"}
    assert data["truncated"] is False and "total" not in data


def test_deck_calendars_are_left_out_unless_asked_for_and_stay_named(pim, ok):
    plain = ok(pim.call("calendar_list_events", {"start": "2026-12-14", "end": "2026-12-16"}))
    assert not any(e["calendar"].startswith("app-generated--") for e in plain["events"])
    assert any("includeAppCalendars" in w for w in plain["warnings"])
    full = ok(pim.call("calendar_list_events", {"start": "2026-12-14", "end": "2026-12-16",
                                                "includeAppCalendars": True}))
    card = next(e for e in full["events"] if e["calendar"] == "app-generated--deck--board-1")
    assert card["title"] == "Write press release" and card["task"] is True and card["start"] == "2026-12-15T17:00Z"
    assert full["calendars"]["app-generated--deck--board-1"] == "Deck: Product Launch"
    assert "warnings" not in full


def test_one_unreadable_calendar_is_named_in_warnings(pim, ok):
    pim.emulator.faults.add(method="REPORT", path_prefix=WORK, status=403, times=1)
    data = ok(pim.call("calendar_list_events", {"start": "2026-12-01", "end": "2026-12-31"}))
    assert any("work" in w and "could not be read" in w for w in data["warnings"])
    assert {e["calendar"] for e in data["events"]} == {"personal"}


def test_a_naive_time_is_refused_with_the_fix(pim, err):
    for tool, args in (("calendar_create_event", {"title": "Lunch", "start": "2027-01-08T12:00"}),
                       ("calendar_list_events", {"start": "2027-01-08T12:00"})):
        text = err(pim.call(tool, args))
        assert "no time zone" in text and "2027-01-08T12:00Z" in text and "Europe/Paris" in text
    assert "IANA" in err(pim.call("calendar_create_event", {"title": "x", "start": "2027-01-08T12:00 Mars/Olympus"}))


def test_create_in_europe_paris_keeps_its_zone_and_update_moves_it_in_that_zone(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "Atelier", "start": "2027-03-10T14:00 Europe/Paris",
                                                 "location": "Salle 2"}))
    assert (made["calendar"], made["start"], made["end"], made["local"]) == (
        "personal", "2027-03-10T13:00Z", "2027-03-10T14:00Z", "2027-03-10T14:00 Europe/Paris")
    stored = _master(_stored(pim, "personal", made["uid"]), made["uid"])
    assert stored["DTSTART"].params["TZID"] == "Europe/Paris"
    assert any(c.name == "VTIMEZONE" for c in _stored(pim, "personal", made["uid"]).subcomponents)
    # A UTC time for an event in Paris keeps the event in Paris (16:00 local = 15:00Z in March).
    moved = ok(pim.call("calendar_update_event", {"uid": made["uid"], "start": "2027-03-10T15:00Z"}))
    assert moved["local"] == "2027-03-10T16:00 Europe/Paris" and moved["start"] == "2027-03-10T15:00Z"
    stored = _master(_stored(pim, "personal", made["uid"]), made["uid"])
    assert stored["DTSTART"].to_ical() == b"20270310T160000" and stored["DTSTART"].params["TZID"] == "Europe/Paris"
    assert (stored.decoded("DTEND") - stored.decoded("DTSTART")).total_seconds() == 3600   # duration kept
    listed = ok(pim.call("calendar_list_events", {"start": "2027-03-10", "end": "2027-03-10"}))["events"]
    assert [(e["start"], e["end"], e["local"]) for e in listed] == [
        ("2027-03-10T15:00Z", "2027-03-10T16:00Z", "2027-03-10T16:00 Europe/Paris")]


def test_all_day_stays_a_date_through_create_list_and_update(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "Ski trip", "start": "2027-02-01", "end": "2027-02-03"}))
    assert (made["start"], made["end"], made["allDay"]) == ("2027-02-01", "2027-02-03", True)
    ev = _master(_stored(pim, "personal", made["uid"]), made["uid"])
    assert ev["DTSTART"].to_ical() == b"20270201" and ev["DTEND"].to_ical() == b"20270204"
    ok(pim.call("calendar_update_event", {"uid": made["uid"], "title": "Ski trip (Alps)"}))
    ev = _master(_stored(pim, "personal", made["uid"]), made["uid"])
    assert ev["DTSTART"].params.get("VALUE") == "DATE" and ev["DTEND"].to_ical() == b"20270204"
    listed = ok(pim.call("calendar_list_events", {"start": "2027-02-02", "end": "2027-02-02"}))["events"]
    assert [(e["title"], e["start"], e["end"], e["allDay"]) for e in listed] == [
        ("Ski trip (Alps)", "2027-02-01", "2027-02-03", True)]


def test_update_patches_rrule_alarm_and_x_properties_survive_and_sequence_grows(pim, ok):
    _put(pim, WORK + "series.ics", SERIES)
    out = ok(pim.call("calendar_update_event", {"uid": "series-1@test", "start": "2027-01-05T16:00 Europe/Paris",
                                                "title": "Design review (afternoon)"}))
    assert out["repeats"] is True and any("whole series" in w for w in out["warnings"])
    cal = _stored(pim, "work", "series-1@test")
    master = _master(cal, "series-1@test")
    assert master["RRULE"].to_ical() == b"FREQ=WEEKLY;COUNT=10;BYDAY=TU"
    assert master["X-MOZ-GENERATION"] == "7" and master["LOCATION"] == "Room 4"
    assert [a["TRIGGER"].to_ical() for a in master.walk("VALARM")] == [b"-PT10M"]
    assert int(master["SEQUENCE"]) == 1 and master["DTSTART"].params["TZID"] == "Europe/Paris"
    # The exceptions moved with the series: the 12th is still cancelled, the moved occurrence still moved.
    listed = ok(pim.call("calendar_list_events", {"start": "2027-01-01", "end": "2027-01-31"}))["events"]
    assert [e["start"] for e in listed if e["uid"] == "series-1@test"] == [
        "2027-01-05T15:00Z", "2027-01-20T14:00Z", "2027-01-26T15:00Z"]


def test_a_stale_etag_rereads_and_retries_once_then_reports(pim, ok, err):
    pim.emulator.faults.add(method="PUT", path_prefix=WORK, status=412, times=1)
    ok(pim.call("calendar_update_event", {"uid": "work-single-1@nextcloud.test", "title": "Budget review v2"}))
    assert str(_master(_stored(pim, "work", "work-single-1@nextcloud.test"),
                       "work-single-1@nextcloud.test")["SUMMARY"]) == "Budget review v2"
    puts = [s for m, p, s in pim.emulator.requests if m == "PUT" and p.startswith(WORK)]
    assert puts == [412, 204]
    pim.emulator.faults.add(method="PUT", path_prefix=WORK, status=412, times=2)
    text = err(pim.call("calendar_update_event", {"uid": "work-single-1@nextcloud.test", "title": "v3"}))
    assert "changed again" in text and "calendar_list_events" in text


def test_every_update_sends_if_match(pim, ok):
    seen = []
    original = pim.emulator._route

    def spy(req):
        if req.method == "PUT":
            seen.append(req.header("if-match"))
        return original(req)

    pim.emulator._route = spy
    ok(pim.call("calendar_update_event", {"uid": "personal-dentist@nextcloud.test", "location": "Room 3"}))
    assert len(seen) == 1 and seen[0] and seen[0].startswith('"')


def test_attendees_get_invitations_from_the_accounts_own_address(pim, ok):
    made = ok(pim.call("calendar_create_event", {"title": "Supplier call", "start": "2027-01-11T09:00Z",
                                                 "attendees": ["bob@example.invalid"]}))
    assert made["attendees"] == ["bob@example.invalid"] and "invitation" in made["hint"]
    ev = _master(_stored(pim, "personal", made["uid"]), made["uid"])
    assert str(ev["ORGANIZER"]) == "mailto:alice@example.invalid"
    copy = _master(_stored(pim, "personal", made["uid"], user="bob"), made["uid"])
    assert str(copy["SUMMARY"]) == "Supplier call"


def test_an_account_without_email_cannot_invite(pim, ok, err):
    text = err(pim.call("calendar_create_event", {"title": "x", "start": "2027-01-11T09:00Z",
                                                  "attendees": ["bob@example.invalid"]}, user="admin"))
    assert "no e-mail address" in text and "personal settings" in text
    assert ok(pim.call("calendar_create_event", {"title": "Solo", "start": "2027-01-11T09:00Z"}, user="admin"))


def test_delete_removes_the_series_and_cancels_for_attendees(pim, ok, err):
    made = ok(pim.call("calendar_create_event", {"title": "Weekly sync", "start": "2027-01-11T09:00Z",
                                                 "repeat": "FREQ=WEEKLY;COUNT=4",
                                                 "attendees": ["bob@example.invalid"]}))
    gone = ok(pim.call("calendar_delete_event", {"uid": made["uid"]}))
    assert gone["deleted"] is True and gone["series"] is True and gone["cancelled"] == ["bob@example.invalid"]
    listed = ok(pim.call("calendar_list_events", {"start": "2027-01-01", "end": "2027-02-28"}))["events"]
    assert not [e for e in listed if e["uid"] == made["uid"]]
    copy = _master(_stored(pim, "personal", made["uid"], user="bob"), made["uid"])
    assert str(copy["STATUS"]) == "CANCELLED"
    assert "calendar_list_events" in err(pim.call("calendar_delete_event", {"uid": made["uid"]}))


@pytest.mark.parametrize("args, needle", [
    ({"title": "x", "start": "2027-01-11T09:00Z", "repeat": "EVERY TUESDAY"}, "RRULE"),
    ({"title": "x", "start": "2027-01-11T09:00Z", "attendees": ["not an address"]}, "contacts_search"),
    ({"title": "x", "start": "2027-01-11T09:00Z", "calendar": "nope"}, "personal"),
    ({"title": "x", "start": "2027-01-11T09:00Z", "calendar": "contact_birthdays"}, "read-only"),
    ({"title": "x", "start": "2027-01-11T09:00Z", "end": "2027-01-11T08:00Z"}, "after start"),
])
def test_bad_create_arguments_name_the_fix(pim, err, args, needle):
    assert needle in err(pim.call("calendar_create_event", args))


def test_update_without_a_change_or_with_an_end_before_the_start_is_refused(pim, err):
    assert "Nothing to change" in err(pim.call("calendar_update_event", {"uid": "work-single-1@nextcloud.test"}))
    text = err(pim.call("calendar_update_event", {"uid": "work-single-1@nextcloud.test", "end": "2026-12-03T08:00Z"}))
    assert "not after" in text
