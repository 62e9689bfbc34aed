"""A share's "Recently contacted" card is the account it was made for, not a second person (issue 22 item 8a)."""
from __future__ import annotations

# The emulator's side (a share adds the card, as on Nextcloud 34): tests/fixtures/test_emulator_carddav.py.


def test_after_a_share_the_person_is_still_one_person(pim, ok):
    ok(pim.call("files_share_internal", {"path": "/Projects/Beta/todo.txt", "shareWith": "bob"}))
    data = ok(pim.call("contacts_search", {"query": "bob"}))
    assert data["total"] == 1 and "hint" not in data, data
    assert data["people"][0]["accountId"] == "bob" and data["people"][0]["name"] == "Bob Builder"


def test_a_recent_card_of_nobody_known_stays_a_person_without_an_account(pim, ok):
    card = ("BEGIN:VCARD\r\nVERSION:3.0\r\nUID:recent-x\r\nFN:Zora Stranger\r\nEMAIL:zora@elsewhere.invalid\r\n"
            "CATEGORIES:Recently contacted\r\nEND:VCARD\r\n")
    ok(pim.call("contacts_search", {"query": "bob"}))   # the emulator creates the address books on first use
    book = pim.emulator.state.apps["carddav"].home("alice")
    with pim.emulator.state.lock:
        book["z-app-generated--contactsinteraction--recent"].store("z.vcf", card, "recent-x")
    people = ok(pim.call("contacts_search", {"query": "zora"}))["people"]
    assert people == [{"name": "Zora Stranger", "emails": ["zora@elsewhere.invalid"]}]
