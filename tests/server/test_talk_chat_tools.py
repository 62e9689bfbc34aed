"""talk_rooms, talk_read and talk_post through the real MCP server against the emulator's Talk."""
from __future__ import annotations


def _messages(pim, token: str, user: str = "alice") -> list[dict]:
    with pim.http(user, ocs=True) as client:
        resp = client.get(f"/ocs/v2.php/apps/spreed/api/v1/chat/{token}",
                          params={"format": "json", "lookIntoFuture": 0, "limit": 50})
        assert resp.status_code == 200, resp.text
        return resp.json()["ocs"]["data"]


def _room(pim, ok, name: str, participants: list[str] | None = None) -> str:
    return ok(pim.call("meet_create_room", {"name": name, "participants": participants or ["bob"]}))["token"]


def test_a_posted_message_is_read_back_over_talk_and_by_talk_read(pim, ok):
    token = _room(pim, ok, "Chat one")
    posted = ok(pim.call("talk_post", {"token": token, "message": "Kickoff notes are in /Projects/notes.md"}))
    assert posted["token"] == token and posted["id"] > 0
    raw = _messages(pim, token, user="bob")
    assert raw[0]["id"] == posted["id"] and raw[0]["message"] == "Kickoff notes are in /Projects/notes.md"
    read = ok(pim.call("talk_read", {"token": token}, user="bob"))
    first = read["messages"][0]
    assert first["text"] == "Kickoff notes are in /Projects/notes.md"
    assert first["accountId"] == "alice" and first["from"] == "Alice Test" and first["id"] == posted["id"]


def test_system_messages_are_folded_into_one_line(pim, ok):
    token = _room(pim, ok, "Chat folded")
    ok(pim.call("talk_post", {"token": token, "message": "hello"}))
    read = ok(pim.call("talk_read", {"token": token}))
    assert [("system" in m) for m in read["messages"]] == [False, True]
    line = read["messages"][1]["system"]
    assert "created the conversation" in line and "Bob" in line   # "You added {user}" rendered with the name
    assert read["truncated"] is False and "nextCursor" not in read


def test_reading_pages_back_with_the_cursor(pim, ok):
    token = _room(pim, ok, "Chat paged")
    ids = [ok(pim.call("talk_post", {"token": token, "message": f"m{i}"}))["id"] for i in range(5)]
    page = ok(pim.call("talk_read", {"token": token, "limit": 2}))
    assert [m["text"] for m in page["messages"]] == ["m4", "m3"] and page["truncated"] is True
    assert page["nextCursor"] == str(ids[3])
    rest = ok(pim.call("talk_read", {"token": token, "limit": 10, "cursor": page["nextCursor"]}))
    assert [m.get("text") for m in rest["messages"][:3]] == ["m2", "m1", "m0"]
    assert rest["truncated"] is False


def test_since_in_the_future_reads_nothing_and_says_so(pim, ok):
    token = _room(pim, ok, "Chat since")
    ok(pim.call("talk_post", {"token": token, "message": "old news"}))
    read = ok(pim.call("talk_read", {"token": token, "since": "2099-01-01"}))
    assert read["messages"] == [] and read["since"].startswith("2099-01-01") and "No messages" in read["hint"]


def test_a_mention_by_name_becomes_talks_account_mention(pim, ok):
    token = _room(pim, ok, "Chat mention")
    posted = ok(pim.call("talk_post", {"token": token, "message": "@Bob Builder please review",
                                       "mentions": ["Bob Builder"]}))
    assert posted["mentioned"] == ["bob"]
    raw = _messages(pim, token)[0]
    assert raw["message"] == "{mention-user1} please review"
    assert raw["messageParameters"]["mention-user1"]["id"] == "bob"
    assert ok(pim.call("talk_read", {"token": token}))["messages"][0]["text"].startswith("@Bob")


def test_a_mention_not_in_the_text_is_put_in_front(pim, ok):
    token = _room(pim, ok, "Chat mention 2")
    ok(pim.call("talk_post", {"token": token, "message": "see above", "mentions": ["bob"]}))
    raw = _messages(pim, token)[0]
    assert raw["message"] == "{mention-user1} see above"


def test_rooms_found_by_name_and_by_participant(pim, ok):
    alpha = _room(pim, ok, "Quokka planning", ["bob"])
    ok(pim.call("meet_create_room", {"name": "Solo notes", "participants": []}))
    by_name = ok(pim.call("talk_rooms", {"query": "quokka"}))["rooms"]
    assert [r["token"] for r in by_name] == [alpha]
    by_member = {r["token"] for r in ok(pim.call("talk_rooms", {"query": "Bob"}))["rooms"]}
    assert alpha in by_member
    assert all(r["name"] != "Solo notes" for r in ok(pim.call("talk_rooms", {"query": "Bob"}))["rooms"])
    none = ok(pim.call("talk_rooms", {"query": "zzz-nothing"}))
    assert none["rooms"] == [] and "meet_create_room" in none["hint"]


def test_an_unknown_room_says_what_to_do(pim, err):
    text = err(pim.call("talk_read", {"token": "zzzzzzzz"}))
    assert "talk_rooms" in text and "Do not repeat this call unchanged" in text


def test_long_messages_page_instead_of_flooding_the_answer(pim, ok):
    token = _room(pim, ok, "Chat long")
    for i in range(3):
        ok(pim.call("talk_post", {"token": token, "message": f"{i}" + "x" * 25_000}))
    read = ok(pim.call("talk_read", {"token": token, "limit": 10}))
    assert len(read["messages"]) == 1 and read["truncated"] is True and read["messages"][0]["text"][0] == "2"
    rest = ok(pim.call("talk_read", {"token": token, "cursor": read["nextCursor"]}))
    assert rest["messages"][0]["text"][0] == "1"


def test_a_mention_is_resolved_among_the_rooms_participants_first(pim_factory, ok, err):
    """Issue 37: two accounts are called Bob; in a room with one of them, "Bob" is that one. Outside any room's
    participants, the account's contacts and directory decide (and two Bobs there are still ambiguous)."""
    from tests.server.test_contacts_tools import _users

    pim = pim_factory(users=_users())
    token = ok(pim.call("meet_create_room", {"name": "With Bob Marley", "participants": ["robert"]}))["token"]
    posted = ok(pim.call("talk_post", {"token": token, "message": "@Bob see you", "mentions": ["Bob"]}))
    assert posted["mentioned"] == ["robert"]
    assert _messages(pim, token)[0]["messageParameters"]["mention-user1"]["id"] == "robert"
    outsider = ok(pim.call("talk_post", {"token": token, "message": "cc", "mentions": ["Bob Builder"]}))
    assert outsider["mentioned"] == ["bob"]                        # not in the room: the directory decides
    both = ok(pim.call("meet_create_room", {"name": "Two Bobs", "participants": ["robert", "bob"]}))["token"]
    text = err(pim.call("talk_post", {"token": both, "message": "hi", "mentions": ["Bob"]}))
    assert "several participants of this conversation" in text and "robert" in text and "bob" in text
