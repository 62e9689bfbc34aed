"""The Deck tools that write: create a board (with columns, labels, shares), create, update and move a card.

Everything that can be refused is checked before the first write: unknown
share participants (Deck would store them), unknown labels, non-member
assignees (Deck would answer 400 after the card exists). A failure after a
write says what now exists, so the agent does not create it twice.
"""
from __future__ import annotations

import datetime as dt
from functools import partial
from typing import Any, Callable

from mcp.types import CallToolResult

from mcp_nextcloud.nextcloud.errors import Category, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud, misuse
from mcp_nextcloud.server.tools.calendar.common import parse_instant
from mcp_nextcloud.server.tools.calendar.zones import LocalTimes, local_times
from mcp_nextcloud.server.tools.deck.read import (PICK_STATUS, board_entry, due_of, find_card, full_card_entry,
                                                  pick_board, pick_labels, pick_members, pick_stack)
from mcp_nextcloud.server.tools.files.resolve import resolve_account

# Colours for labels the caller names without one (Deck's own palette, in its order).
LABEL_COLOURS = ("31CC7C", "317CCC", "FF7A66", "F1DB50", "7C31CC", "CC317C", "3A3B3D", "CACBCD")
BOARD_COLOUR = "0082c9"


def _after_write(done: str, step: Callable[[], Any]) -> Any:
    """Run a step that follows a write; its failure names what was already done (so nothing is redone)."""
    try:
        return step()
    except NextcloudError as exc:
        inner = from_nextcloud(exc)
        raise ToolFailure(f"{done}, but the next step failed: {inner.cause.rstrip('.')}",
                          "Do not create it again; call deck_list_cards to see its state, then finish with "
                          "deck_update_card", category=inner.category, status=ToolStatus.PARTIAL) from None


def _names(values: list[str] | None, what: str) -> list[str]:
    """Stripped, non-empty, without duplicates (ignoring case); an empty entry is a misuse."""
    out: list[str] = []
    for v in values or []:
        text = " ".join(str(v).split())
        if not text:
            raise misuse(f"{what}s: an item is empty: give a name for each.",
                         status=PICK_STATUS[what][0])
        if text.casefold() not in (o.casefold() for o in out):
            out.append(text)
    return out


def create_board(ctx: ServerContext, *, title: str, stacks: list[str] | None, labels: list[str] | None,
                 shares: list[str] | None) -> CallToolResult:
    """The deck_create_board tool: every participant checked first, then board, stacks, labels, shares."""
    title = " ".join(title.split())
    if not title:
        raise misuse("title is empty: give the board a name.", status=ToolStatus.BAD_TITLE)
    columns, wanted_labels, people = _names(stacks, "stack"), _names(labels, "label"), _names(shares, "share")
    client = ctx.client()
    me = str(getattr(ctx.account, "user", "") or "")
    accounts = []
    for who in people:
        account = who if who.casefold() == me.casefold() else \
            resolve_account(client.ocs.sharees(who, item_type="file"), who, "shares")[0]
        if account.casefold() == me.casefold():
            raise misuse(f"{account} is you: the board's owner is a member already. Drop it from shares.",
                         status=ToolStatus.SELF_SHARE)
        accounts.append(account)
    deck = client.deck
    same = [b.id for b in deck.boards() if b.title.casefold() == title.casefold()]
    board = deck.create_board(title, BOARD_COLOUR)
    done = f"Board {board.id} '{title}' was created"
    made = [_after_write(done, partial(deck.create_stack, board.id, t, i)) for i, t in enumerate(columns)]
    have = {label.title.casefold() for label in board.labels}
    fresh = [t for t in wanted_labels if t.casefold() not in have]
    for i, text in enumerate(fresh):
        _after_write(done, partial(deck.create_label, board.id, text, LABEL_COLOURS[i % len(LABEL_COLOURS)]))
    for account in accounts:
        _after_write(done, partial(deck.share_board, board.id, account, edit=True))
    final = deck.board(board.id)
    payload: dict[str, Any] = {"board": board_entry(final, made, full=True),
                               "hint": f"Add cards with deck_create_card board={board.id}."}
    if same:
        payload["warnings"] = [f"Board(s) {', '.join(map(str, same))} already had this title; this is a new one."]
    return envelope(payload)


def _due(value: str | None, local: LocalTimes) -> str | None:
    """The due instant in UTC ISO 8601 ("" clears it: None); read as the calendar tools read times.

    UTC because Deck keeps the wall clock of an offset it is given and drops the offset
    ("17:00+01:00" was stored as 17:00Z); a date alone is its midnight UTC.
    """
    if value is None or not value.strip():
        return None
    return parse_instant(value, "due", local).isoformat()


def _stored_due(card: Any) -> str | None:
    """The card's current due date in _due's form (None when absent or not readable: then it is replaced)."""
    due = due_of(card)
    return due.astimezone(dt.timezone.utc).isoformat() if due else None


def create_card(ctx: ServerContext, *, board: int | str, stack: int | str, title: str, description: str | None,
                due: str | None, labels: list[str] | None, assignees: list[str] | None) -> CallToolResult:
    """The deck_create_card tool: labels and assignees resolved first, applied through their routes after."""
    title = " ".join(title.split())
    if not title:
        raise misuse("title is empty: a card needs one.", status=ToolStatus.BAD_TITLE)
    deck = ctx.client().deck
    target = pick_board(deck.boards(details=bool(labels)), board)   # the plain list has no labels
    stacks = deck.stacks(target.id)
    column = pick_stack(stacks, stack, target)
    tags = pick_labels(target, labels or [])
    people = pick_members(target, assignees or [])
    local = local_times(ctx)
    card = deck.create_card(target.id, column.id, title, description=description or "", duedate=_due(due, local),
                            order=len(column.cards))
    done = f"Card {card.id} '{title}' was created on board {target.id}, stack {column.id}"
    for label in tags:
        _after_write(done, partial(deck.assign_label, target.id, column.id, card.id, label.id))
    for user in people:
        _after_write(done, partial(deck.assign_user, target.id, column.id, card.id, user))
    final = _after_write(done, lambda: deck.card(target.id, column.id, card.id))
    return envelope({"card": full_card_entry(final, target.id), "warnings": local.notes()})


def _locate(deck: Any, board: Any, card_id: int) -> tuple[list[Any], Any]:
    """The board's stacks and the card on it (open or archived); a card not on the board is a misuse."""
    stacks = deck.stacks(board.id)
    card = find_card(stacks, card_id)
    if card is None:
        card = find_card(deck.archived_stacks(board.id), card_id)
        if card is not None:   # the archived listing carries no labels or assignees: read the card itself
            card = deck.card(board.id, card.stack_id, card.id)
    if card is None:
        raise misuse(f"No card {card_id} on board {board.id} '{board.title}'. Call deck_list_cards with this "
                     "board for its card ids; do not guess ids.", status=ToolStatus.UNKNOWN_CARD)
    return stacks, card


def update_card(ctx: ServerContext, *, board: int | str, card: int, fields: dict[str, Any],
                labels: list[str] | None, assignees: list[str] | None) -> CallToolResult:
    """The deck_update_card tool: read, merge the fields named, write; label/assignee sets by their diff."""
    if not fields and labels is None and assignees is None:
        raise misuse("Nothing to change: name at least one of title, description, due, done, labels, "
                     "assignees.", status=ToolStatus.NO_CHANGE)
    if "title" in fields and not " ".join(str(fields["title"]).split()):
        raise misuse("title cannot be empty.", status=ToolStatus.BAD_TITLE)
    deck = ctx.client().deck
    target = pick_board(deck.boards(details=labels is not None), board)   # the plain list has no labels
    _, before = _locate(deck, target, card)
    tags = pick_labels(target, labels) if labels is not None else None
    people = pick_members(target, assignees) if assignees is not None else None
    local = local_times(ctx)
    changes = _changes(before, fields, local)
    sid, cid = before.stack_id, before.id
    if changes:
        deck.update_card(target.id, sid, cid, **changes)
    done = f"Card {cid}'s fields were saved" if changes else f"Card {cid} was found"
    changed = sorted("due" if k == "duedate" else k for k in changes)   # the tool's names, not Deck's
    if tags is not None:
        have, want = {lb.id for lb in before.labels}, {lb.id for lb in tags}
        for lid in sorted(want - have):
            _after_write(done, partial(deck.assign_label, target.id, sid, cid, lid))
        for lid in sorted(have - want):
            _after_write(done, partial(deck.remove_label, target.id, sid, cid, lid))
        changed += ["labels"] if have != want else []
    if people is not None:
        had, want_users = set(before.assigned_users), set(people)
        for uid in sorted(want_users - had):
            _after_write(done, partial(deck.assign_user, target.id, sid, cid, uid))
        for uid in sorted(had - want_users):
            _after_write(done, partial(deck.unassign_user, target.id, sid, cid, uid))
        changed += ["assignees"] if had != want_users else []
    final = deck.card(target.id, sid, cid)
    payload: dict[str, Any] = {"card": full_card_entry(final, target.id), "changed": sorted(changed),
                               "warnings": local.notes()}
    if not changed:
        payload["hint"] = "The card already had these values; nothing was written."
    return envelope(payload)


def _changes(card: Any, fields: dict[str, Any], local: LocalTimes) -> dict[str, Any]:
    """Deck field -> new value, for the named fields whose value differs from the card's."""
    out: dict[str, Any] = {}
    if "title" in fields:
        out["title"] = " ".join(str(fields["title"]).split())
    if "description" in fields:
        out["description"] = fields["description"]
    if "due" in fields:
        new = _due(fields["due"], local)
        out["duedate"] = card.duedate if new is not None and _stored_due(card) == new else new
    if "done" in fields:
        # Deck stores when a card was done; marking a done card done again keeps that moment.
        out["done"] = (card.done or dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")) \
            if fields["done"] else None
    current = {"title": card.title, "description": card.description, "duedate": card.duedate, "done": card.done}
    return {k: v for k, v in out.items() if v != current[k]}


def move_card(ctx: ServerContext, *, board: int | str, card: int, stack: int | str) -> CallToolResult:
    """The deck_move_card tool: to the end of the target stack (in the route), then read back to confirm."""
    deck = ctx.client().deck
    target = pick_board(deck.boards(), board)
    stacks, current = _locate(deck, target, card)
    if current.archived:
        raise misuse(f"Card {card} is archived: Deck does not move archived cards. Unarchive it in Deck first.",
                     status=ToolStatus.ARCHIVED_CARD)
    column = pick_stack(stacks, stack, target)
    source = next((s for s in stacks if s.id == current.stack_id), None)
    origin = {"stack": current.stack_id, "title": source.title if source else ""}
    if current.stack_id == column.id:
        return envelope({"card": full_card_entry(current, target.id), "from": origin, "verified": True,
                         "hint": f"The card was already in '{column.title}'; nothing was moved."})
    moved = deck.move_card(target.id, current.id, column.id, len(column.cards))
    if moved.stack_id != column.id:
        raise ToolFailure(
            f"Deck answered OK but card {card} is still in stack {moved.stack_id}, not '{column.title}' "
            f"({column.id}): this Deck version ignores moves through its API. Tell the user to move it in the "
            "Deck web interface, or to update Deck.", category=Category.REFUSED, status=ToolStatus.MOVE_NOT_APPLIED)
    return envelope({"card": full_card_entry(moved, target.id), "from": origin, "verified": True})
