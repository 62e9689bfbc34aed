"""The Deck tools against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

One board made for the run (a unique title) holds everything; it is deleted
at the end (Deck keeps it in its trash, restorable). Nothing else in the
account is written. The assignee is the account itself: the board's owner is
its only member that surely exists.
"""
from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
import pytest


@pytest.fixture
def live_deck(live_account, tmp_path):
    from nextcloud.client import NextcloudClient
    from server.app import build_server
    from server.context import ServerContext, Settings
    from server.telemetry import CallLog

    client = NextcloudClient(live_account)
    if not client.ocs.apps_available().get("deck"):
        client.close()
        pytest.skip("the Deck app is not installed on this server")
    ctx = ServerContext(account=live_account, index=None, telemetry=CallLog(tmp_path / "calls.sqlite"),
                        settings=Settings(freshness_interval_s=0), client_factory=lambda: client)
    made: list[int] = []
    try:
        yield build_server(ctx), client, made
    finally:
        try:
            for board_id in made:
                client.deck.delete_board(board_id)
        finally:
            ctx.close()


def _call(server: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    from mcp import Client

    async def go() -> Any:
        async with Client(server, mode="legacy") as c:
            return await c.call_tool(name, args)

    result = anyio.run(go)
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_live_deck_scenarios(live_deck):
    server, client, made = live_deck
    me = client.ocs.current_user().id
    title = f"mcp-nextcloud live {uuid.uuid4().hex[:8]}"

    board = _call(server, "deck_create_board", {"title": title, "stacks": ["To do", "Doing", "Done"],
                                                "labels": ["live-bug"]})["board"]
    made.append(board["board"])
    assert [s["title"] for s in board["stacks"]] == ["To do", "Doing", "Done"]
    assert "live-bug" in [lb["title"] for lb in board["labels"]]
    bid = board["board"]

    card = _call(server, "deck_create_card", {"board": bid, "stack": "To do", "title": "Live card",
                                              "description": "Keep me.", "due": "2030-01-15T12:00:00+00:00",
                                              "labels": ["live-bug"], "assignees": [me]})["card"]
    assert card["labels"] == ["live-bug"] and card["assignees"] == [me] and card["board"] == bid
    _call(server, "deck_create_card", {"board": bid, "stack": "To do", "title": "Other card"})

    updated = _call(server, "deck_update_card", {"board": bid, "card": card["card"], "title": "Live card v2"})
    got = client.deck.card(bid, card["stack"], card["card"])
    assert updated["changed"] == ["title"] and got.title == "Live card v2"
    assert got.description == "Keep me." and (got.duedate or "").startswith("2030-01-15")
    assert [lb.title for lb in got.labels] == ["live-bug"] and got.assigned_users == [me]

    moved = _call(server, "deck_move_card", {"board": bid, "card": card["card"], "stack": "Done"})
    assert moved["verified"] is True
    done_stack = next(s["stack"] for s in board["stacks"] if s["title"] == "Done")
    assert client.deck.card(bid, done_stack, card["card"]).stack_id == done_stack

    listed = _call(server, "deck_list_cards", {"board": bid, "label": "live-bug", "dueBefore": "2030-02-01"})
    assert [c["title"] for c in listed["cards"]] == ["Live card v2"]
    assert listed["boards"][0]["labels"] and listed["boards"][0]["members"]
    lean = _call(server, "deck_list_cards", {"label": "live-bug", "limit": 200})
    assert card["card"] in [c["card"] for c in lean["cards"]]
