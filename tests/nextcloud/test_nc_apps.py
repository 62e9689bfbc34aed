"""OCS, CalDAV, CardDAV, Deck, Talk and Mail calls against the emulator (default seed)."""
from __future__ import annotations

from datetime import date, datetime, timezone

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

DEC = (datetime(2026, 12, 1, tzinfo=timezone.utc), datetime(2027, 1, 1, tzinfo=timezone.utc))


# -- OCS -----------------------------------------------------------------------------------

def test_whoami_capabilities_version(nc, emulator):
    me = nc.ocs.current_user()
    assert (me.id, me.display_name, me.email) == ("alice", "Alice Test", "alice@example.invalid")
    assert isinstance(me.quota, dict)
    emulator.reset_requests()
    caps = nc.ocs.capabilities()
    assert "files" in caps and nc.ocs.server_version().startswith("34.")
    nc.ocs.capabilities()
    assert emulator.request_count("GET", "/ocs/v2.php/cloud/capabilities") == 1   # cached


def test_apps_available(nc):
    apps = nc.ocs.apps_available()
    assert apps == {"deck": True, "spreed": True, "talk": True, "calendar": True, "contacts": True, "mail": True}


def test_apps_missing(emulator_factory):
    emu = emulator_factory(apps={"calendar", "contacts"})
    with NextcloudClient(Account(**emu.account("alice")), backoff=0.01) as nc:
        apps = nc.ocs.apps_available()
        assert not apps["deck"] and not apps["talk"] and not apps["mail"]
        for call, app in ((nc.deck.boards, "Deck"), (nc.talk.rooms, "Talk"), (nc.mail.accounts, "Mail")):
            with pytest.raises(NextcloudError) as exc:
                call()
            assert exc.value.code is ErrorCode.APP_MISSING and f"{app} app is not installed" in str(exc.value)
            assert "do not retry" in str(exc.value).lower() and not exc.value.retry


def test_sharees_and_shares(nc):
    sharees = nc.ocs.sharees("bo")
    assert [(s.id, s.label, s.kind) for s in sharees] == [("bob", "Bob Builder", "user")]
    assert nc.ocs.sharees("zzz") == []
    share = nc.ocs.create_share("/Projects/Alpha/notes.md", "bob", permissions=1)
    again = nc.ocs.create_share("/Projects/Alpha/notes.md", "bob", permissions=1)
    assert share.id == again.id and share.share_with == "bob" and share.permissions == 1
    assert [s.id for s in nc.ocs.list_shares("/Projects/Alpha/notes.md")] == [share.id]
    with pytest.raises(NextcloudError) as unknown:
        nc.ocs.create_share("/Projects/Alpha/notes.md", "nosuchuser")
    assert unknown.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(NextcloudError) as missing:
        nc.ocs.create_share("/No/such.txt", "bob")
    assert missing.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(NextcloudError) as yourself:
        nc.ocs.create_share("/Projects/Alpha/notes.md", "alice")
    assert yourself.value.code is ErrorCode.FORBIDDEN and yourself.value.status == 403
    assert "do not retry" in str(yourself.value).lower() and "yourself" in str(yourself.value)
    nc.ocs.delete_share(share.id)
    assert nc.ocs.list_shares("/Projects/Alpha/notes.md") == []


def test_update_share_changes_permissions_both_ways(nc, emulator):
    emulator.state.put_file("alice", "/share-update.txt", b"to be shared")
    share = nc.ocs.create_share("/share-update.txt", "bob", permissions=1)
    edit = nc.ocs.update_share(share.id, permissions=3)
    assert (edit.id, edit.permissions, edit.share_with) == (share.id, 3, "bob")
    assert emulator.state.shares[int(share.id)].permissions == 3          # the server holds it, not just the answer
    back = nc.ocs.update_share(share.id, permissions=1)
    assert back.permissions == 1
    assert [s.permissions for s in nc.ocs.list_shares("/share-update.txt")] == [1]
    with pytest.raises(NextcloudError) as gone:
        nc.ocs.update_share("987654", permissions=3)
    assert gone.value.code is ErrorCode.NOT_FOUND and "do not repeat this call unchanged" in str(gone.value).lower()

def test_user_id_is_lazy_and_resolvable(emulator):
    acct = emulator.account("alice")
    # A plain login name is used as the DAV user id without a request; resolve_user_id asks OCS.
    client = NextcloudClient(Account(acct["url"], "alice", acct["app_password"], user_id=None), backoff=0.01)
    assert client.user_id == "alice" and client.request_count == 0
    assert client.resolve_user_id() == "alice" and client.request_count == 1
    client.close()


def test_wrong_user_id_is_corrected_once(emulator):
    acct = emulator.account("alice")
    # A stale saved user id: the first DAV 404 makes the client ask OCS once, then it uses the right id.
    with NextcloudClient(Account(acct["url"], "alice", acct["app_password"], user_id="ghost"), backoff=0.01) as nc:
        assert nc.webdav.stat("/Projects").is_dir
        assert nc.user_id == "alice"
        emulator.reset_requests()
        with pytest.raises(NextcloudError):
            nc.webdav.stat("/No/such")
        assert emulator.request_count("GET", "/ocs/") == 0     # verified already: a 404 is just a 404


# -- CalDAV --------------------------------------------------------------------------------

def test_calendars(nc):
    cals = {c.id: c for c in nc.caldav.calendars()}
    assert {"personal", "work"} <= set(cals)
    assert cals["work"].name == "Work" and "VEVENT" in cals["work"].components


def test_events_with_and_without_expand(nc):
    plain = nc.caldav.events("work", *DEC)
    standup = [e for e in plain if "standup" in e.summary.lower()]
    assert len(standup) == 1 and standup[0].rrule and standup[0].object_name
    expanded = nc.caldav.events("work", *DEC, expand=True)
    instances = [e for e in expanded if "standup" in e.summary.lower()]
    assert len(instances) >= 4 and all(e.recurrence_id for e in instances)
    assert all(e.rrule is None for e in instances)
    starts = [e.start for e in expanded if isinstance(e.start, datetime)]
    assert starts == sorted(starts)
    review = next(e for e in plain if e.summary == "Budget review")
    assert review.start == datetime(2026, 12, 3, 9, tzinfo=timezone.utc) and review.location == "Room 101"


def test_event_crud_with_if_match(nc):
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:crud-1@test\r\n"
           "DTSTAMP:20261130T080000Z\r\nDTSTART:20261215T100000Z\r\nDTEND:20261215T110000Z\r\n"
           "SUMMARY:Dentist\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    nc.caldav.put_event("work", ics)
    ev = nc.caldav.get_event("work", "crud-1@test")
    assert ev.summary == "Dentist" and ev.etag and ev.object_name == "crud-1@test.ics"
    with pytest.raises(NextcloudError) as dup:
        nc.caldav.put_event("work", ics)            # create-only: it exists now
    assert dup.value.code is ErrorCode.EXISTS
    new_etag = nc.caldav.put_event("work", ics.replace("Dentist", "Dentist (moved)"), etag=ev.etag,
                                   object_name=ev.object_name)
    with pytest.raises(NextcloudError) as stale:
        nc.caldav.put_event("work", ics, etag=ev.etag, object_name=ev.object_name)
    assert stale.value.code is ErrorCode.PRECONDITION
    assert nc.caldav.get_event("work", "crud-1@test").summary == "Dentist (moved)"
    with pytest.raises(NextcloudError):
        nc.caldav.delete_event("work", ev.object_name, etag=ev.etag)      # stale etag
    nc.caldav.delete_event("work", ev.object_name, etag=new_etag or None)
    with pytest.raises(NextcloudError) as gone:
        nc.caldav.get_event("work", "crud-1@test")
    assert gone.value.code is ErrorCode.NOT_FOUND


def test_all_day_dates(nc):
    ics = ("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:allday@test\r\n"
           "DTSTAMP:20261130T080000Z\r\nDTSTART;VALUE=DATE:20261224\r\nDTEND;VALUE=DATE:20261225\r\n"
           "SUMMARY:Closed\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
    nc.caldav.put_event("personal", ics)
    ev = next(e for e in nc.caldav.events("personal", *DEC) if e.uid == "allday@test")
    assert ev.all_day and ev.start == date(2026, 12, 24)


def test_calendar_errors(nc):
    with pytest.raises(NextcloudError) as exc:
        nc.caldav.events("nosuchcal", *DEC)
    assert exc.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(NextcloudError) as bad:
        nc.caldav.events("../bob", *DEC)
    assert bad.value.code is ErrorCode.BAD_PATH


# -- CardDAV -------------------------------------------------------------------------------

def test_address_books_and_search(nc):
    books = {b.id: b for b in nc.carddav.address_books()}
    assert "contacts" in books and not books["contacts"].system
    hits = nc.carddav.search("müller")
    assert [c.name for c in hits] == ["Élodie Müller"] and hits[0].uid and hits[0].emails
    assert {c.name for c in nc.carddav.search("builder")} >= {"Bob Builder"}
    assert nc.carddav.search("zzzz-nobody") == []


# -- Deck ----------------------------------------------------------------------------------

def _board(nc):
    board = next(b for b in nc.deck.boards() if b.title == "Product Launch")
    stacks = {s.title: s for s in nc.deck.stacks(board.id)}
    return board, stacks


def test_deck_boards_and_stacks(nc):
    board, stacks = _board(nc)
    assert list(stacks) == ["To do", "In progress", "Done"]
    todo = stacks["To do"]
    assert [c.order for c in todo.cards] == sorted(c.order for c in todo.cards)
    press = next(c for c in todo.cards if c.title == "Write press release")
    assert press.duedate and [lbl.title for lbl in press.labels] == ["urgent"]


def test_deck_update_keeps_other_fields(nc):
    board, stacks = _board(nc)
    press = next(c for c in stacks["To do"].cards if c.title == "Write press release")
    updated = nc.deck.update_card(board.id, press.stack_id, press.id, title="Write the press release")
    assert updated.title == "Write the press release"
    again = nc.deck.card(board.id, press.stack_id, press.id)
    assert again.duedate == press.duedate and again.description == press.description   # not cleared
    with pytest.raises(NextcloudError) as bad:
        nc.deck.update_card(board.id, press.stack_id, press.id, colour="red")
    assert bad.value.code is ErrorCode.BAD_REQUEST


def test_deck_create_and_move_verified(nc):
    board, stacks = _board(nc)
    card = nc.deck.create_card(board.id, stacks["To do"].id, "Ship it", description="soon")
    assert card.stack_id == stacks["To do"].id and card.title == "Ship it"
    moved = nc.deck.move_card(board.id, card.id, stacks["Done"].id, 0)
    assert moved.stack_id == stacks["Done"].id
    done = {s.title: s for s in nc.deck.stacks(board.id)}["Done"]
    assert done.cards[0].id == card.id
    nc.deck.delete_card(board.id, done.id, card.id)


def test_deck_missing_ids(nc):
    with pytest.raises(NextcloudError) as exc:
        nc.deck.board(999999)
    assert exc.value.code is ErrorCode.FORBIDDEN and "do not guess" in str(exc.value).lower()


# -- Talk ----------------------------------------------------------------------------------

def test_talk_rooms_participants_chat(nc):
    rooms = nc.talk.rooms()
    alpha = next(r for r in rooms if r.name == "Project Alpha")
    assert alpha.kind == "group" and alpha.url.endswith("/index.php/call/" + alpha.token)
    assert nc.talk.room(alpha.token).token == alpha.token
    room = nc.talk.create_room("Launch crew")
    assert room.kind == "group" and room.token
    nc.talk.add_participant(room.token, "bob")
    nc.talk.add_participant(room.token, "bob")     # twice is harmless
    assert {p.id for p in nc.talk.participants(room.token)} == {"alice", "bob"}
    msg = nc.talk.post_message(room.token, "Kickoff at 10")
    assert msg.message == "Kickoff at 10" and msg.actor_id == "alice"
    assert any(m.id == msg.id for m in nc.talk.messages(room.token, limit=5))
    with pytest.raises(NextcloudError) as missing:
        nc.talk.room("zzzzzzzz")
    assert missing.value.code is ErrorCode.NOT_FOUND
    with pytest.raises(NextcloudError) as unknown:
        nc.talk.add_participant(room.token, "nosuchuser")
    assert unknown.value.code is ErrorCode.NOT_FOUND


def test_talk_one_to_one_is_reused(nc):
    first = nc.talk.create_room(room_type=1, invite="bob")
    second = nc.talk.create_room(room_type=1, invite="bob")
    assert first.token == second.token and first.kind == "one_to_one"


# -- Mail ----------------------------------------------------------------------------------

def test_mail_accounts_mailboxes_messages(nc):
    account = nc.mail.accounts()[0]
    assert account.email == "alice@example.invalid"
    boxes = nc.mail.mailboxes(account.id)
    inbox = next(b for b in boxes if "inbox" in b.special_use)
    latest = nc.mail.messages(inbox.id, limit=3)
    assert len(latest) == 3 and latest[0].date >= latest[-1].date
    welcome = nc.mail.messages(inbox.id, limit=50, filters={"subject": "welcome"})
    assert welcome and all("welcome" in m.subject.lower() for m in welcome)
    full = nc.mail.message(latest[0].id)
    assert full.body and full.subject == latest[0].subject
    with pytest.raises(NextcloudError) as bad:
        nc.mail.messages(inbox.id, filters={"words": "x"})
    assert bad.value.code is ErrorCode.BAD_REQUEST


def test_mail_send_is_not_retried(nc, emulator):
    account = nc.mail.accounts()[0]
    emulator.faults.add(method="POST", path_prefix="/ocs/v2.php/apps/mail/message/send", status=503)
    emulator.reset_requests()
    with pytest.raises(NextcloudError):
        nc.mail.send(account.id, account.email, ["bob@example.invalid"], "Hi", "Body")
    assert emulator.request_count("POST", "/ocs/v2.php/apps/mail/message/send") == 1
    nc.mail.send(account.id, account.email, ["bob@example.invalid"], "Hi", "Body")


# -- what the calendar, contacts and Talk tools add ------------------------------------------

def test_principal_addresses_with_and_without_email(nc, emulator):
    me = nc.caldav.principal()
    assert me.email == "alice@example.invalid" and me.display_name == "Alice Test"
    assert me.addresses[-1] == "/remote.php/dav/principals/users/alice/"
    with NextcloudClient(Account(**emulator.account("admin"))) as admin:
        assert admin.caldav.principal().email is None   # no e-mail: only the principal URL (caldav #3)


def test_raw_objects_between_and_by_uid(nc):
    found = nc.caldav.objects_between("work", *DEC)
    names = {o.name for o in found}
    assert "weekly-standup.ics" in names and all(o.etag and "BEGIN:VCALENDAR" in o.ics for o in found)
    series = next(o for o in found if o.name == "weekly-standup.ics")
    assert "RRULE:" in series.ics and "TZID=Europe/Berlin" in series.ics     # stored as is, not expanded
    assert nc.caldav.object_by_uid("work", "work-weekly-standup@nextcloud.test").name == "weekly-standup.ics"
    assert nc.caldav.object_by_uid("work", "nope@test") is None


def test_cards_are_every_contact_reduced_to_searchable_fields(nc):
    cards = {c.name: c for c in nc.carddav.cards("contacts")}
    assert set(cards) == {"Élodie Müller", "Bob Builder", "Chen Wei", "José García"}
    assert cards["Élodie Müller"].structured_name == "Élodie Müller"
    accounts = {c.uid: c for c in nc.carddav.cards("z-server-generated--system")}
    assert accounts["bob"].emails == ["bob@example.invalid"]


def test_talk_guests_and_delete(nc):
    room = nc.talk.create_room("Guests welcome")
    assert nc.talk.allow_guests(room.token).kind == "public"
    assert nc.talk.allow_guests(room.token).kind == "public"   # already public is fine
    nc.talk.delete_room(room.token)
    assert room.token not in {r.token for r in nc.talk.rooms()}
