"""An account that never logged in with its password (no calendar, no address book yet): the tools say so.

The emulator models it as the real Nextcloud 34 shows it (new_accounts=...;
tests/fixtures/test_emulator_first_login.py): the answer names the cause (no
first login in a browser) and the next step, never "no events" as if the
calendar were empty, and never an obscure failure.
"""
from __future__ import annotations

import httpx


def test_calendar_list_on_an_account_without_a_first_login_names_the_cause(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    data = ok(pim.call("calendar_list_events", {"start": "2026-12-01", "end": "2026-12-08"}, user="newbie"))
    assert data["events"] == [] and data["calendars"] == {}
    assert "no calendar yet" in data["hint"] and "log in to Nextcloud once in a browser" in data["hint"]
    assert any("first login" in w for w in data["warnings"])


def test_calendar_create_on_an_account_without_a_first_login_says_log_in_once(pim_factory, err):
    pim = pim_factory(new_accounts=["newbie"])
    text = err(pim.call("calendar_create_event", {"title": "Kick-off", "start": "2026-12-08T10:00 Europe/Paris"},
                        user="newbie"))
    assert "no calendar yet" in text and "first login" in text and "browser" in text
    assert "do not retry" in text.lower()


def test_after_the_first_login_the_same_account_creates_events(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    with httpx.Client(base_url=pim.emulator.url, auth=("newbie", "newbie-password")) as browser:
        browser.get("/ocs/v2.php/cloud/user", headers={"OCS-APIRequest": "true"})
    made = ok(pim.call("calendar_create_event", {"title": "Kick-off", "start": "2026-12-08T10:00 Europe/Paris"},
                       user="newbie"))
    assert made["calendar"] == "personal"
    listed = ok(pim.call("calendar_list_events", {"start": "2026-12-08", "end": "2026-12-09"}, user="newbie"))
    assert [e["uid"] for e in listed["events"]] == [made["uid"]]
    assert not [w for w in listed.get("warnings", []) if "first login" in w]


def test_contacts_search_on_an_account_without_a_first_login_says_what_it_searched(pim_factory, ok):
    pim = pim_factory(new_accounts=["newbie"])
    data = ok(pim.call("contacts_search", {"query": "bob"}, user="newbie"))
    assert [p.get("accountId") for p in data["people"]] == ["bob"]       # the directory still answers
    assert any("no address book of its own yet" in w and "browser" in w for w in data["warnings"])
    seasoned = ok(pim.call("contacts_search", {"query": "bob"}))
    assert not [w for w in seasoned.get("warnings", []) if "address book of its own" in w]
