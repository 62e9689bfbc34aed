"""Deck REST API (/index.php/apps/deck/api/v1.0): boards, stacks with cards, card create/update/move.

Card PUT is a full replace (omitted fields are cleared), so updates read the
card first and send every field back. Moves go through reorder with the
target stack in the URL and are verified by re-reading the card.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .errors import ErrorCode, NextcloudError
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
class Member:
    """Someone a board is shared with (or its owner): a user id, or a group for kind "group"."""

    id: str
    name: str = ""
    kind: str = "user"    # "user", "group", "circle"
    can_edit: bool = True


@dataclass(frozen=True)
class Board:
    id: int
    title: str
    color: str = ""
    owner: str = ""
    archived: bool = False
    labels: list[Label] = field(default_factory=list)
    can_edit: bool = False
    members: list[Member] = field(default_factory=list)   # the owner first, then the ACL's participants


def _uid(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("uid") or value.get("primaryKey") or "")
    return str(value or "")


def label_from_json(d: dict[str, Any]) -> Label:
    return Label(id=int(d["id"]), title=str(d.get("title") or ""), color=str(d.get("color") or ""))


def card_from_json(d: dict[str, Any]) -> Card:
    """A Card from Deck's JSON (owner is an object in lists, a string in reorder answers)."""
    users = [_uid(a.get("participant")) for a in d.get("assignedUsers") or [] if isinstance(a, dict)]
    return Card(id=int(d["id"]), title=str(d.get("title") or ""), stack_id=int(d.get("stackId") or 0),
                description=str(d.get("description") or ""), order=int(d.get("order") or 0),
                type=str(d.get("type") or "plain"), owner=_uid(d.get("owner")),
                duedate=d.get("duedate"), done=d.get("done"), archived=bool(d.get("archived")),
                labels=[label_from_json(x) for x in d.get("labels") or [] if isinstance(x, dict)],
                assigned_users=[u for u in users if u], etag=str(d.get("ETag") or ""))


def stack_from_json(d: dict[str, Any]) -> Stack:
    return Stack(id=int(d["id"]), title=str(d.get("title") or ""), board_id=int(d.get("boardId") or 0),
                 order=int(d.get("order") or 0),
                 cards=sorted((card_from_json(c) for c in d.get("cards") or []), key=lambda c: c.order))


_ACL_KINDS = {0: "user", 1: "group", 7: "circle"}


def _member(participant: Any, kind: str = "user", can_edit: bool = True) -> Member:
    name = participant.get("displayname") if isinstance(participant, dict) else None
    uid = _uid(participant)
    return Member(id=uid, name=str(name or uid), kind=kind, can_edit=can_edit)


def board_from_json(d: dict[str, Any]) -> Board:
    perms = d.get("permissions") or {}
    members = [_member(d.get("owner"))]
    for acl in d.get("acl") or []:
        if isinstance(acl, dict):
            kind = _ACL_KINDS.get(int(acl.get("type") or 0), "other")
            members.append(_member(acl.get("participant"), kind, bool(acl.get("permissionEdit"))))
    return Board(id=int(d["id"]), title=str(d.get("title") or ""), color=str(d.get("color") or ""),
                 owner=_uid(d.get("owner")), archived=bool(d.get("archived")),
                 labels=[label_from_json(x) for x in d.get("labels") or [] if isinstance(x, dict)],
                 can_edit=bool(perms.get("PERMISSION_EDIT")), members=[m for m in members if m.id])


class Deck:
    """Deck calls of one account. Errors: a missing board/card is 403 in Deck, not 404."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _call(self, method: str, url: str, *, path: str, body: Any = None, idempotent: bool | None = None) -> Any:
        resp = self._t.request(method, BASE + url, source=SOURCE, path=path, json_body=body,
                               idempotent=idempotent)
        return self._t.json(resp, source=SOURCE, path=path)

    def boards(self, *, details: bool = False) -> list[Board]:
        """Boards this account can see. Deck's plain list carries every board's ACL but no labels
        (`labels: []`); `details` asks for them in the same one request (?details=true)."""
        url = "/boards?details=true" if details else "/boards"
        return [board_from_json(b) for b in self._call("GET", url, path="boards") or []
                if isinstance(b, dict) and not b.get("deletedAt")]

    def board(self, board_id: int) -> Board:
        return board_from_json(self._call("GET", f"/boards/{int(board_id)}", path=f"board {board_id}"))

    def create_board(self, title: str, color: str = "0082c9") -> Board:
        return board_from_json(self._call("POST", "/boards", path="boards", body={"title": title, "color": color}))

    def stacks(self, board_id: int) -> list[Stack]:
        """The board's stacks with their (non-archived) cards, in order."""
        data = self._call("GET", f"/boards/{int(board_id)}/stacks", path=f"board {board_id}")
        return sorted((stack_from_json(s) for s in data or []), key=lambda s: s.order)

    def archived_stacks(self, board_id: int) -> list[Stack]:
        """The board's stacks holding only its archived cards (Deck lists those on their own route)."""
        data = self._call("GET", f"/boards/{int(board_id)}/stacks/archived", path=f"board {board_id}")
        return sorted((stack_from_json(s) for s in data or []), key=lambda s: s.order)

    def create_stack(self, board_id: int, title: str, order: int = 0) -> Stack:
        data = self._call("POST", f"/boards/{int(board_id)}/stacks", path=f"board {board_id}",
                          body={"title": title, "order": order})
        return stack_from_json(data)

    def create_label(self, board_id: int, title: str, color: str) -> Label:
        return label_from_json(self._call("POST", f"/boards/{int(board_id)}/labels", path=f"board {board_id}",
                                          body={"title": title, "color": color}))

    def share_board(self, board_id: int, user_id: str, *, edit: bool = True) -> Member:
        """Add a user to the board's ACL. Deck stores any participant name it is given: check it exists first."""
        data = self._call("POST", f"/boards/{int(board_id)}/acl", path=f"board {board_id}",
                          body={"type": 0, "participant": user_id, "permissionEdit": bool(edit),
                                "permissionShare": False, "permissionManage": False})
        return _member(data.get("participant") if isinstance(data, dict) else user_id, "user", bool(edit))

    def _card_url(self, board_id: int, stack_id: int, card_id: int) -> str:
        return f"/boards/{int(board_id)}/stacks/{int(stack_id)}/cards/{int(card_id)}"

    def card(self, board_id: int, stack_id: int, card_id: int) -> Card:
        """One card; Deck finds it by id (the stack in the URL must be one of the board's)."""
        return card_from_json(self._call("GET", self._card_url(board_id, stack_id, card_id), path=f"card {card_id}"))

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

        GET then full PUT, because Deck's PUT clears every omitted field. The
        PUT goes to the stack the card is in now (and says so in the body):
        Deck moves a card to the stack its PUT names.
        """
        allowed = {"title", "description", "duedate", "done", "order", "type"}
        unknown = set(changes) - allowed
        if unknown:
            raise NextcloudError(ErrorCode.BAD_REQUEST, f"Unknown card field(s): {', '.join(sorted(unknown))}. "
                                 f"Use only {', '.join(sorted(allowed))}.")
        cur = self.card(board_id, stack_id, card_id)
        body = {"title": cur.title, "type": cur.type, "owner": cur.owner, "description": cur.description,
                "order": cur.order, "duedate": cur.duedate, "done": cur.done, "stackId": cur.stack_id}
        body.update(changes)
        data = self._call("PUT", self._card_url(board_id, cur.stack_id, card_id),
                          path=f"card {card_id}", body=body, idempotent=True)   # a full replace: same result twice
        return card_from_json(data)

    def _card_action(self, board_id: int, stack_id: int, card_id: int, action: str, body: dict[str, Any]) -> Any:
        # Setting a label or an assignee is a state, not an increment: safe to repeat.
        return self._call("PUT", f"{self._card_url(board_id, stack_id, card_id)}/{action}",
                          path=f"card {card_id}", body=body, idempotent=True)

    def assign_label(self, board_id: int, stack_id: int, card_id: int, label_id: int) -> None:
        self._card_action(board_id, stack_id, card_id, "assignLabel", {"labelId": int(label_id)})

    def remove_label(self, board_id: int, stack_id: int, card_id: int, label_id: int) -> None:
        self._card_action(board_id, stack_id, card_id, "removeLabel", {"labelId": int(label_id)})

    def assign_user(self, board_id: int, stack_id: int, card_id: int, user_id: str) -> None:
        """Assign a board member (Deck answers 400 for a non-member or one already assigned)."""
        self._card_action(board_id, stack_id, card_id, "assignUser", {"userId": user_id})

    def unassign_user(self, board_id: int, stack_id: int, card_id: int, user_id: str) -> None:
        self._card_action(board_id, stack_id, card_id, "unassignUser", {"userId": user_id})

    def move_card(self, board_id: int, card_id: int, to_stack: int, order: int = 0) -> Card:
        """Move a card to `to_stack` at position `order`; the card as read back afterwards.

        The target stack goes in the URL (Deck versions whose reorder reads the
        URL's stack ignore the body's). Some versions still answer 200 and move
        nothing through the API: the read-back shows it, and the web UI's own
        route is tried once. The caller compares the returned card's stack_id.
        """
        body = {"stackId": int(to_stack), "order": int(order)}
        self._call("PUT", f"{self._card_url(board_id, to_stack, card_id)}/reorder", path=f"card {card_id}",
                   body=body, idempotent=True)
        card = self.card(board_id, to_stack, card_id)
        if card.stack_id == int(to_stack):
            return card
        try:
            self._t.request("PUT", f"/index.php/apps/deck/cards/{int(card_id)}/reorder", source=SOURCE,
                            path=f"card {card_id}", json_body=body, idempotent=True)
        except NextcloudError:
            return card   # no such route on this version (its 404 would read as "Deck missing"): not moved
        return self.card(board_id, to_stack, card_id)

    def archive_card(self, board_id: int, stack_id: int, card_id: int) -> None:
        self._card_action(board_id, stack_id, card_id, "archive", {})

    def delete_card(self, board_id: int, stack_id: int, card_id: int) -> None:
        self._call("DELETE", self._card_url(board_id, stack_id, card_id), path=f"card {card_id}")

    def delete_board(self, board_id: int) -> None:
        """Move a board to Deck's trash (restorable with undo_delete until it is purged)."""
        self._call("DELETE", f"/boards/{int(board_id)}", path=f"board {board_id}")
