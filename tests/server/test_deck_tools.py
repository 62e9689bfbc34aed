"""The Deck tools through the real MCP server against the emulator (Deck 1.18.3 as recorded).

Each test that writes makes its own board (a unique title), so the seeded
"Product Launch" board stays as seeded and tests do not see each other's
cards. What Deck received is checked in the emulator's request log and state.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.deck import deck_state

DECK = "/index.php/apps/deck/"


@pytest.fixture
def deck(world: Any) -> Iterator[Any]:
    """The emulator's Deck data; the reorder switch is put back after each test."""
    state = deck_state(world.emulator.state)
    yield state
    state.legacy_reorder = ""


@pytest.fixture
def sent(world: Any) -> Any:
    """sent() -> the (method, path) Deck requests made since the test started."""
    start = len(world.emulator.requests)

    def log() -> list[tuple[str, str]]:
        return [(m, p.split("?")[0]) for m, p, _ in world.emulator.requests[start:] if p.startswith(DECK)]
    return log


def _title(prefix: str) -> str:
    return f"{prefix} {uuid.uuid4().hex[:6]}"


@pytest.fixture
def project(call: Any, ok: Any) -> dict[str, Any]:
    """A fresh board (To do / Doing / Done, labels bug and feature, shared with bob) with four cards."""
    board = ok(call("deck_create_board", {"title": _title("Tools"), "stacks": ["To do", "Doing", "Done"],
                                          "labels": ["bug", "feature"], "shares": ["bob"]}))["board"]
    bid = board["board"]
    cards = {}
    for title, stack, extra in (
            ("Fix login", "To do", {"labels": ["bug"], "assignees": ["bob"], "due": "2026-12-10T12:00:00+00:00"}),
            ("New export", "To do", {"labels": ["feature"], "due": "2027-02-01"}),
            ("Refactor", "Doing", {"assignees": ["alice"], "description": "Split the module."}),
            ("Release notes", "Done", {})):
        cards[title] = ok(call("deck_create_card", {"board": bid, "stack": stack, "title": title, **extra}))["card"]
    return {"board": board, "id": bid, "cards": cards,
            "stacks": {s["title"]: s["stack"] for s in board["stacks"]}}


def _titles(payload: dict[str, Any]) -> list[str]:
    return [c["title"] for c in payload["cards"]]


# -- deck_list_cards -------------------------------------------------------------------


def test_one_board_lists_its_labels_members_and_descriptions(call, ok):
    out = ok(call("deck_list_cards", {"board": "product launch"}))
    (board,) = out["boards"]
    assert board["title"] == "Product Launch"
    assert {lb["title"] for lb in board["labels"]} >= {"urgent", "Finished"}
    assert {m["user"] for m in board["members"]} == {"alice", "bob"}
    assert [s["title"] for s in board["stacks"]] == ["To do", "In progress", "Done"]
    press = next(c for c in out["cards"] if c["title"] == "Write press release")
    assert press["board"] == board["board"] and press["stack"] == board["stacks"][0]["stack"]
    assert press["labels"] == ["urgent"] and press["due"].startswith("2026-12-15")
    assert press["description"].startswith("Draft the **press release**")
    assert out["total"] == len(out["cards"]) == 5 and out["truncated"] is False
    assert next(c for c in out["cards"] if c["title"] == "Pick the launch date")["done"] is True


def test_lean_listing_over_all_boards_is_small_and_carries_the_handles(call, ok, project, sent):
    out = ok(call("deck_list_cards", {"limit": 200}))
    titles = {b["title"] for b in out["boards"]}
    assert {"Product Launch", project["board"]["title"]} <= titles
    for board in out["boards"]:
        assert "labels" not in board and "members" not in board
    for card in out["cards"]:
        assert {"card", "board", "stack", "title"} <= set(card) and "description" not in card
        assert len(json.dumps(card, separators=(",", ":"), ensure_ascii=False).encode()) <= 200, card
    # one board listing, then one stacks listing per board: no per-card requests
    assert len(sent()) == 1 + len(out["boards"])
    # the handles are the ones the write tools take
    fix = next(c for c in out["cards"] if c["title"] == "Fix login")
    moved = ok(call("deck_move_card", {"board": fix["board"], "card": fix["card"], "stack": fix["stack"]}))
    assert moved["card"]["card"] == fix["card"] and moved["verified"] is True


def test_filters_stack_label_assignee_due_and_done(call, ok, project):
    bid = project["id"]

    def titles(**filters: Any) -> list[str]:
        return _titles(ok(call("deck_list_cards", {"board": bid, **filters})))

    assert titles(stack="To do") == ["Fix login", "New export"]
    assert titles(stack=project["stacks"]["Doing"]) == ["Refactor"]
    assert titles(label="bug") == ["Fix login"]
    assert titles(assignee="bob") == ["Fix login"]
    assert titles(assignee="Alice Test") == ["Refactor"]
    assert titles(dueBefore="2026-12-31") == ["Fix login"]
    assert titles(dueBefore="2026-12-10T12:00:00+00:00") == []          # strictly before
    assert titles(dueBefore="2027-12-31", label="feature") == ["New export"]
    card = project["cards"]["Release notes"]["card"]
    ok(call("deck_update_card", {"board": bid, "card": card, "done": True}))
    assert titles(done=True) == ["Release notes"]
    assert "Release notes" not in titles(done=False) and len(titles(done=False)) == 3


def test_filters_over_all_boards_match_names_per_board(call, ok, project):
    out = ok(call("deck_list_cards", {"label": "bug", "stack": "To do", "limit": 200}))
    stack_titles = {s["stack"]: s["title"] for b in out["boards"] for s in b["stacks"]}
    assert [c["title"] for c in out["cards"] if c["board"] == project["id"]] == ["Fix login"]
    assert all("bug" in c["labels"] and stack_titles[c["stack"]] == "To do" for c in out["cards"])
    none = ok(call("deck_list_cards", {"label": "no-such-label"}))
    assert none["cards"] == [] and any("no-such-label" in w for w in none["warnings"])
    assert "No cards match" in none["hint"]


def test_a_filter_the_named_board_lacks_is_an_error_listing_what_it_has(call, err, project):
    text = err(call("deck_list_cards", {"board": project["id"], "label": "urgent"}))
    assert "No label 'urgent'" in text and "bug" in text and "feature" in text
    text = err(call("deck_list_cards", {"board": project["id"], "stack": "Backlog"}))
    assert "No stack 'Backlog'" in text and "Doing" in text
    assert "ISO date" in err(call("deck_list_cards", {"dueBefore": "next week"}))


def test_archived_cards_come_from_their_own_route(call, ok, err, project, world, sent):
    bid, card = project["id"], project["cards"]["Refactor"]
    world_client = _client(world)
    world_client.deck.archive_card(bid, card["stack"], card["card"])
    start = len(sent())
    out = ok(call("deck_list_cards", {"board": bid, "archived": True}))
    assert _titles(out) == ["Refactor"]
    assert out["cards"][0]["archived"] is True and "assignees" not in out["cards"][0]   # Deck sends none there
    assert ("GET", f"{DECK}api/v1.0/boards/{bid}/stacks/archived") in sent()[start:]
    assert "Refactor" not in _titles(ok(call("deck_list_cards", {"board": bid})))
    text = err(call("deck_list_cards", {"board": bid, "archived": True, "label": "bug"}))
    assert "archived" in text and "Do not repeat this call unchanged" in text
    moved = err(call("deck_move_card", {"board": bid, "card": card["card"], "stack": "Done"}))
    assert "archived" in moved and "Unarchive" in moved


def test_pages_with_next_cursor(call, ok, err, project):
    first = ok(call("deck_list_cards", {"board": project["id"], "limit": 3}))
    assert first["truncated"] is True and first["total"] == 4 and first["nextCursor"] == "3"
    assert "nextCursor" in first["hint"]
    rest = ok(call("deck_list_cards", {"board": project["id"], "limit": 3, "cursor": first["nextCursor"]}))
    assert rest["truncated"] is False and len(rest["cards"]) == 1
    assert set(_titles(first) + _titles(rest)) == set(project["cards"])
    assert "cursor" in err(call("deck_list_cards", {"cursor": "abc"}))


def test_a_name_several_boards_share_returns_the_candidates(call, ok, err):
    title = _title("Twin")
    ids = [ok(call("deck_create_board", {"title": title}))["board"]["board"] for _ in range(2)]
    text = err(call("deck_list_cards", {"board": title.upper()}))
    assert "2 boards" in text and all(f"board {i}" in text for i in ids) and "board id" in text
    assert ok(call("deck_list_cards", {"board": ids[1]}))["boards"][0]["board"] == ids[1]
    text = err(call("deck_create_card", {"board": title, "stack": "x", "title": "y"}))
    assert "2 boards" in text
    unknown = err(call("deck_list_cards", {"board": "No such board"}))
    assert "No board 'No such board'" in unknown and "Product Launch" in unknown


# -- deck_create_board -----------------------------------------------------------------


def test_create_board_makes_columns_labels_and_shares_in_one_call(call, ok, deck):
    title = _title("Launch")
    out = ok(call("deck_create_board", {"title": title, "stacks": ["Backlog", "Doing", "Done"],
                                        "labels": ["risk", "Later", "risk"], "shares": ["Bob Builder"]}))
    board = out["board"]
    assert board["title"] == title and [s["title"] for s in board["stacks"]] == ["Backlog", "Doing", "Done"]
    labels = [lb["title"] for lb in board["labels"]]
    assert labels.count("Later") == 1 and labels.count("risk") == 1      # Deck's defaults kept, no duplicates
    assert board["members"] == [{"user": "alice", "name": "Alice Test"}, {"user": "bob", "name": "Bob Builder"}]
    stored = deck.boards[board["board"]]
    assert [(a.participant, a.edit) for a in stored.acl] == [("bob", True)]
    assert str(board["board"]) in out["hint"] and "deck_create_card" in out["hint"]
    again = ok(call("deck_create_board", {"title": title}))
    assert again["board"]["board"] != board["board"] and str(board["board"]) in again["warnings"][0]


def test_a_share_to_an_unknown_participant_is_refused_before_any_write(call, err, deck, sent, ctx):
    title = _title("Secret")
    text = err(call("deck_create_board", {"title": title, "stacks": ["A"], "shares": ["bob", "nobody-here"]}))
    assert "nobody-here" in text and "Do not repeat this call unchanged" in text
    assert [m for m, _ in sent() if m != "GET"] == []
    assert not any(b.title == title for b in deck.boards.values())
    assert ctx.telemetry.rows()[-1]["kind"] == "misuse"
    assert "is you" in err(call("deck_create_board", {"title": title, "shares": ["alice"]}))


# -- deck_create_card ------------------------------------------------------------------


def test_create_card_applies_labels_and_assignees_through_their_routes(call, ok, project, sent):
    bid, todo = project["id"], project["stacks"]["To do"]
    start = len(sent())
    card = ok(call("deck_create_card", {"board": bid, "stack": "To do", "title": "Write docs",
                                        "description": "Usage and examples.", "due": "2026-12-24",
                                        "labels": ["bug", "feature"], "assignees": ["bob", "alice"]}))["card"]
    assert (card["board"], card["stack"], card["title"]) == (bid, todo, "Write docs")
    assert card["labels"] == ["bug", "feature"] and sorted(card["assignees"]) == ["alice", "bob"]
    assert card["due"].startswith("2026-12-24") and card["description"] == "Usage and examples."
    writes = [(m, p.rsplit("/", 1)[-1]) for m, p in sent()[start:] if m != "GET"]
    assert writes == [("POST", "cards"), ("PUT", "assignLabel"), ("PUT", "assignLabel"),
                      ("PUT", "assignUser"), ("PUT", "assignUser")]
    listed = ok(call("deck_list_cards", {"board": bid, "stack": todo}))
    assert _titles(listed)[-1] == "Write docs"        # added at the end of the stack


def test_create_card_refuses_unknown_labels_and_non_members_before_writing(call, err, project, sent):
    bid = project["id"]
    text = err(call("deck_create_card", {"board": bid, "stack": "To do", "title": "x", "labels": ["urgent"]}))
    assert "No label 'urgent'" in text and "bug" in text
    text = err(call("deck_create_card", {"board": bid, "stack": "To do", "title": "x", "assignees": ["admin"]}))
    assert "member" in text and "share the board" in text
    text = err(call("deck_create_card", {"board": bid, "stack": "Later", "title": "x"}))
    assert "No stack 'Later'" in text
    assert [m for m, _ in sent() if m not in ("GET",)] == []
    assert "title" in err(call("deck_create_card", {"board": bid, "stack": "To do", "title": "   "}))


# -- deck_update_card ------------------------------------------------------------------


def test_update_keeps_every_field_not_named(call, ok, project, deck):
    bid, card = project["id"], project["cards"]["Fix login"]["card"]
    ok(call("deck_update_card", {"board": bid, "card": card, "description": "Users cannot log in.", "done": True}))
    done_at = deck.cards[card].done
    out = ok(call("deck_update_card", {"board": bid, "card": card, "title": "Fix the login"}))
    assert out["changed"] == ["title"]
    stored = deck.cards[card]
    assert stored.title == "Fix the login" and stored.description == "Users cannot log in."
    assert stored.duedate and stored.duedate.startswith("2026-12-10") and stored.done == done_at
    assert stored.type == "plain" and stored.owner == "alice" and [lb for lb in stored.labels]
    assert out["card"]["done"] is True and out["card"]["labels"] == ["bug"] and out["card"]["assignees"] == ["bob"]


def test_update_clears_due_and_done_only_when_asked(call, ok, project, deck):
    bid, card = project["id"], project["cards"]["New export"]["card"]
    ok(call("deck_update_card", {"board": bid, "card": card, "done": True}))
    out = ok(call("deck_update_card", {"board": bid, "card": card, "due": "", "done": False}))
    assert out["changed"] == ["done", "due"]
    assert deck.cards[card].duedate is None and deck.cards[card].done is None
    assert deck.cards[card].title == "New export"


def test_labels_and_assignees_given_replace_the_set_sending_only_the_diff(call, ok, project, sent):
    bid, card = project["id"], project["cards"]["Fix login"]
    start = len(sent())
    out = ok(call("deck_update_card", {"board": bid, "card": card["card"], "labels": ["feature", "bug"],
                                       "assignees": ["alice"]}))
    assert out["changed"] == ["assignees", "labels"]
    assert out["card"]["labels"] == ["bug", "feature"] and out["card"]["assignees"] == ["alice"]
    writes = [(m, p.rsplit("/", 1)[-1]) for m, p in sent()[start:] if m != "GET"]
    assert writes == [("PUT", "assignLabel"), ("PUT", "assignUser"), ("PUT", "unassignUser")]   # no card PUT
    out = ok(call("deck_update_card", {"board": bid, "card": card["card"], "labels": []}))
    assert "labels" not in out["card"] and out["changed"] == ["labels"]


def test_an_update_that_changes_nothing_writes_nothing(call, ok, err, project, sent):
    bid, card = project["id"], project["cards"]["Refactor"]
    start = len(sent())
    out = ok(call("deck_update_card", {"board": bid, "card": card["card"], "title": "Refactor",
                                       "assignees": ["alice"]}))
    assert out["changed"] == [] and "nothing was written" in out["hint"]
    assert [m for m, _ in sent()[start:] if m != "GET"] == []
    assert "Nothing to change" in err(call("deck_update_card", {"board": bid, "card": card["card"]}))
    missing = err(call("deck_update_card", {"board": bid, "card": 999999, "title": "x"}))
    assert "No card 999999" in missing and "deck_list_cards" in missing


# -- deck_move_card --------------------------------------------------------------------


def test_move_puts_the_target_stack_in_the_route_and_reads_the_card_back(call, ok, project, sent, deck):
    bid, card = project["id"], project["cards"]["New export"]
    done = project["stacks"]["Done"]
    start = len(sent())
    out = ok(call("deck_move_card", {"board": bid, "card": card["card"], "stack": "done"}))
    assert out["verified"] is True and out["card"]["stack"] == done and out["from"]["title"] == "To do"
    assert ("PUT", f"{DECK}api/v1.0/boards/{bid}/stacks/{done}/cards/{card['card']}/reorder") in sent()[start:]
    assert deck.cards[card["card"]].stack_id == done
    listed = ok(call("deck_list_cards", {"board": bid, "stack": done}))
    assert _titles(listed) == ["Release notes", "New export"]            # appended at the end
    again = ok(call("deck_move_card", {"board": bid, "card": card["card"], "stack": done}))
    assert again["verified"] is True and "already" in again["hint"]      # idempotent: nothing sent twice
    assert sum(1 for _, p in sent()[start:] if p.endswith("/reorder")) == 1


def test_move_on_a_deck_whose_api_ignores_it_uses_the_web_route(call, ok, project, sent, deck):
    deck.legacy_reorder = "api"
    bid, card = project["id"], project["cards"]["Fix login"]["card"]
    out = ok(call("deck_move_card", {"board": bid, "card": card, "stack": "Doing"}))
    assert out["verified"] is True and deck.cards[card].stack_id == project["stacks"]["Doing"]
    assert ("PUT", f"{DECK}cards/{card}/reorder") in sent()


def test_a_move_that_is_not_applied_is_reported_not_claimed(call, err, project, deck, ctx):
    deck.legacy_reorder = "all"
    bid, card = project["id"], project["cards"]["Fix login"]["card"]
    text = err(call("deck_move_card", {"board": bid, "card": card, "stack": "Done"}))
    assert "still in stack" in text and "web interface" in text and "Do not retry" in text
    assert deck.cards[card].stack_id == project["stacks"]["To do"]
    assert ctx.telemetry.rows()[-1]["status"] == "move_not_applied"


def test_move_to_an_unknown_stack_lists_the_boards_stacks(call, err, project):
    text = err(call("deck_move_card", {"board": project["id"], "card": project["cards"]["Refactor"]["card"],
                                       "stack": "Archive"}))
    assert "No stack 'Archive'" in text and "To do" in text and "Doing" in text


def _client(world: Any) -> Any:
    from mcp_nextcloud.nextcloud.client import NextcloudClient

    return NextcloudClient(world.account)


# -- Deck's own refusals -----------------------------------------------------------------


def test_deck_403_for_a_vanished_board_says_to_list_again(call, err, project, world):
    world.emulator.faults.add(method="GET", path_prefix=f"{DECK}api/v1.0/boards/{project['id']}/stacks",
                              status=403, times=1)
    text = err(call("deck_list_cards", {"board": project["id"]}))
    assert "does not exist or is not shared" in text and "deck_list_cards" in text and "Do not retry" in text


def test_a_failure_after_the_card_exists_says_what_was_made(call, err, project, world, deck):
    world.emulator.faults.add(method="PUT", path_prefix=f"{DECK}api/v1.0/boards/{project['id']}/stacks",
                              status=400, times=1)
    text = err(call("deck_create_card", {"board": project["id"], "stack": "Doing", "title": "Half made",
                                         "labels": ["bug"]}))
    made = [c for c in deck.cards.values() if c.title == "Half made"]
    assert len(made) == 1 and f"Card {made[0].id} 'Half made' was created" in text
    assert "Do not create it again" in text and "deck_update_card" in text


def test_archived_boards_are_left_out_of_the_lean_listing_and_said_so(call, ok, project, deck):
    deck.boards[project["id"]].archived = True
    try:
        lean = ok(call("deck_list_cards", {"limit": 200}))
        assert project["id"] not in [b["board"] for b in lean["boards"]]
        assert all(c["board"] != project["id"] for c in lean["cards"])
        assert any("archived board" in w for w in lean["warnings"])
        named = ok(call("deck_list_cards", {"board": project["id"]}))
        assert named["boards"][0]["archived"] is True and len(named["cards"]) == 4
    finally:
        deck.boards[project["id"]].archived = False


def test_without_the_deck_app_the_tools_say_so(emulator_factory, tmp_path):
    import anyio
    from mcp import Client

    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    emu = emulator_factory(apps={"spreed"})
    creds = emu.account("alice")
    ctx = ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"]),
                        index=None)
    try:
        async def go() -> Any:
            async with Client(build_server(ctx), mode="legacy") as c:
                return await c.call_tool("deck_list_cards", {})
        result = anyio.run(go)
    finally:
        ctx.close()
    text = result.content[0].text
    assert result.is_error and "Deck app is not installed" in text and "Do not retry" in text


def test_a_deck_without_the_web_route_still_reports_the_move_as_not_applied(call, err, project, deck, world):
    deck.legacy_reorder = "api"
    world.emulator.faults.add(method="PUT", path_prefix=f"{DECK}cards/", status=404, times=1)
    text = err(call("deck_move_card", {"board": project["id"], "card": project["cards"]["Refactor"]["card"],
                                       "stack": "Done"}))
    assert "still in stack" in text and "not installed" not in text
