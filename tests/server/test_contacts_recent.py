"""A share's "Recently contacted" card is the account it was made for, not a second person (issue 22 item 8a)."""
from __future__ import annotations

RECENT = "/remote.php/dav/addressbooks/users/alice/z-app-generated--contactsinteraction--recent/"
QUERY = ('<card:addressbook-query xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav"><d:prop>'
         "<card:address-data/></d:prop></card:addressbook-query>")


def _recent_cards(pim) -> str:
    with pim.http() as client:
        resp = client.request("REPORT", RECENT, headers={"Depth": "1", "Content-Type": "application/xml"},
                              content=QUERY)
    assert resp.status_code == 207
    return resp.text


def test_the_emulator_records_a_share_in_recently_contacted_as_the_server_does(pim, ok):
    assert "BEGIN:VCARD" not in _recent_cards(pim)
    ok(pim.call("files_share_internal", {"path": "/Projects/Beta/todo.txt", "shareWith": "bob"}))
    ok(pim.call("files_share_internal", {"path": "/Projects/Beta/todo.txt", "shareWith": "bob"}))
    text = _recent_cards(pim)
    # As recorded on Nextcloud 34: FN, the category and CLOUD; no EMAIL, no account UID; once per person.
    assert text.count("BEGIN:VCARD") == 1 and "FN:Bob Builder" in text and "CLOUD:bob@http://" in text
    assert "EMAIL" not in text and "CATEGORIES:Recently contacted" in text


def test_after_a_share_the_person_is_still_one_person(pim, ok):
    ok(pim.call("files_share_internal", {"path": "/Projects/Beta/todo.txt", "shareWith": "bob"}))
    data = ok(pim.call("contacts_search", {"query": "bob"}))
    assert data["total"] == 1 and "hint" not in data, data
    assert data["people"][0]["accountId"] == "bob" and data["people"][0]["name"] == "Bob Builder"


def test_a_recent_card_of_nobody_known_stays_a_person_without_an_account(pim, ok):
    card = ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:recent-x\r\nFN:Zora Stranger\r\nEMAIL:zora@elsewhere.invalid\r\n"
            "CATEGORIES:Recently contacted\r\nEND:VCARD\r\n")
    book = pim.emulator.state.apps["carddav"].home("alice") if hasattr(pim.emulator.state, "apps") \
        and "carddav" in pim.emulator.state.apps else None
    if book is None:   # the card state is created on first use
        ok(pim.call("contacts_search", {"query": "bob"}))
        book = pim.emulator.state.apps["carddav"].home("alice")
    with pim.emulator.state.lock:
        book["z-app-generated--contactsinteraction--recent"].store("z.vcf", card, "recent-x")
    people = ok(pim.call("contacts_search", {"query": "zora"}))["people"]
    assert people == [{"name": "Zora Stranger", "emails": ["zora@elsewhere.invalid"]}]
