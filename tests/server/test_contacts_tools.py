"""contacts_search through the real MCP server: cards and accounts merged, accent- and case-insensitive."""
from __future__ import annotations

from mcp_nextcloud.fixtures.emulator.state import User

BOOK = "/remote.php/dav/addressbooks/users/alice/contacts/"
MARLEY = ("BEGIN:VCARD\nVERSION:3.0\nUID:contact-marley@test\nFN:Bob Marley\nEMAIL:bob.marley@example.invalid\n"
          "END:VCARD\n")


def _users() -> list[User]:
    return [User("alice", "Alice Test", "alice@example.invalid", "alice-password"),
            User("bob", "Bob Builder", "bob@example.invalid", "bob-password"),
            User("robert", "Bob Marley", "bob.marley@example.invalid", "robert-password"),
            User("admin", "admin", None, "admin-password", is_admin=True)]


def test_elodie_finds_elodie_with_accents_and_any_case(pim, ok):
    for query in ("elodie", "ELODIE", "Élodie", "muller", "elodie müller", "societe generale"):
        people = ok(pim.call("contacts_search", {"query": query}))["people"]
        assert [p["name"] for p in people] == ["Élodie Müller"], query
    person = ok(pim.call("contacts_search", {"query": "elodie"}))["people"][0]
    assert person["emails"] == ["elodie.muller@example.invalid"] and person["phones"] == ["+33 6 12 34 56 78"]
    assert "accountId" not in person   # a contact, not an account here: nobody to share with or add to a room


def test_a_contact_with_an_account_is_one_person_with_the_account_id(pim, ok):
    data = ok(pim.call("contacts_search", {"query": "bob"}))
    assert data["total"] == 1 and "hint" not in data
    bob = data["people"][0]
    assert bob["accountId"] == "bob" and bob["name"] == "Bob Builder"
    assert bob["emails"] == ["bob@example.invalid", "bob.builder@work.example.invalid"]
    assert bob["org"] == "Builder & Co" and bob["phones"] == ["+1 555 0100"]


def test_the_account_id_is_what_sharing_accepts(pim, ok):
    account = ok(pim.call("contacts_search", {"query": "Bob Builder"}))["people"][0]["accountId"]
    shared = ok(pim.call("files_share_internal", {"path": "/Projects/Beta/todo.txt", "shareWith": account}))
    assert shared["shareWith"] == "bob"


def test_a_name_matching_several_people_returns_all_candidates(pim_factory, ok):
    pim = pim_factory(users=_users())
    with pim.http() as client:
        assert client.put(BOOK + "marley.vcf", content=MARLEY).status_code == 201
    data = ok(pim.call("contacts_search", {"query": "bob"}))
    assert sorted((p["name"], p.get("accountId")) for p in data["people"]) == [
        ("Bob Builder", "bob"), ("Bob Marley", "robert")]
    assert data["total"] == 2 and "ask the user which one" in data["hint"]


def test_no_match_and_limit_say_so(pim, ok):
    none = ok(pim.call("contacts_search", {"query": "zebulon"}))
    assert none["people"] == [] and none["total"] == 0 and "Nobody matches" in none["hint"]
    cut = ok(pim.call("contacts_search", {"query": "example", "limit": 2}))
    assert len(cut["people"]) == 2 and cut["truncated"] is True and cut["total"] > 2


def test_an_unreadable_address_book_is_a_warning(pim, ok):
    pim.emulator.faults.add(method="REPORT", path_prefix=BOOK, status=403, times=1)
    data = ok(pim.call("contacts_search", {"query": "bob"}))
    assert any("Contacts" in w for w in data["warnings"])
    assert data["people"][0]["accountId"] == "bob"   # still found through the accounts
