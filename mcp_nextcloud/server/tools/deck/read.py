"""Deck look-ups shared by the Deck tools: boards, stacks, labels and members by id or name; card entries.

Every card a tool returns carries `card`, `board` and `stack`: the same keys
the Deck tools take as arguments, so a handle is passed back as it was seen.
Names are matched exactly (ignoring case); a name that fits several objects
is refused with the candidates, never guessed.
"""
from __future__ import annotations

import datetime as dt
from typing import Any, Iterable, Sequence, TypeVar

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import misuse

DESCRIPTION_CHARS = 300        # a card's description in a one-board listing, cut here (the cut is marked)
LIST_HINT = "Call deck_list_cards (optionally with board) for the valid ids and names."
T = TypeVar("T")


# Per kind of Deck object a name picks: the statuses of an empty, an ambiguous and an unknown name.
PICK_STATUS: dict[str, tuple[ToolStatus, ToolStatus, ToolStatus]] = {
    "board": (ToolStatus.BAD_BOARD, ToolStatus.AMBIGUOUS_BOARD, ToolStatus.UNKNOWN_BOARD),
    "stack": (ToolStatus.BAD_STACK, ToolStatus.AMBIGUOUS_STACK, ToolStatus.UNKNOWN_STACK),
    "label": (ToolStatus.BAD_LABEL, ToolStatus.AMBIGUOUS_LABEL, ToolStatus.UNKNOWN_LABEL),
    "member": (ToolStatus.BAD_MEMBER, ToolStatus.AMBIGUOUS_MEMBER, ToolStatus.UNKNOWN_MEMBER),
    "share": (ToolStatus.BAD_SHARE, ToolStatus.AMBIGUOUS_SHARE, ToolStatus.UNKNOWN_SHARE),
}


def _key(value: Any) -> str:
    return " ".join(str(value).split()).casefold()


def pick(items: Sequence[T], wanted: int | str, *, what: str, where: str = "",
         ident: Any = lambda x: x.id, name: Any = lambda x: x.title) -> T:
    """The one item whose id is `wanted` or whose name is `wanted` (case-insensitive); else a misuse error."""
    if isinstance(wanted, str) and not wanted.strip():
        raise misuse(f"The {what} is empty: give its id or exact name. {LIST_HINT}", status=PICK_STATUS[what][0])
    found = [x for x in items if _key(ident(x)) == _key(wanted)]   # ids first: 4, "4", or a user id
    if not found:
        found = [x for x in items if _key(name(x)) == _key(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        listed = "; ".join(f"{what} {ident(x)} '{name(x)}'" for x in found[:10])
        raise misuse(f"{wanted!r} names {len(found)} {what}s{where}: {listed}. Call again with the {what} id.",
                     status=PICK_STATUS[what][1])
    known = ", ".join(f"{ident(x)} '{name(x)}'" for x in items[:15]) or "none"
    raise misuse(f"No {what} {wanted!r}{where}. Known: {known}. Use one of these ids or names; "
                 "do not guess.", status=PICK_STATUS[what][2])


def pick_board(boards: Sequence[Any], wanted: int | str) -> Any:
    return pick(boards, wanted, what="board")


def pick_stack(stacks: Sequence[Any], wanted: int | str, board: Any) -> Any:
    return pick(stacks, wanted, what="stack", where=f" on board {board.id} '{board.title}'")


def pick_labels(board: Any, wanted: Iterable[int | str]) -> list[Any]:
    """The board's labels named (or numbered) in `wanted`, each exactly once."""
    out: list[Any] = []
    for w in wanted:
        label = pick(board.labels, w, what="label", where=f" on board {board.id} '{board.title}'")
        if label not in out:
            out.append(label)
    return out


def pick_members(board: Any, wanted: Iterable[str]) -> list[str]:
    """User ids of the board's members named by id or display name (Deck only assigns members)."""
    users = [m for m in board.members if m.kind == "user"]
    out: list[str] = []
    for w in wanted:
        member = pick(users, w, what="member", where=f" of board {board.id} '{board.title}' (only members "
                      "can be assigned; share the board with them first)",
                      ident=lambda m: m.id, name=lambda m: m.name)
        if member.id not in out:
            out.append(member.id)
    return out


def find_card(stacks: Sequence[Any], card_id: int) -> Any:
    """The card with this id among the stacks' cards, or None."""
    return next((c for s in stacks for c in s.cards if c.id == int(card_id)), None)


def parse_when(value: str, *, field: str) -> dt.datetime:
    """An ISO date or date-time as an aware datetime (UTC when no offset is given); misuse if malformed."""
    try:
        when = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise misuse(f"{field} {value!r} is not an ISO date: use e.g. 2026-12-31 or 2026-12-31T17:00:00+01:00.",
                     status=ToolStatus.BAD_DATE) from None
    return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)


def due_of(card: Any) -> dt.datetime | None:
    """The card's due date, or None when it has none (or Deck sent one we cannot read)."""
    if not card.duedate:
        return None
    try:
        return parse_when(str(card.duedate), field="duedate")
    except Exception:  # a server value we cannot parse never fails a listing; the card shows it as is
        return None


def board_entry(board: Any, stacks: Sequence[Any], *, full: bool) -> dict[str, Any]:
    """A board as listings show it: id, title, stacks; `full` adds its labels and members."""
    entry: dict[str, Any] = {"board": board.id, "title": board.title,
                             "stacks": [{"stack": s.id, "title": s.title} for s in stacks]}
    if board.archived:
        entry["archived"] = True
    if full:
        entry["labels"] = [{"label": label.id, "title": label.title} for label in board.labels]
        entry["members"] = [_member_entry(m) for m in board.members]
    return entry


def _member_entry(member: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {member.kind if member.kind in ("user", "group") else "id": member.id}
    if member.name and member.name != member.id:
        entry["name"] = member.name
    if not member.can_edit:
        entry["readOnly"] = True
    return entry


def card_entry(card: Any, board_id: int, *, description: bool = False, archived: bool = False) -> dict[str, Any]:
    """A card with the handles the other Deck tools take (card, board, stack) and what a person scans for.

    Deck's archived listing carries no labels or assignees: an archived card
    leaves them out rather than showing empty lists.
    """
    entry: dict[str, Any] = {"card": card.id, "board": board_id, "stack": card.stack_id, "title": card.title}
    if card.duedate:
        entry["due"] = card.duedate
    if card.done:
        entry["done"] = True
    if archived:
        entry["archived"] = True
    else:
        if card.labels:
            entry["labels"] = [label.title for label in card.labels]
        if card.assigned_users:
            entry["assignees"] = list(card.assigned_users)
    if description and card.description:
        text = card.description
        entry["description"] = text if len(text) <= DESCRIPTION_CHARS else text[:DESCRIPTION_CHARS] + "…"
    return entry


def full_card_entry(card: Any, board_id: int) -> dict[str, Any]:
    """A card as the write tools return it: every field, the description whole."""
    entry = card_entry(card, board_id, archived=card.archived)
    entry["description"] = card.description
    return entry
