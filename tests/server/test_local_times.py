"""Issue 50: a time without a zone ("2026-12-08T10:00") is read in the account's zone, and the answer says so.

The account's zone is Nextcloud's user setting (cloud/user "timezone", what whoami reports); with none set,
an agent's server refuses the time with the fix, and the command line reads it in the machine's zone.
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.fixtures.emulator.deck import deck_state


def _zone(pim: Any, name: str, user: str = "alice") -> None:
    pim.emulator.state.users[user].timezone = name


def test_calendar_times_without_a_zone_are_read_in_the_accounts_zone(pim, ok):
    _zone(pim, "Europe/Berlin")
    made = ok(pim.call("calendar_create_event", {"title": "Standup", "start": "2026-12-08T10:00"}))
    assert made["start"] == "2026-12-08T09:00Z" and made["local"] == "2026-12-08T10:00 Europe/Berlin"
    said = " ".join(made["warnings"])
    assert "start had no time zone" in said and "Europe/Berlin" in said and "account's time zone" in said
    listed = ok(pim.call("calendar_list_events", {"start": "2026-12-08T00:00", "end": "2026-12-09T00:00"}))
    assert listed["from"] == "2026-12-07T23:00Z" and any("Standup" == e["title"] for e in listed["events"])
    assert "start and end had no time zone" in " ".join(listed["warnings"])
    zoned = ok(pim.call("calendar_create_event", {"title": "Call", "start": "2026-12-08T10:00Z"}))
    assert not any("time zone" in w for w in zoned.get("warnings") or [])   # nothing read: nothing said


def test_an_update_reads_a_time_in_the_events_own_zone(pim, ok):
    _zone(pim, "Europe/Berlin")
    made = ok(pim.call("calendar_create_event", {"title": "Sync", "start": "2027-03-10T14:00 America/New_York"}))
    moved = ok(pim.call("calendar_update_event", {"uid": made["uid"], "start": "2027-03-11T09:00"}))
    assert moved["local"] == "2027-03-11T09:00 America/New_York"
    assert "this event's time zone" in " ".join(moved["warnings"])


def test_a_task_due_time_without_a_zone(pim, ok):
    _zone(pim, "Asia/Tokyo")
    task = ok(pim.call("tasks_create", {"title": "Renew passport", "due": "2026-12-08T10:00"}))
    assert task["due"].startswith("2026-12-08T01:00") and "Asia/Tokyo" in " ".join(task["warnings"])


def test_without_a_zone_in_nextcloud_the_agent_is_told_the_fix(pim, err):
    _zone(pim, "")
    text = err(pim.call("calendar_create_event", {"title": "Lunch", "start": "2027-01-08T12:00"}))
    assert "no time zone" in text and "2027-01-08T12:00Z" in text and "no time zone set in Nextcloud" in text


def test_the_command_line_reads_it_in_the_machines_zone(person_cli, monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    code, out, err = person_cli("calendar", "list", "--start", "2026-12-08T10:00", "--json")
    assert code == 0, err
    assert '"from":"2026-12-08T01:00Z"' in out and "Asia/Tokyo (this machine's time zone" in out


def test_a_deck_due_time_without_a_zone(pim, ok):
    _zone(pim, "Europe/Berlin")
    board = ok(pim.call("deck_create_board", {"title": "Zones", "stacks": ["To do"]}))["board"]["board"]
    made = ok(pim.call("deck_create_card", {"board": board, "stack": "To do", "title": "Ship",
                                            "due": "2026-12-18T17:00"}))
    cards = deck_state(pim.emulator.state).cards
    assert cards[made["card"]["card"]].duedate == "2026-12-18T16:00:00+00:00"
    assert "due had no time zone" in " ".join(made["warnings"]) and "Europe/Berlin" in " ".join(made["warnings"])
    moved = ok(pim.call("deck_update_card", {"board": board, "card": made["card"]["card"], "due": "2026-12-19T09:00"}))
    assert cards[made["card"]["card"]].duedate == "2026-12-19T08:00:00+00:00" and moved["warnings"]
