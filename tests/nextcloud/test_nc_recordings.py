"""Parsing real Nextcloud 34 answers (../shared/nextcloud-34, skipped where absent)."""
from __future__ import annotations

import httpx
import pytest

from mcp_nextcloud.nextcloud.caldav import calendars_from_multistatus, events_from_ics
from mcp_nextcloud.nextcloud.carddav import address_books_from_multistatus, contact_from_vcard
from mcp_nextcloud.nextcloud.davxml import CALDAV, CARDDAV, OC, parse_multistatus, q
from mcp_nextcloud.nextcloud.deck import card_from_json, stack_from_json
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.nextcloud.http import Transport, ocs_statuscode, response_detail
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.ocs import share_from_ocs, sharees_from_ocs, user_from_ocs
from mcp_nextcloud.nextcloud.talk import message_from_json, room_from_json
from mcp_nextcloud.nextcloud.webdav import item_from_response, parse_fileid

ADMIN = "/remote.php/dav/files/admin"


def _items(body: str, prefix: str = ADMIN):
    return [item_from_response(r, prefix) for r in parse_multistatus(body)]


def _response(ex: dict) -> httpx.Response:
    return httpx.Response(ex["status"], headers=ex.get("response_headers") or {},
                          content=(ex.get("response_body") or "").encode("utf-8"))


@pytest.fixture
def transport():
    t = Transport(Account(url="http://nextcloud.test", user="admin", app_password="pw-not-used"))
    yield t
    t.close()


def test_propfind_depth1_folder_and_children(recorded):
    items = _items(recorded("webdav", 22)["response_body"])
    folder, children = items[0], items[1:]
    assert folder.path == "/Projects/Alpha" and folder.is_dir and folder.mime is None
    assert folder.file_id == 119 and folder.etag == "6b0cc9832a198" and folder.size == 29389
    notes = next(i for i in children if i.name == "notes.md")
    assert (notes.path, notes.file_id, notes.size, notes.mime) == (
        "/Projects/Alpha/notes.md", 123, 107, "text/markdown")
    assert len(notes.etag) == 32 and '"' not in notes.etag
    assert notes.permissions == "RGDNVW" and not notes.is_dir
    assert notes.mtime == pytest.approx(1796000127.0)   # Mon, 30 Nov 2026 00:55:27 GMT


def test_lower_case_hex_href_is_decoded(recorded):
    ex = recorded("webdav", 23)
    assert "%c3%a9" in ex["response_body"]
    names = [i.name for i in _items(ex["response_body"])]
    assert "Résumé final.md" in names


def test_admin_on_alice_keeps_404_propstat_out(recorded):
    responses = parse_multistatus(recorded("webdav", 32)["response_body"])
    assert q(OC, "fileid") in responses[0].missing
    item = item_from_response(responses[0], "/remote.php/dav/files/alice")
    assert item.path == "/" and item.is_dir and item.file_id is None and item.etag == ""


def test_hrefs_outside_the_prefix_are_ignored(recorded):
    items = _items(recorded("webdav", 22)["response_body"], prefix="/remote.php/dav/files/bob")
    assert items and all(i is None for i in items)


def test_search_answers(recorded):
    found = _items(recorded("webdav", 57)["response_body"])
    assert [(i.path, i.file_id) for i in found] == [("/Projects/Alpha/notes.md", 123)]
    assert _items(recorded("webdav", 60)["response_body"]) == []
    many = _items(recorded("webdav", 46)["response_body"])
    assert many and all(i.mime.startswith("image/") for i in many)


def test_put_headers_give_fileid_and_etag(recorded):
    headers = recorded("webdav", 10)["response_headers"]
    assert parse_fileid(headers["oc-fileid"]) > 0
    assert parse_fileid("00000123ocnctest0000") == 123 and parse_fileid("123") == 123


@pytest.mark.parametrize("seq,kind,needle", [
    (76, "not_found", "files_search"),          # PUT into a missing parent (without the PUT condition)
    (73, "precondition", "re-read"),
    (83, "locked", "locked"),
    (96, "quota", "do not retry"),
    (1, "auth", "mcp-nextcloud login"),
    (31, "not_found", "do not guess"),
    (58, "bad_request", "not searchable"),
    (59, "server", "retry once"),
])
def test_recorded_dav_errors_map_to_the_table(recorded, transport, seq, kind, needle):
    ex = recorded("webdav", seq)
    err = transport.error_from(_response(ex), source="webdav", path="/p")
    assert err.code is ErrorCode.parse(kind) and err.status == ex["status"]
    assert needle.lower() in str(err).lower()
    assert "remote.php" not in str(err) and "nextcloud.test" not in str(err)


def test_missing_parent_put_row(recorded, transport):
    err = transport.error_from(_response(recorded("webdav", 76)), source="webdav", path="/Projects/Gamma/file.txt",
                               condition="missing_parent")
    assert err.code is ErrorCode.MISSING_PARENT and "does not create intermediates" in str(err)
    assert "/Projects/Gamma/file.txt" in str(err)


def test_ocs_user_json_and_xml(recorded):
    data = httpx.Response(200, content=recorded("ocs", 1)["response_body"].encode()).json()["ocs"]["data"]
    user = user_from_ocs(data)
    assert user.id == "admin" and user.display_name == "admin" and user.groups == ["admin"]
    assert user.quota["quota"] == -3
    body = recorded("ocs", 2)["response_body"].encode()
    alice = user_from_ocs(httpx.Response(200, content=body).json()["ocs"]["data"])
    assert alice.display_name == "Alice Test" and alice.email == "alice@example.invalid"
    assert ocs_statuscode(_response(recorded("ocs", 3))) == 200   # the XML envelope


def test_ocs_sharees_and_shares(recorded):
    sharees = sharees_from_ocs(_response(recorded("ocs", 8)).json()["ocs"]["data"])
    assert [(s.id, s.label, s.kind) for s in sharees] == [("alice", "Alice Test", "user")]
    assert sharees_from_ocs(_response(recorded("ocs", 10)).json()["ocs"]["data"]) == []
    share = share_from_ocs(_response(recorded("ocs", 11)).json()["ocs"]["data"])
    assert (share.id, share.path, share.share_with, share.permissions, share.share_type) == \
        ("5", "/Projects/Alpha/notes.md", "alice", 1, 0)


def test_ocs_error_detail(recorded, transport):
    err = transport.error_from(_response(recorded("ocs", 14)), source="ocs", path="/Projects/Alpha/notes.md")
    assert err.code is ErrorCode.NOT_FOUND and "valid account" in str(err)


def test_deck_json(recorded):
    stacks = [stack_from_json(s) for s in _response(recorded("deck", 19)).json()]
    todo = next(s for s in stacks if s.title == "To do")
    card9 = next(c for c in todo.cards if c.id == 9)
    assert card9.assigned_users == ["alice"] and card9.owner == "admin"
    card8 = next(c for c in todo.cards if c.id == 8)
    assert card8.duedate.startswith("2026-12-15") and [lbl.title for lbl in card8.labels] == ["urgent"]
    moved = [card_from_json(c) for c in _response(recorded("deck", 31)).json()]
    assert {c.stack_id for c in moved} == {8} and all(c.owner == "admin" for c in moved)


def test_deck_missing_card_is_a_clear_403(recorded, transport):
    err = transport.error_from(_response(recorded("deck", 52)), source="deck", path="card 999999")
    assert err.code is ErrorCode.FORBIDDEN and "do not guess" in str(err).lower()


def test_talk_json(recorded):
    room = room_from_json(_response(recorded("talk", 1)).json()["ocs"]["data"], "http://nextcloud.test")
    assert (room.token, room.name, room.kind) == ("4txbfbrs", "Project Alpha", "group")
    assert room.url == "http://nextcloud.test/index.php/call/4txbfbrs"
    msg = message_from_json(_response(recorded("talk", 17)).json()["ocs"]["data"])
    assert msg.actor_id == "admin" and "notes.md" in msg.message


def test_talk_unknown_user_is_not_app_missing(recorded, transport):
    err = transport.error_from(_response(recorded("talk", 4)), source="talk", path="room 4txbfbrs")
    assert err.code is ErrorCode.NOT_FOUND and "new-participant" in str(err)


@pytest.mark.parametrize("seq", [1, 4, 5])
def test_missing_mail_app(recorded, transport, seq):
    err = transport.error_from(_response(recorded("apps-missing", seq)), source="mail")
    assert err.code is ErrorCode.APP_MISSING and "Mail app is not installed" in str(err)
    assert "do not retry" in str(err).lower()


def test_calendar_list_and_events(recorded):
    cals = calendars_from_multistatus(recorded("caldav", 13)["response_body"])
    work = next(c for c in cals if c.id == "work")
    assert work.name == "Work" and "VEVENT" in work.components and work.writable
    plain = parse_multistatus(recorded("caldav", 15)["response_body"])
    events = [e for r in plain for e in events_from_ics(r.text(CALDAV, "calendar-data"), "work")]
    standup = [e for e in events if e.rrule]
    assert len(standup) == 1 and "WEEKLY" in standup[0].rrule
    expanded = parse_multistatus(recorded("caldav", 16)["response_body"])
    instances = [e for r in expanded for e in events_from_ics(r.text(CALDAV, "calendar-data"), "work")]
    assert sum(1 for e in instances if e.recurrence_id) >= 2 and not any(e.rrule for e in instances)
    review = next(e for e in instances if e.summary == "Budget review")
    assert review.location == "Room 101" and review.start.hour == 9 and not review.all_day
    alpha = next(e for e in instances if e.uid == "work-meeting-alice@nextcloud.test")
    assert alpha.organizer == "admin@example.invalid" and "alice@example.invalid" in alpha.attendees


def test_address_books_and_contacts(recorded):
    books = address_books_from_multistatus(recorded("carddav", 7)["response_body"])
    assert any(b.id == "contacts" and not b.system for b in books)
    assert any(b.system for b in books)
    hits = parse_multistatus(recorded("carddav", 10)["response_body"])
    contacts = [contact_from_vcard(r.text(CARDDAV, "address-data"), "contacts") for r in hits]
    assert [c.name for c in contacts] == ["Élodie Müller"] and contacts[0].emails


def test_response_detail_never_carries_urls(recorded):
    ex = recorded("webdav", 1)
    detail = response_detail(_response(ex))
    err = NextcloudError(ErrorCode.AUTH, "x")
    assert detail and err.code is ErrorCode.AUTH
    from mcp_nextcloud.nextcloud.errors import clean_detail
    assert "http://" not in clean_detail("see http://nextcloud.test/remote.php/dav/files/admin/x now")
