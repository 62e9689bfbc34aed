"""Deck due dates are read as the calendar tools read times and sent to Deck as the UTC instant (issue 22 item 4).

Deck keeps the wall clock of an offset it is given and drops the offset
("17:00+01:00" comes back as 17:00+00:00, tests/live/test_live_pim.py), so the
instant must reach it in UTC.
"""
from __future__ import annotations

import uuid
from typing import Any

import pytest

from mcp_nextcloud.fixtures.emulator.deck import deck_state


@pytest.fixture
def deck(world: Any) -> Any:
    """The emulator's Deck data."""
    return deck_state(world.emulator.state)


@pytest.fixture
def board(call: Any, ok: Any) -> int:
    made = ok(call("deck_create_board", {"title": f"Due {uuid.uuid4().hex[:6]}", "stacks": ["To do"]}))
    return made["board"]["board"]


@pytest.mark.parametrize("due, stored", [
    ("2026-12-18T17:00:00+01:00", "2026-12-18T16:00:00+00:00"),
    ("2026-12-18T17:00 Europe/Paris", "2026-12-18T16:00:00+00:00"),
    ("2026-12-18 17:00 Europe/Paris", "2026-12-18T16:00:00+00:00"),
    ("2026-12-18T16:00Z", "2026-12-18T16:00:00+00:00"),
    ("2026-12-18", "2026-12-18T00:00:00+00:00"),
])
def test_due_is_stored_as_the_instant_given(call, ok, deck, board, due, stored):
    card = ok(call("deck_create_card", {"board": board, "stack": "To do", "title": "c", "due": due}))["card"]
    assert deck.cards[card["card"]].duedate == stored
    ok(call("deck_update_card", {"board": board, "card": card["card"], "due": "2026-12-19T09:00 America/New_York"}))
    assert deck.cards[card["card"]].duedate == "2026-12-19T14:00:00+00:00"


@pytest.mark.parametrize("due, needle", [
    ("9999-12-31T23:59:59-11:00", "1900-01-01 to 2199-12-31"),
    ("0001-01-01T00:00:00+00:00", "1900-01-01 to 2199-12-31"),
    ("2026-12-18T17:00", "no time zone"),
    ("2026-12-18 17:00", "2026-12-18T17:00 Europe/Paris"),
    ("next friday", "not a date"),
])
def test_bad_dues_are_refused_naming_due_before_any_card(call, err, deck, board, due, needle):
    before = len(deck.cards)
    text = err(call("deck_create_card", {"board": board, "stack": "To do", "title": "c", "due": due}))
    assert needle in text and "due" in text and len(deck.cards) == before
