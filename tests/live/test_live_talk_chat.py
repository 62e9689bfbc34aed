"""talk_post / talk_read / talk_rooms on a real Nextcloud, read back over Talk's own API (plain HTTP)."""
from __future__ import annotations

import uuid

import pytest

from tests.live.live_tools import call, tool_server

ROOM = "/ocs/v2.php/apps/spreed/api/v4/room"
CHAT = "/ocs/v2.php/apps/spreed/api/v1/chat"


@pytest.fixture
def room(live_http, live_member):
    """A uniquely named group room with the colleague in it, deleted at the end."""
    name = f"mcp-live-chat-{uuid.uuid4().hex[:8]}"
    resp = live_http.post(ROOM, json={"roomType": 2, "roomName": name})
    assert resp.status_code == 201, resp.text
    token = resp.json()["ocs"]["data"]["token"]
    try:
        added = live_http.post(f"{ROOM}/{token}/participants", json={"newParticipant": live_member.user,
                                                                      "source": "users"})
        assert added.status_code == 200, added.text
        yield token, name
    finally:
        live_http.delete(f"{ROOM}/{token}")


@pytest.fixture
def server(live_account):
    yield from tool_server(live_account)


def test_live_a_posted_message_is_read_back_over_talk_and_by_talk_read(server, room, live_http, live_member):
    token, _ = room
    text = f"Kickoff notes {uuid.uuid4().hex[:6]} are in /Projects/notes.md"
    posted = call(server, "talk_post", {"token": token, "message": text, "mentions": [live_member.user]})
    assert posted["mentioned"] == [live_member.user]
    raw = live_http.get(f"{CHAT}/{token}", params={"lookIntoFuture": 0, "limit": 5}).json()["ocs"]["data"]
    assert raw[0]["id"] == posted["id"]
    assert raw[0]["message"] == "{mention-user1} " + text                     # Talk resolved the mention
    assert raw[0]["messageParameters"]["mention-user1"]["id"] == live_member.user
    read = call(server, "talk_read", {"token": token, "limit": 5})
    first = read["messages"][0]
    assert first["id"] == posted["id"] and first["accountId"] == live_account_user(live_http)
    assert first["text"].endswith(text) and first["text"].startswith("@")
    assert any("system" in m and "created the conversation" in m["system"] for m in read["messages"])


def live_account_user(live_http) -> str:
    return live_http.get("/ocs/v2.php/cloud/user").json()["ocs"]["data"]["id"]


def test_live_paging_back_with_the_cursor_reaches_the_first_message(server, room):
    token, _ = room
    for i in range(3):
        call(server, "talk_post", {"token": token, "message": f"m{i}"})
    page = call(server, "talk_read", {"token": token, "limit": 2})
    assert [m["text"] for m in page["messages"]] == ["m2", "m1"] and page["truncated"] is True
    rest = call(server, "talk_read", {"token": token, "limit": 10, "cursor": page["nextCursor"]})
    assert rest["messages"][0]["text"] == "m0" and rest["truncated"] is False


def test_live_rooms_found_by_name_and_by_participant(server, room, live_member):
    token, name = room
    assert token in {r["token"] for r in call(server, "talk_rooms", {"query": name})["rooms"]}
    display = "Élodie" if live_member.user == "elodie" else live_member.user
    assert token in {r["token"] for r in call(server, "talk_rooms", {"query": display, "limit": 100})["rooms"]}


def test_live_a_mention_is_resolved_among_the_rooms_participants_first(server, live_http, live_member,
                                                                       throwaway_account):
    """Issue 37: with a second Élodie on the server, "Élodie" in a one-to-one with Élodie Martin is her (before,
    it was refused as ambiguous across the whole server)."""
    other = throwaway_account(first_login=True)
    import httpx

    password = throwaway_account.password_of(other.user)   # changing one's name asks for the login password
    with httpx.Client(base_url=other.url, auth=(other.user, password), timeout=60,
                      headers={"OCS-APIRequest": "true"}) as own:   # the user names themself (provisioning API)
        renamed = own.put(f"/ocs/v2.php/cloud/users/{other.user}", data={"key": "displayname",
                                                                         "value": "Élodie Dupont"})
        assert renamed.status_code == 200, renamed.text
    found = call(server, "contacts_search", {"query": "Élodie"})["people"]
    assert {live_member.user, other.user} <= {p.get("accountId") for p in found}   # two Élodies on the server
    made = live_http.post(ROOM, json={"roomType": 1, "invite": live_member.user})
    assert made.status_code in (200, 201), made.text
    token = made.json()["ocs"]["data"]["token"]
    try:
        posted = call(server, "talk_post", {"token": token, "message": f"@Élodie ping {uuid.uuid4().hex[:6]}",
                                            "mentions": ["Élodie"]})
        assert posted["mentioned"] == [live_member.user]
        raw = live_http.get(f"{CHAT}/{token}", params={"lookIntoFuture": 0, "limit": 5}).json()["ocs"]["data"]
        assert raw[0]["id"] == posted["id"]
        assert raw[0]["messageParameters"]["mention-user1"]["id"] == live_member.user
    finally:
        live_http.delete(f"{ROOM}/{token}/participants/self")   # a one-to-one is left, not deleted (400)
