"""Deck REST API (/index.php/apps/deck/api/v1.0): boards, stacks with cards, card create/update/move.

Card PUT is a full replace (omitted fields are cleared), so updates read the
card first and send every field back. Moves go through reorder with the
target stack in the URL and are verified by re-reading the card.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import NextcloudError
from .http import Transport

SOURCE = "deck"
BASE = "/index.php/apps/deck/api/v1.0"


@dataclass(frozen=True)
class Label:
    id: int
    title: str
    color: str


@dataclass(frozen=True)
class Card:
    id: int
    title: str
    stack_id: int
    description: str = ""
    order: int = 0
    type: str = "plain"
    owner: str = ""
    duedate: str | None = None
    done: str | None = None
    archived: bool = False
    labels: list[Label] = field(default_factory=list)
    assigned_users: list[str] = field(default_factory=list)
    etag: str = ""


@dataclass(frozen=True)
class Stack:
    id: int
    title: str
    board_id: int
    order: int = 0
    cards: list[Card] = field(default_factory=list)


@dataclass(frozen=True)
class Board:
    id: int
    title: str
    color: str = ""
    owner: str = ""
    archived: bool = False
    labels: list[Label] = field(default_factory=list)
    can_edit: bool = False


def _uid(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("uid") or value.get("primaryKey") or "")
    return str(value or "")


def label_from_json(d: dict) -> Label:
    return Label(id=int(d["id"]), title=str(d.get("title") or ""), color=str(d.get("color") or ""))


def card_from_json(d: dict) -> Card:
    """A Card from Deck's JSON (owner is an object in lists, a string in reorder answers)."""
    users = [_uid(a.get("participant")) for a in d.get("assignedUsers") or [] if isinstance(a, dict)]
    return Card(id=int(d["id"]), title=str(d.get("title") or ""), stack_id=int(d.get("stackId") or 0),
                description=str(d.get("description") or ""), order=int(d.get("order") or 0),
                type=str(d.get("type") or "plain"), owner=_uid(d.get("owner")),
                duedate=d.get("duedate"), done=d.get("done"), archived=bool(d.get("archived")),
                labels=[label_from_json(x) for x in d.get("labels") or [] if isinstance(x, dict)],
                assigned_users=[u for u in users if u], etag=str(d.get("ETag") or ""))


def stack_from_json(d: dict) -> Stack:
    return Stack(id=int(d["id"]), title=str(d.get("title") or ""), board_id=int(d.get("boardId") or 0),
                 order=int(d.get("order") or 0),
                 cards=sorted((card_from_json(c) for c in d.get("cards") or []), key=lambda c: c.order))


def board_from_json(d: dict) -> Board:
    perms = d.get("permissions") or {}
    return Board(id=int(d["id"]), title=str(d.get("title") or ""), color=str(d.get("color") or ""),
                 owner=_uid(d.get("owner")), archived=bool(d.get("archived")),
                 labels=[label_from_json(x) for x in d.get("labels") or [] if isinstance(x, dict)],
                 can_edit=bool(perms.get("PERMISSION_EDIT")))


class Deck:
    """Deck calls of one account. Errors: a missing board/card is 403 in Deck, not 404."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _call(self, method: str, url: str, *, path: str, body: Any = None, idempotent: bool | None = None) -> Any:
        resp = self._t.request(method, BASE + url, source=SOURCE, path=path, json_body=body,
                               idempotent=idempotent)
        return self._t.json(resp, source=SOURCE, path=path)

    def boards(self) -> list[Board]:
        """Boards this account can see."""
        return [board_from_json(b) for b in self._call("GET", "/boards", path="boards") or []
                if isinstance(b, dict) and not b.get("deletedAt")]

    def board(self, board_id: int) -> Board:
        return board_from_json(self._call("GET", f"/boards/{int(board_id)}", path=f"board {board_id}"))

    def create_board(self, title: str, color: str = "0082c9") -> Board:
        return board_from_json(self._call("POST", "/boards", path="boards", body={"title": title, "color": color}))

    def stacks(self, board_id: int) -> list[Stack]:
        """The board's stacks with their (non-archived) cards, in order."""
        data = self._call("GET", f"/boards/{int(board_id)}/stacks", path=f"board {board_id}")
        return sorted((stack_from_json(s) for s in data or []), key=lambda s: s.order)

    def create_stack(self, board_id: int, title: str, order: int = 0) -> Stack:
        data = self._call("POST", f"/boards/{int(board_id)}/stacks", path=f"board {board_id}",
                          body={"title": title, "order": order})
        return stack_from_json(data)

    def card(self, board_id: int, stack_id: int, card_id: int) -> Card:
        return card_from_json(self._call("GET", f"/boards/{int(board_id)}/stacks/{int(stack_id)}/cards/{int(card_id)}",
                                         path=f"card {card_id}"))

    def create_card(self, board_id: int, stack_id: int, title: str, *, description: str = "",
                    duedate: str | None = None, order: int = 999) -> Card:
        """A new plain card at the end of the stack."""
        body: dict[str, Any] = {"title": title, "type": "plain", "order": order, "description": description}
        if duedate:
            body["duedate"] = duedate
        return card_from_json(self._call("POST", f"/boards/{int(board_id)}/stacks/{int(stack_id)}/cards",
                                         path=f"stack {stack_id}", body=body))

    def update_card(self, board_id: int, stack_id: int, card_id: int, **changes: Any) -> Card:
        """Change some fields (title, description, duedate, done, order, type) keeping the others.

        GET then full PUT, because Deck's PUT clears every omitted field.
        """
        allowed = {"title", "description", "duedate", "done", "order", "type"}
        unknown = set(changes) - allowed
        if unknown:
            raise NextcloudError("bad_request", f"Unknown card field(s): {', '.join(sorted(unknown))}. "
                                 f"Use only {', '.join(sorted(allowed))}. Do not retry.")
        cur = self.card(board_id, stack_id, card_id)
        body = {"title": cur.title, "type": cur.type, "owner": cur.owner, "description": cur.description,
                "order": cur.order, "duedate": cur.duedate, "done": cur.done}
        body.update(changes)
        data = self._call("PUT", f"/boards/{int(board_id)}/stacks/{int(stack_id)}/cards/{int(card_id)}",
                          path=f"card {card_id}", body=body, idempotent=True)   # a full replace: same result twice
        return card_from_json(data)

    def move_card(self, board_id: int, card_id: int, from_stack: int, to_stack: int, order: int = 0) -> Card:
        """Move a card to `to_stack` at position `order`, then re-read it to prove the move happened."""
        self._call("PUT", f"/boards/{int(board_id)}/stacks/{int(to_stack)}/cards/{int(card_id)}/reorder",
                   path=f"card {card_id}", body={"stackId": int(to_stack), "order": int(order)},
                   idempotent=True)
        card = self.card(board_id, to_stack, card_id)
        if card.stack_id != int(to_stack):
            raise NextcloudError(
                "server", f"Deck answered OK but card {card_id} is still in stack {card.stack_id}, not {to_stack}. "
                "Re-read the board before trying again; retry once at most.")
        return card

    def delete_card(self, board_id: int, stack_id: int, card_id: int) -> None:
        self._call("DELETE", f"/boards/{int(board_id)}/stacks/{int(stack_id)}/cards/{int(card_id)}",
                   path=f"card {card_id}")
