"""meet_schedule: who is invited, when the room opens to guests, and no room left behind (issues 22 and 23)."""
from __future__ import annotations

import pytest

from tests.server.test_calendar_tools import _master, _stored
from tests.server.test_meet_tools import _count, _members, _room


def _attendees(pim, uid: str, user: str = "alice") -> set[str]:
    ev = _master(_stored(pim, "personal", uid, user=user), uid)
    raw = ev.get("ATTENDEE") or []
    return {str(a).removeprefix("mailto:") for a in (raw if isinstance(raw, list) else [raw])}


def test_a_participant_is_invited_by_her_account_email(pim, ok):
    out = ok(pim.call("meet_schedule", {"title": "Sync", "start": "2027-01-12T10:00Z", "participants": ["bob"]}))
    assert out["event"]["attendees"] == ["bob@example.invalid"]
    assert _attendees(pim, out["event"]["uid"]) == {"alice@example.invalid", "bob@example.invalid"}
    copy = _master(_stored(pim, "personal", out["event"]["uid"], user="bob"), out["event"]["uid"])
    assert str(copy["LOCATION"]) == out["room"]["url"]        # the event is in bob's calendar, with the link
    assert _room(pim, out["room"]["token"])["type"] == 2 and not out.get("warnings")


def test_an_attendee_with_an_account_joins_the_room_and_it_stays_closed_to_guests(pim, ok):
    out = ok(pim.call("meet_schedule", {"title": "Review", "start": "2027-01-12T10:00Z",
                                        "attendees": ["bob@example.invalid"]}))
    assert _room(pim, out["room"]["token"])["type"] == 2           # not public
    assert _members(pim, out["room"]["token"]) == {"alice", "bob"}
    assert out["room"]["participants"] == ["bob"] and not any("guests" in w for w in out.get("warnings", []))


def test_only_an_attendee_without_an_account_opens_the_room_and_is_named(pim, ok):
    out = ok(pim.call("meet_schedule", {"title": "Client call", "start": "2027-01-12T10:00Z",
                                        "participants": ["bob"],
                                        "attendees": ["bob@example.invalid", "elodie.muller@example.invalid"]}))
    assert _room(pim, out["room"]["token"])["type"] == 3
    warning = next(w for w in out["warnings"] if "open to guests" in w)
    assert "elodie.muller@example.invalid" in warning and "bob@" not in warning
    assert out["event"]["attendees"] == ["bob@example.invalid", "elodie.muller@example.invalid"]


def test_an_invented_attendee_is_refused_before_any_room_exists(pim, ok, err):
    before = _count(pim)
    text = err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-12T10:00Z",
                                          "attendees": ["jane.doe@example.com"]}))
    assert "Never build an address from a name" in text and _count(pim) == before
    out = ok(pim.call("meet_schedule", {"title": "x", "start": "2027-01-12T10:00Z",
                                        "attendees": ["jane.doe@example.com"],
                                        "typedByUser": ["jane.doe@example.com"]}))
    assert any("jane.doe@example.com" in w and "check the spelling" in w for w in out["warnings"])


@pytest.mark.parametrize("item", ["evil@x.example,other@x.example", "a@b.example;RSVP=TRUE:mailto:evil@x.example",
                                  '"evil"@x.example', "a@b.example:X-EVIL"])
def test_a_multi_address_attendee_is_refused_before_any_room(pim, err, item):
    before = _count(pim)
    text = err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-12T10:00Z", "attendees": [item],
                                          "typedByUser": [item]}))
    assert "not an e-mail address" in text and _count(pim) == before


@pytest.mark.parametrize("start", ["9999-12-31T23:30Z", "0001-01-01T00:00+01:00"])
def test_far_years_are_refused_before_any_room(pim, err, start):
    before = _count(pim)
    text = err(pim.call("meet_schedule", {"title": "x", "start": start}))
    assert "start" in text and "1900-01-01 to 2199-12-31" in text and _count(pim) == before


def test_an_unexpected_failure_after_the_room_exists_deletes_it_and_says_so(pim, err, monkeypatch):
    from mcp_nextcloud.server.tools.calendar import write as cal_write

    def broken(*args, **kwargs):   # fault injection: a bug of ours after the room was made
        raise RuntimeError("boom")
    monkeypatch.setattr(cal_write, "create", broken)
    before = _count(pim)
    text = err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-12T10:00Z"}))
    assert "deleted again" in text and "internal error" in text and "boom" not in text
    assert _count(pim) == before


def test_a_failure_adding_a_participant_deletes_the_room(pim, err):
    pim.emulator.faults.add(method="POST", path_prefix="/ocs/v2.php/apps/spreed/api/v4/room/", status=403, times=1)
    before = _count(pim)
    text = err(pim.call("meet_create_room", {"name": "x", "participants": ["bob"]}))
    assert "deleted again" in text and _count(pim) == before
