"""Calendar, contacts and Talk tools against a real Nextcloud, each effect read back with a plain client.

Events are read back over CalDAV (a calendar-query REPORT by UID), rooms over
Talk's OCS API. Everything a test makes carries a run id and is deleted at
the end through the same plain client, whatever happened.
"""
from __future__ import annotations

import uuid

import icalendar
import pytest

TALK = "/ocs/v2.php/apps/spreed/api/v4"
QUERY = """<?xml version="1.0"?>
<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav">
 <d:prop><c:calendar-data/></d:prop>
 <c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT">
  <c:prop-filter name="UID"><c:text-match collation="i;octet">{uid}</c:text-match></c:prop-filter>
 </c:comp-filter></c:comp-filter></c:filter>
</c:calendar-query>"""


def calendar_url(account, calendar: str = "personal") -> str:
    return f"/remote.php/dav/calendars/{account.user}/{calendar}/"


def caldav_event(http, account, uid: str, calendar: str = "personal") -> icalendar.Event | None:
    """The VEVENT with this UID as the server stores it, or None."""
    import xml.etree.ElementTree as ET

    resp = http.request("REPORT", calendar_url(account, calendar), content=QUERY.format(uid=uid),
                        headers={"Depth": "1", "Content-Type": "application/xml"})
    assert resp.status_code == 207, resp.status_code
    datas = [e.text for e in ET.fromstring(resp.content).iter("{urn:ietf:params:xml:ns:caldav}calendar-data")]
    if not datas:
        return None
    events = [c for c in icalendar.Calendar.from_ical(datas[0]).walk("VEVENT")]
    return events[0]


def _delete_event(http, account, uid: str) -> None:
    import xml.etree.ElementTree as ET

    resp = http.request("REPORT", calendar_url(account), content=QUERY.format(uid=uid),
                        headers={"Depth": "1", "Content-Type": "application/xml"})
    for href in ET.fromstring(resp.content).iter("{DAV:}href"):
        http.request("DELETE", href.text)


@pytest.fixture
def cleanup(live_http, live_account):
    """made["events"] (uids) and made["rooms"] (tokens) are deleted at the end over plain HTTP."""
    made: dict[str, list[str]] = {"events": [], "rooms": []}
    yield made
    for uid in made["events"]:
        _delete_event(live_http, live_account, uid)
    for token in made["rooms"]:
        live_http.delete(f"{TALK}/room/{token}", params={"format": "json"})


def test_live_calendar_create_list_update_delete_read_back_over_caldav(live_tools, live_http, live_account,
                                                                       cleanup):
    title = f"mcp live {uuid.uuid4().hex[:8]}"
    made = live_tools.ok("calendar_create_event", {"title": title, "start": "2030-03-03T10:00 Europe/Paris",
                                                   "end": "2030-03-03T11:00 Europe/Paris", "location": "Room 1"})
    cleanup["events"].append(made["uid"])
    stored = caldav_event(live_http, live_account, made["uid"])
    assert stored is not None and str(stored["SUMMARY"]) == title
    assert stored.decoded("DTSTART").isoformat().startswith("2030-03-03T10:00:00")
    assert stored.decoded("DTSTART").utcoffset().total_seconds() == 3600     # Paris, 09:00Z
    assert str(stored["LOCATION"]) == "Room 1"

    listed = live_tools.ok("calendar_list_events", {"start": "2030-03-03", "end": "2030-03-04"})
    assert made["uid"] in [e["uid"] for e in listed["events"]]

    live_tools.ok("calendar_update_event", {"uid": made["uid"], "location": "Room 4"})
    stored = caldav_event(live_http, live_account, made["uid"])
    assert str(stored["LOCATION"]) == "Room 4" and str(stored["SUMMARY"]) == title      # the rest is kept
    assert stored.decoded("DTSTART").isoformat().startswith("2030-03-03T10:00:00")

    gone = live_tools.ok("calendar_delete_event", {"uid": made["uid"]})
    assert gone["deleted"] is True
    assert caldav_event(live_http, live_account, made["uid"]) is None


def test_live_contacts_search_finds_the_colleague_as_the_directory_has_her(live_tools, live_http, live_member):
    people = live_tools.ok("contacts_search", {"query": live_member.user})["people"]
    directory = live_http.get("/ocs/v2.php/apps/files_sharing/api/v1/sharees",
                              params={"search": live_member.user, "itemType": "file", "format": "json"}).json()
    found = directory["ocs"]["data"]
    names = {e["value"]["shareWith"]: e["label"] for e in found["exact"]["users"] + found["users"]}
    accounts = [p for p in people if p.get("accountId") == live_member.user]
    assert len(accounts) == 1 and accounts[0]["name"] == names[live_member.user]


def test_live_contacts_search_shows_the_colleague_once(live_tools, live_member, live_http, live_account,
                                                       scratch_folder):
    live_http.put(f"/remote.php/dav/files/{live_account.user}{scratch_folder}/x.md", content=b"x")
    live_tools.ok("files_share_internal", {"path": f"{scratch_folder}/x.md", "shareWith": live_member.user})
    people = live_tools.ok("contacts_search", {"query": live_member.user})["people"]
    assert len(people) == 1, people


def test_live_meet_create_room_read_back_over_talk(live_tools, live_http, live_member, cleanup):
    name = f"mcp live {uuid.uuid4().hex[:8]}"
    room = live_tools.ok("meet_create_room", {"name": name, "participants": [live_member.user]})
    cleanup["rooms"].append(room["token"])
    real = live_http.get(f"{TALK}/room/{room['token']}", params={"format": "json"}).json()["ocs"]["data"]
    assert real["displayName"] == name and real["type"] == 2          # a group room
    people = live_http.get(f"{TALK}/room/{room['token']}/participants", params={"format": "json"}).json()
    assert live_member.user in {p["actorId"] for p in people["ocs"]["data"] if p["actorType"] == "users"}
    assert room["url"].endswith(f"/call/{room['token']}")


def test_live_meet_schedule_makes_a_room_and_an_event_pointing_at_it(live_tools, live_http, live_account,
                                                                     live_member, cleanup):
    title = f"mcp live meeting {uuid.uuid4().hex[:8]}"
    out = live_tools.ok("meet_schedule", {"title": title, "start": "2030-04-02T15:00 Europe/Paris",
                                          "end": "2030-04-02T15:30 Europe/Paris",
                                          "participants": [live_member.user]})
    token = out.get("token") or out["room"]["token"]
    uid = out.get("uid") or out["event"]["uid"]
    cleanup["rooms"].append(token)
    cleanup["events"].append(uid)
    real = live_http.get(f"{TALK}/room/{token}", params={"format": "json"})
    assert real.status_code == 200 and real.json()["ocs"]["data"]["displayName"] == title
    stored = caldav_event(live_http, live_account, uid)
    assert stored is not None and str(stored["SUMMARY"]) == title
    assert f"/call/{token}" in str(stored.get("LOCATION", "")) + str(stored.get("DESCRIPTION", ""))


def test_live_a_deleted_meeting_keeps_its_room_and_says_so(live_tools, live_http, live_account, live_member,
                                                           cleanup):
    """Issue 37: the delete's answer names the room it kept (its chat cannot come back; the event can)."""
    title = f"mcp live cancelled {uuid.uuid4().hex[:8]}"
    out = live_tools.ok("meet_schedule", {"title": title, "start": "2030-04-03T15:00 Europe/Paris",
                                          "participants": [live_member.user]})
    token, uid = out["room"]["token"], out["event"]["uid"]
    cleanup["rooms"].append(token)
    gone = live_tools.ok("calendar_delete_event", {"uid": uid})
    assert gone["deleted"] is True and gone["room"] == token
    assert any(f"(token {token}) was kept" in w for w in gone["warnings"])
    assert caldav_event(live_http, live_account, uid) is None
    assert live_http.get(f"{TALK}/room/{token}", params={"format": "json"}).status_code == 200
