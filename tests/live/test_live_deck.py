"""The five Deck tools against a real Nextcloud, each effect read back over Deck's REST API with a plain client.

Every board is made for the test (a unique title) and deleted at the end
(Deck keeps it in its trash, restorable). Nothing else in the account is
written. Labels are the case issue 22 item 1 found: Deck's board list
carries none (`labels: []`), the board itself has them.
"""
from __future__ import annotations

import uuid

import pytest

API = "/index.php/apps/deck/api/v1.0"


@pytest.fixture
def deck_tools(live_tools, live_http):
    """The tools, and the ids of the boards a test made (deleted at the end through plain REST)."""
    if live_http.get(f"{API}/boards").status_code != 200:
        pytest.skip("the Deck app is not installed on this server")
    made: list[int] = []
    try:
        yield live_tools, made
    finally:
        for board_id in made:
            live_http.delete(f"{API}/boards/{board_id}")


def _stacks(http, board_id: int) -> dict[str, dict]:
    resp = http.get(f"{API}/boards/{board_id}/stacks")
    assert resp.status_code == 200
    return {s["title"]: s for s in resp.json()}


def _card(http, board_id: int, stack_id: int, card_id: int) -> dict:
    resp = http.get(f"{API}/boards/{board_id}/stacks/{stack_id}/cards/{card_id}")
    assert resp.status_code == 200
    return resp.json()


def _board(tools, made: list[int], **extra) -> dict:
    board = tools.ok("deck_create_board", {"title": f"mcp-nextcloud live {uuid.uuid4().hex[:8]}", **extra})["board"]
    made.append(board["board"])
    return board


def test_live_deck_create_board_with_stacks_labels_and_a_share(deck_tools, live_http, live_member):
    tools, made = deck_tools
    board = _board(tools, made, stacks=["To do", "Doing", "Done"], labels=["live-bug", "Later"],
                   shares=[live_member.user])
    real = live_http.get(f"{API}/boards/{board['board']}").json()
    assert real["title"] == board["title"]
    assert list(_stacks(live_http, board["board"])) == ["To do", "Doing", "Done"]
    titles = [lb["title"] for lb in real["labels"]]
    assert "live-bug" in titles and titles.count("Later") == 1     # Deck's default "Later" is not doubled
    assert [(a["participant"]["uid"], a["permissionEdit"]) for a in real["acl"]] == [(live_member.user, True)]


def test_live_deck_card_with_labels_assignee_and_due_then_update_and_move(deck_tools, live_http, live_account):
    tools, made = deck_tools
    me = live_account.user
    bid = _board(tools, made, stacks=["To do", "Done"], labels=["live-bug", "urgent"])["board"]
    card = tools.ok("deck_create_card", {"board": bid, "stack": "To do", "title": "Live card",
                                         "description": "Keep me.", "due": "2030-01-15T12:00:00+00:00",
                                         "labels": ["live-bug"], "assignees": [me]})["card"]
    stacks = _stacks(live_http, bid)
    real = _card(live_http, bid, stacks["To do"]["id"], card["card"])
    assert (real["title"], real["description"]) == ("Live card", "Keep me.")
    assert real["duedate"].startswith("2030-01-15T12:00:00")
    assert [lb["title"] for lb in real["labels"]] == ["live-bug"]
    assert [a["participant"]["uid"] for a in real["assignedUsers"]] == [me]

    updated = tools.ok("deck_update_card", {"board": bid, "card": card["card"], "title": "Live card v2",
                                            "labels": ["urgent"]})
    assert updated["changed"] == ["labels", "title"]
    real = _card(live_http, bid, stacks["To do"]["id"], card["card"])
    assert real["title"] == "Live card v2" and real["description"] == "Keep me."    # the rest is kept
    assert [lb["title"] for lb in real["labels"]] == ["urgent"] and real["duedate"].startswith("2030-01-15")
    assert [a["participant"]["uid"] for a in real["assignedUsers"]] == [me]

    moved = tools.ok("deck_move_card", {"board": bid, "card": card["card"], "stack": "Done"})
    assert moved["verified"] is True
    after = _stacks(live_http, bid)
    assert [c["id"] for c in after["Done"].get("cards") or []] == [card["card"]]
    assert card["card"] not in [c["id"] for c in after["To do"].get("cards") or []]


def test_live_deck_list_cards_by_label_matches_the_rest_api(deck_tools, live_http):
    tools, made = deck_tools
    bid = _board(tools, made, stacks=["To do"], labels=["live-bug"])["board"]
    tagged = tools.ok("deck_create_card", {"board": bid, "stack": "To do", "title": "Tagged", "labels": ["live-bug"],
                                           "due": "2030-01-10"})["card"]
    tools.ok("deck_create_card", {"board": bid, "stack": "To do", "title": "Plain"})
    listed = tools.ok("deck_list_cards", {"board": bid, "label": "live-bug", "dueBefore": "2030-02-01"})
    assert [c["card"] for c in listed["cards"]] == [tagged["card"]]
    real_cards = _stacks(live_http, bid)["To do"]["cards"]
    with_label = [c["id"] for c in real_cards if any(lb["title"] == "live-bug" for lb in c["labels"] or [])]
    assert with_label == [tagged["card"]]
    board_labels = {lb["title"] for lb in live_http.get(f"{API}/boards/{bid}").json()["labels"]}
    assert {lb["title"] for lb in listed["boards"][0]["labels"]} == board_labels
    whole = tools.ok("deck_list_cards", {"board": bid})
    assert sorted(c["card"] for c in whole["cards"]) == sorted(c["id"] for c in real_cards)
    lean = tools.ok("deck_list_cards", {"label": "live-bug", "limit": 200})
    assert tagged["card"] in [c["card"] for c in lean["cards"]]


def test_live_deck_unknown_label_names_the_boards_real_labels(deck_tools, live_http):
    tools, made = deck_tools
    bid = _board(tools, made, stacks=["To do"], labels=["live-bug"])["board"]
    text = tools.error("deck_create_card", {"board": bid, "stack": "To do", "title": "x", "labels": ["nope"]})
    assert "live-bug" in text and "Known: none" not in text
    assert not _stacks(live_http, bid)["To do"].get("cards")      # refused before anything was written


def test_live_deck_board_list_carries_no_labels_the_board_does(deck_tools, live_http):
    """The server fact behind item 1 (the emulator models it: tests/fixtures/test_emulator_deck.py)."""
    tools, made = deck_tools
    bid = _board(tools, made, labels=["live-bug"])["board"]
    listed = next(b for b in live_http.get(f"{API}/boards").json() if b["id"] == bid)
    detailed = next(b for b in live_http.get(f"{API}/boards", params={"details": "true"}).json() if b["id"] == bid)
    one = live_http.get(f"{API}/boards/{bid}").json()
    assert listed["labels"] == []
    titles = {lb["title"] for lb in one["labels"]}
    assert "live-bug" in titles and {lb["title"] for lb in detailed["labels"]} == titles
