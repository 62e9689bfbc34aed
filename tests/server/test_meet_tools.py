"""meet_create_room and meet_schedule through the real MCP server against the emulator's Talk and CalDAV."""
from __future__ import annotations

from tests.server.test_contacts_tools import _users


def _room(pim, token: str, user: str = "alice") -> dict:
    with pim.http(user, ocs=True) as client:
        resp = client.get(f"/ocs/v2.php/apps/spreed/api/v4/room/{token}", params={"format": "json"})
        assert resp.status_code == 200, resp.text
        return resp.json()["ocs"]["data"]


def _members(pim, token: str) -> set[str]:
    with pim.http(ocs=True) as client:
        resp = client.get(f"/ocs/v2.php/apps/spreed/api/v4/room/{token}/participants", params={"format": "json"})
        return {p["actorId"] for p in resp.json()["ocs"]["data"]}


def _count(pim, user: str = "alice") -> int:
    with pim.http(user, ocs=True) as client:
        return len(client.get("/ocs/v2.php/apps/spreed/api/v4/room", params={"format": "json"}).json()["ocs"]["data"])


def test_create_room_with_a_member_returns_token_and_public_link(pim, ok):
    room = ok(pim.call("meet_create_room", {"name": "Alpha sync", "participants": ["bob"]}))
    assert room["url"] == f"{pim.emulator.url}/index.php/call/{room['token']}"
    assert room["participants"] == ["bob"] and room["name"] == "Alpha sync"
    assert _members(pim, room["token"]) == {"alice", "bob"}
    assert _room(pim, room["token"])["type"] == 2          # a group conversation, not public
    assert _room(pim, room["token"], user="bob")["name"] == "Alpha sync"


def test_a_name_resolves_to_its_only_account_and_says_so(pim, ok):
    room = ok(pim.call("meet_create_room", {"name": "Builders", "participants": ["Bob Builder"]}))
    assert room["participants"] == ["bob"] and room["resolved"] == {"Bob Builder": "bob"}


def test_an_ambiguous_name_is_refused_with_candidates_before_any_room_exists(pim_factory, err):
    pim = pim_factory(users=_users())
    before = _count(pim)
    text = err(pim.call("meet_create_room", {"name": "Music", "participants": ["Bob"]}))
    assert "several people" in text and "accountId bob" in text and "accountId robert" in text
    assert "Do not pick" in text
    assert _count(pim) == before


def test_a_contact_without_account_cannot_be_a_participant(pim, err):
    text = err(pim.call("meet_create_room", {"name": "x", "participants": ["Élodie"]}))
    assert "No account matches" in text and "attendees" in text


def test_schedule_makes_the_room_then_the_event_pointing_at_it(pim, ok):
    out = ok(pim.call("meet_schedule", {"title": "Alpha review", "start": "2027-01-12T10:00 Europe/Paris",
                                        "participants": ["bob"]}))
    room, event = out["room"], out["event"]
    assert event["location"] == room["url"] and event["local"] == "2027-01-12T10:00 Europe/Paris"
    assert "warnings" not in out and _room(pim, room["token"])["type"] == 2
    listed = ok(pim.call("calendar_list_events", {"start": "2027-01-12", "end": "2027-01-12"}))["events"]
    assert [(e["uid"], e["location"]) for e in listed] == [(event["uid"], room["url"])]
    assert _members(pim, room["token"]) == {"alice", "bob"}


def test_attendees_open_the_room_to_guests_and_the_answer_warns(pim, ok):
    out = ok(pim.call("meet_schedule", {"title": "Client demo", "start": "2027-01-13T15:00Z",
                                        "attendees": ["elodie.muller@example.invalid"]}))
    assert _room(pim, out["room"]["token"])["type"] == 3
    assert any("open to guests" in w and "Tell the user" in w for w in out["warnings"])
    assert out["event"]["attendees"] == ["elodie.muller@example.invalid"] and "invitation" in out["hint"]


def test_both_tools_refuse_without_a_public_url(pim, err):
    for tool, args in (("meet_create_room", {"name": "x"}),
                       ("meet_schedule", {"title": "x", "start": "2027-01-13T15:00Z"})):
        text = err(pim.call(tool, args, public_url=False))
        assert "NEXTCLOUD_PUBLIC_URL" in text and "Do not retry" in text


def test_a_bad_time_or_missing_email_fails_before_any_room_is_made(pim, err):
    before = _count(pim)
    assert "no time zone" in err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-13T15:00"}))
    admin_before = _count(pim, "admin")
    assert "no e-mail address" in err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-13T15:00Z",
                                                                 "attendees": ["a@example.invalid"],
                                                                 "typedByUser": ["a@example.invalid"]}, user="admin"))
    assert (_count(pim), _count(pim, "admin")) == (before, admin_before)


def test_a_failed_event_removes_the_room_it_made(pim, err):
    pim.emulator.faults.add(method="PUT", path_prefix="/remote.php/dav/calendars/alice/", status=403, times=1)
    before = _count(pim)
    text = err(pim.call("meet_schedule", {"title": "x", "start": "2027-01-13T15:00Z"}))
    assert "deleted again" in text
    assert _count(pim) == before


def test_the_creator_named_as_participant_is_not_added_twice(pim, ok):
    room = ok(pim.call("meet_create_room", {"name": "Pair", "participants": ["alice", "bob", "bob"]}))
    assert room["participants"] == ["bob"] and _members(pim, room["token"]) == {"alice", "bob"}


def test_deleting_a_scheduled_meeting_keeps_its_room_and_says_so(pim, ok):
    """Issue 37: the room outlived the deleted meeting without a word. It is kept (its chat is not the event's to
    delete, and cannot come back) and the delete's answer names it."""
    made = ok(pim.call("meet_schedule", {"title": "Cancelled sync", "start": "2026-12-09T09:00Z",
                                         "participants": ["bob"]}))
    token = made["room"]["token"]
    gone = ok(pim.call("calendar_delete_event", {"uid": made["event"]["uid"]}))
    assert gone["deleted"] is True and gone["room"] == token
    assert any(f"Talk room (token {token}) was kept" in w and "delete it in Talk" in w for w in gone["warnings"])
    with pim.http(ocs=True) as client:
        assert client.get(f"/ocs/v2.php/apps/spreed/api/v4/room/{token}",
                          params={"format": "json"}).status_code == 200
    plain = ok(pim.call("calendar_create_event", {"title": "No room", "start": "2026-12-10T09:00Z"}))
    assert "room" not in ok(pim.call("calendar_delete_event", {"uid": plain["uid"]}))
