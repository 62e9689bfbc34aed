"""deck_list_cards: the cards of one board (with its labels and members) or of every board, filtered.

One GET of the board list (it carries each board's ACL, and its labels with
?details=true, asked for when a board is named or a label filters), then one
GET of stacks-with-cards per board, fetched in parallel. Archived cards come
from Deck's own archived route, on request. The lean listing over all boards
keeps each card small (ids, title, due, done, labels, assignees); naming one
board adds the board's labels and members and the cards' descriptions.
"""
from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import ToolFailure, misuse
from mcp_nextcloud.server.tools.deck.read import (board_entry, card_entry, due_of, parse_when, pick_board, pick_labels,
                                                  pick_members, pick_stack)

DEFAULT_LIMIT = 50
FETCH_WORKERS = 4      # parallel stack fetches: a few at a time is polite to the server and hides latency


@dataclass(frozen=True)
class Filters:
    stack: str | None = None
    label: str | None = None
    assignee: str | None = None
    due_before: str | None = None
    done: bool | None = None
    archived: bool = False


def list_cards(ctx: ServerContext, *, board: int | str | None, filters: Filters, limit: int,
               cursor: str | None) -> CallToolResult:
    """The deck_list_cards tool: see the module docstring."""
    offset = _offset(cursor)
    if filters.archived and (filters.label or filters.assignee):
        raise misuse("Deck's archived listing carries no labels or assignees, so label and assignee cannot "
                     "filter archived cards. Drop them (or archived).",
                     status=ToolStatus.ARCHIVED_FILTER)
    cutoff = parse_when(filters.due_before, field="dueBefore") if filters.due_before else None
    deck = ctx.client().deck
    # Deck's plain board list has no labels: ask for them where a label is shown (one board) or filtered.
    boards = deck.boards(details=board is not None or bool(filters.label))
    warnings: list[str] = []
    if board is not None:
        chosen = [pick_board(boards, board)]
    else:
        chosen = [b for b in boards if not b.archived]
        hidden = len(boards) - len(chosen)
        if hidden:
            warnings.append(f"{hidden} archived board(s) not listed; name one with board to list its cards.")
    stacks = _fetch(deck, chosen, archived=filters.archived)
    full = board is not None
    matchers = [_Matcher(b, stacks[b.id], filters, strict=full) for b in chosen]
    cards = [card_entry(c, b.id, description=full, archived=filters.archived)
             for b, m in zip(chosen, matchers, strict=True) for s in stacks[b.id] if m.stack_ok(s)
             for c in s.cards if m.card_ok(c, cutoff)]
    page = cards[offset: offset + limit]
    more = offset + limit < len(cards)
    payload: dict[str, Any] = {
        "boards": [board_entry(b, stacks[b.id], full=full) for b in chosen],
        "cards": page, "total": len(cards), "truncated": more,
        "nextCursor": str(offset + limit) if more else None,
        "warnings": _unmatched(matchers, filters) + warnings,
    }
    payload["hint"] = _hint(payload, filters, offset)
    return envelope(payload)


def _offset(cursor: str | None) -> int:
    if not cursor:
        return 0
    if not cursor.strip().isdigit():
        raise misuse("cursor is not one this tool returned: pass nextCursor exactly as given, or omit it.",
                     status=ToolStatus.BAD_CURSOR)
    return int(cursor.strip())


def _fetch(deck: Any, boards: list[Any], *, archived: bool) -> dict[int, list[Any]]:
    """Each board's stacks with their cards (archived ones from their own route), fetched in parallel."""
    get = deck.archived_stacks if archived else deck.stacks
    if len(boards) <= 1:
        return {b.id: get(b.id) for b in boards}
    with ThreadPoolExecutor(max_workers=min(FETCH_WORKERS, len(boards))) as pool:
        return dict(zip((b.id for b in boards), pool.map(lambda b: get(b.id), boards), strict=True))


class _Matcher:
    """The filters resolved on one board: the stack, label and user ids they mean there.

    With one board named (`strict`), a stack, label or assignee the board does
    not have is an error listing what it has; over all boards, a name simply
    matches nothing on boards that lack it (and a warning says when it matched
    nowhere).
    """

    def __init__(self, board: Any, stacks: list[Any], f: Filters, *, strict: bool) -> None:
        self.f = f
        self.found: dict[str, bool] = {}
        self.stack_id = self._resolve("stack", strict, lambda: pick_stack(stacks, f.stack or "", board).id)
        self.label_id = self._resolve("label", strict, lambda: pick_labels(board, [f.label or ""])[0].id)
        self.user = self._resolve("assignee", strict, lambda: pick_members(board, [f.assignee or ""])[0])

    def _resolve(self, key: str, strict: bool, find: Any) -> Any:
        if getattr(self.f, key) in (None, ""):
            return None
        try:
            value = find()
        except ToolFailure:
            if strict:
                raise
            return None
        self.found[key] = True
        return value

    def stack_ok(self, stack: Any) -> bool:
        return self.f.stack is None or stack.id == self.stack_id

    def card_ok(self, card: Any, cutoff: dt.datetime | None) -> bool:
        f = self.f
        if f.label and all(lb.id != self.label_id for lb in card.labels):
            return False
        if f.assignee and self.user not in card.assigned_users:
            return False
        if f.done is not None and bool(card.done) != f.done:
            return False
        if cutoff is not None:
            due = due_of(card)
            if due is None or due >= cutoff:
                return False
        return True


def _unmatched(matchers: list[_Matcher], f: Filters) -> list[str]:
    out = []
    for key, value in (("stack", f.stack), ("label", f.label), ("assignee", f.assignee)):
        if value not in (None, "") and matchers and not any(m.found.get(key) for m in matchers):
            out.append(f"No listed board has the {key} {value!r}; nothing can match it.")
    return out


def _hint(payload: dict[str, Any], f: Filters, offset: int) -> str | None:
    if payload["truncated"]:
        return f"{len(payload['cards'])} of {payload['total']} cards; pass nextCursor for the next ones."
    if not payload["cards"] and payload["total"] == 0:
        scope = "archived cards" if f.archived else "cards"
        return f"No {scope} match on the {len(payload['boards'])} board(s) listed."
    return None
