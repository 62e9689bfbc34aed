"""Deck benchmark: deck_list_cards over 10 boards x 5 stacks x 40 cards, through the in-process MCP client.

Measured: requests each listing makes (emulator request log), p50/p95 ms of
the lean listing over all boards and of one named board, answer bytes per
card in the lean listing (budget <= 200 B), and tools/list bytes per tool
with every tool of the server counted (budget <= 600 B). Wall-clock figures
are printed, never asserted; the run fails only on what is deterministic:
the request count (one board list + one stacks list per board) and the
bytes per card.
"""
from __future__ import annotations

import json
import random
import statistics
import time

import anyio
import pytest

from benchmarks.conftest import report, summary

SEED = 20261201
BOARDS, STACKS, CARDS = 10, 5, 40
REPEAT = 30
WORDS = ("prepare", "review", "quarterly", "report", "budget", "draft", "customer", "release", "notes",
         "update", "migrate", "server", "invoice", "meeting", "agenda", "design", "landing", "page")


def _populate(emu) -> None:
    """10 boards shared with bob, 5 stacks each, 40 cards per stack with labels, assignees and due dates."""
    from mcp_nextcloud.fixtures.emulator.deck import deck_state
    from mcp_nextcloud.fixtures.emulator.deckmodel import Acl

    rnd = random.Random(SEED)
    deck = deck_state(emu.state)
    with emu.state.lock:
        for b in range(BOARDS):
            board = deck.new_board("alice", f"Project {b:02d}", "0082c9")
            board.acl.append(Acl(deck.next_id("acl"), "bob", True, False, False))
            for s in range(STACKS):
                stack = deck.new_stack(board, ("Backlog", "To do", "Doing", "Review", "Done")[s], s)
                for c in range(CARDS):
                    title = " ".join(rnd.choice(WORDS) for _ in range(rnd.randint(3, 6))).capitalize()
                    card = deck.new_card(stack, "alice", title, c, description="Details. " * rnd.randint(0, 30),
                                         duedate=f"2026-12-{rnd.randint(1, 28):02d}T17:00:00+00:00"
                                         if rnd.random() < 0.5 else None,
                                         done="2026-11-20T10:00:00+00:00" if s == STACKS - 1 else None)
                    card.labels.extend(rnd.sample(board.labels, rnd.randint(0, 2)))
                    if rnd.random() < 0.6:
                        card.assigned.append((deck.next_id("assign"), rnd.choice(("alice", "bob"))))


@pytest.fixture(scope="module")
def emu():
    from mcp_nextcloud.fixtures.emulator.server import Emulator

    with Emulator(seed="empty") as e:
        _populate(e)
        yield e


def test_deck_list_cards(emu, tmp_path):
    from mcp import Client

    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    creds = emu.account("alice")
    ctx = ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"]),
                        index=None)
    server = build_server(ctx)

    async def listing(c, args):
        ms, requests, last = [], [], None
        for _ in range(REPEAT):
            before = emu.request_count(path_prefix="/index.php/apps/deck/")
            t0 = time.perf_counter()
            last = await c.call_tool("deck_list_cards", args)
            ms.append((time.perf_counter() - t0) * 1000)
            requests.append(emu.request_count(path_prefix="/index.php/apps/deck/") - before)
            assert not last.is_error, last.content[0].text
        return ms, requests, last

    async def go():
        async with Client(server, mode="legacy") as c:
            tools = (await c.list_tools()).tools
            lean = await listing(c, {"limit": 200})
            one = await listing(c, {"board": "Project 03", "limit": 200})
            filtered = await listing(c, {"label": "Later", "dueBefore": "2026-12-15", "limit": 200})
            return tools, lean, one, filtered

    try:
        tools, lean, one, filtered = anyio.run(go)
    finally:
        ctx.close()
    sizes = {t.name: len(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True),
                                    separators=(",", ":"))) for t in tools}
    per_tool = sum(sizes.values()) / len(sizes)
    lean_ms, lean_req, lean_last = lean
    page = lean_last.structured_content
    lean_bytes = len(lean_last.content[0].text.encode())
    card_bytes = [len(json.dumps(c, separators=(",", ":"), ensure_ascii=False).encode()) for c in page["cards"]]
    per_card = lean_bytes / len(page["cards"])
    one_ms, one_req, one_last = one
    one_cards = one_last.structured_content["cards"]
    figures = {
        "boards x stacks x cards": f"{BOARDS} x {STACKS} x {CARDS} = {BOARDS * STACKS * CARDS}",
        "lean listing (all boards, limit 200)": summary(lean_ms),
        "lean listing requests per call": statistics.median(lean_req),
        "lean listing answer bytes (200 cards)": lean_bytes,
        "lean listing answer bytes per card (whole answer)": round(per_card, 1),
        "lean card entry bytes (p50 / max)": f"{statistics.median(card_bytes)} / {max(card_bytes)}",
        "lean listing total cards": page["total"],
        "one board (labels, members, descriptions)": summary(one_ms),
        "one board requests per call": statistics.median(one_req),
        "one board answer bytes per card": round(len(one_last.content[0].text.encode()) / len(one_cards), 1),
        "filtered (label + dueBefore), all boards": summary(filtered[0]),
        "filtered cards found": filtered[2].structured_content["total"],
        "tools/list tools": len(sizes),
        "tools/list bytes per tool (avg, all tools)": round(per_tool, 1),
        "tools/list bytes, Deck tools": {n: s for n, s in sizes.items() if n.startswith("deck_")},
        "tools/list bytes, other tools": {n: s for n, s in sizes.items() if not n.startswith("deck_")},
    }
    report("deck", figures, [
        ("lean listing bytes per card", per_card, 200.0, "<="),
        ("lean listing requests (1 + boards)", statistics.median(lean_req), 1 + BOARDS, "<="),
        ("tools/list bytes per tool (all tools)", per_tool, 600.0, "<="),
    ])
    assert page["total"] == BOARDS * STACKS * CARDS and page["truncated"] is True
    assert max(lean_req) == 1 + BOARDS and max(one_req) == 2
    assert per_card <= 200 and max(card_bytes) <= 200
