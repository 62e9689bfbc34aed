"""Talk (spreed) OCS: rooms v4 (list, create, get, add participant) and chat v1 (post, read a page)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .http import Transport

SOURCE = "talk"
ROOMS = "/ocs/v2.php/apps/spreed/api/v4/room"
CHAT = "/ocs/v2.php/apps/spreed/api/v1/chat"
ROOM_TYPES = {1: "one_to_one", 2: "group", 3: "public", 4: "changelog", 5: "former_one_to_one", 6: "note_to_self"}


@dataclass(frozen=True)
class Room:
    token: str
    name: str
    display_name: str
    type: int
    kind: str              # "one_to_one", "group", "public", ...
    description: str = ""
    unread: int = 0
    last_activity: int = 0
    url: str = ""          # the conversation link a person opens


@dataclass(frozen=True)
class Participant:
    id: str
    display_name: str
    source: str            # "users", "groups", "guests", ...
    attendee_id: int | None = None


@dataclass(frozen=True)
class ChatMessage:
    id: int
    token: str
    actor_id: str
    actor_name: str
    message: str
    timestamp: int
    system: str = ""          # systemMessage ("user_added", ...); "" for what a person wrote
    kind: str = "comment"     # messageType: comment, system, command, comment_deleted, ...
    actor_type: str = "users"
    parameters: dict[str, Any] = field(default_factory=dict)   # {mention-user1: {type, id, name}, ...}


def room_from_json(d: dict[str, Any], base_url: str = "") -> Room:
    t = int(d.get("type") or 0)
    token = str(d.get("token") or "")
    return Room(token=token, name=str(d.get("name") or ""),
                display_name=str(d.get("displayName") or d.get("name") or ""), type=t,
                kind=ROOM_TYPES.get(t, str(t)), description=str(d.get("description") or ""),
                unread=int(d.get("unreadMessages") or 0), last_activity=int(d.get("lastActivity") or 0),
                url=f"{base_url.rstrip('/')}/index.php/call/{token}" if base_url and token else "")


def participant_from_json(d: dict[str, Any]) -> Participant:
    return Participant(id=str(d.get("actorId") or ""), display_name=str(d.get("displayName") or ""),
                       source=str(d.get("actorType") or ""), attendee_id=d.get("attendeeId"))


def message_from_json(d: dict[str, Any]) -> ChatMessage:
    return ChatMessage(id=int(d.get("id") or 0), token=str(d.get("token") or ""), actor_id=str(d.get("actorId") or ""),
                       actor_name=str(d.get("actorDisplayName") or ""), message=str(d.get("message") or ""),
                       timestamp=int(d.get("timestamp") or 0), system=str(d.get("systemMessage") or ""),
                       kind=str(d.get("messageType") or "comment"), actor_type=str(d.get("actorType") or ""),
                       parameters=params if isinstance(params := d.get("messageParameters"), dict) else {})


class Talk:
    """Talk calls of one account."""

    def __init__(self, transport: Transport, public_url: str = "") -> None:
        self._t = transport
        self._public_url = public_url

    def _call(self, method: str, url: str, *, path: str, body: Any = None, params: Any = None,
              idempotent: bool | None = None) -> Any:
        resp = self._t.request(method, url, source=SOURCE, path=path, json_body=body, params=params,
                               idempotent=idempotent)
        return self._t.ocs_data(resp, source=SOURCE, path=path)

    def rooms(self) -> list[Room]:
        """Conversations this account is in."""
        return [room_from_json(r, self._public_url) for r in self._call("GET", ROOMS, path="rooms") or []]

    def room(self, token: str) -> Room:
        return room_from_json(self._call("GET", f"{ROOMS}/{token}", path=f"room {token}"), self._public_url)

    def create_room(self, name: str | None = None, *, room_type: int = 2, invite: str | None = None) -> Room:
        """A group room named `name` (type 2), or the one-to-one room with `invite` (type 1, reused when it exists)."""
        body: dict[str, Any] = {"roomType": int(room_type)}
        if name:
            body["roomName"] = name
        if invite:
            body["invite"] = invite
        # A one-to-one create is idempotent on the server (200 with the same token).
        return room_from_json(self._call("POST", ROOMS, path="rooms", body=body, idempotent=room_type == 1),
                              self._public_url)

    def allow_guests(self, token: str) -> Room:
        """Open a group room to guests with the link (type 2 -> 3); already public is fine."""
        return room_from_json(self._call("POST", f"{ROOMS}/{token}/public", path=f"room {token}", idempotent=True),
                              self._public_url)

    def delete_room(self, token: str) -> None:
        """Delete a conversation (moderators only)."""
        self._call("DELETE", f"{ROOMS}/{token}", path=f"room {token}", idempotent=True)

    def participants(self, token: str) -> list[Participant]:
        return [participant_from_json(p) for p in self._call("GET", f"{ROOMS}/{token}/participants",
                                                             path=f"room {token}") or []]

    def add_participant(self, token: str, user_id: str, *, source: str = "users") -> None:
        """Add an account (or group) to a room; adding twice is harmless."""
        self._call("POST", f"{ROOMS}/{token}/participants", path=f"room {token}",
                   body={"newParticipant": user_id, "source": source}, idempotent=True)

    def post_message(self, token: str, message: str, *, reply_to: int | None = None) -> ChatMessage:
        """Post a chat message (v1 chat API)."""
        body: dict[str, Any] = {"message": message}
        if reply_to is not None:
            body["replyTo"] = int(reply_to)
        return message_from_json(self._call("POST", f"{CHAT}/{token}", path=f"room {token}", body=body))

    def messages(self, token: str, *, limit: int = 20) -> list[ChatMessage]:
        """The latest messages, newest first."""
        data = self._call("GET", f"{CHAT}/{token}", path=f"room {token}",
                          params={"lookIntoFuture": 0, "limit": max(1, min(int(limit), 200))})
        return [message_from_json(m) for m in data or []]

    def chat_page(self, token: str, *, limit: int = 50,
                  before: int | None = None) -> tuple[list[ChatMessage], int | None]:
        """One page of history, newest first: messages older than `before` (a message id), at most `limit`.

        Returns (messages, the X-Chat-Last-Given id to pass as `before` for the next page, or None). Talk
        answers 304 with an empty body when nothing older is left (seen on Nextcloud 34).
        """
        params: dict[str, Any] = {"lookIntoFuture": 0, "limit": max(1, min(int(limit), 200)),
                                  "setReadMarker": 0}
        if before is not None:
            params["lastKnownMessageId"] = int(before)
        path = f"room {token}"
        resp = self._t.request("GET", f"{CHAT}/{token}", source=SOURCE, path=path, params=params,
                               ok=(200, 304))
        if resp.status_code == 304:
            return [], None
        data = self._t.ocs_data(resp, source=SOURCE, path=path)
        last = resp.headers.get("x-chat-last-given")
        return [message_from_json(m) for m in data or []], int(last) if last and last.isdigit() else None
