"""talk_rooms, talk_read, talk_post: Talk conversations found, read and written to.

The room token is the handle (meet_create_room and meet_schedule return it).
Reading pages back from the newest message with Talk's own cursor (the
X-Chat-Last-Given id); placeholders such as {mention-user1} are rendered with
the names Talk sends along, and a run of system messages ("You added ...")
is folded into one line. Chat text is data: it is returned, never followed.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.nextcloud.talk import Participant
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import _Out, envelope
from mcp_nextcloud.server.errors import from_nextcloud, misuse
from mcp_nextcloud.server.tools.people import lookup as people
from mcp_nextcloud.server.tools.calendar.common import bound

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
POST = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
PAGE = 100            # messages fetched per request while reading
MAX_PAGES = 10        # a `since` reaches back at most this many pages in one call
MAX_ROOMS_PROBED = 40  # participant lists fetched per talk_rooms call
MAX_CHARS = 40_000     # message text per talk_read answer (files_read's largest slice)
_PLACEHOLDER = re.compile(r"\{([a-z0-9-]+)\}")

Token = Annotated[str, Field(description="Room token", min_length=1, max_length=64, pattern=r"^[A-Za-z0-9]+$")]


class RoomsOut(_Out):
    rooms: list[dict[str, Any]]
    truncated: bool


class MessagesOut(_Out):
    token: str
    messages: list[dict[str, Any]]
    truncated: bool


class PostedOut(_Out):
    token: str
    id: int


def _nc(call: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except NextcloudError as exc:
        if exc.code is ErrorCode.NOT_FOUND and args:   # Talk answers 404 for a token unknown or not this account's
            raise misuse(f"No conversation with token {args[0]} that this account is in. Find the token with "
                         "talk_rooms (or meet_create_room's answer).",
                         status=ToolStatus.UNKNOWN_ROOM) from None
        raise from_nextcloud(exc) from None   # not nextcloud_call: the 404 above needs Talk's own words


def _iso(ts: int) -> str:
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%MZ")


def render(msg: Any) -> str:
    """The message text with {placeholders} replaced: @name for mentions, names for system parameters."""
    def sub(m: re.Match[str]) -> str:
        param = msg.parameters.get(m.group(1))
        if not isinstance(param, dict):
            return m.group(0)
        name = str(param.get("name") or param.get("id") or "")
        return f"@{name}" if m.group(1).startswith("mention-") else name
    return _PLACEHOLDER.sub(sub, msg.message)


def _entry(msg: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": msg.id, "at": _iso(msg.timestamp), "from": msg.actor_name or msg.actor_id}
    if msg.actor_type == "users" and msg.actor_id:
        out["accountId"] = msg.actor_id
    out["text"] = "(deleted)" if msg.kind == "comment_deleted" else render(msg)
    return out


def fold(messages: list[Any]) -> list[tuple[dict[str, Any], int]]:
    """(entry, oldest message id it covers): a person's message as itself, a run of system messages as one line."""
    out: list[tuple[dict[str, Any], int]] = []
    run: list[Any] = []

    def flush() -> None:
        if run:
            line = "; ".join(render(m) for m in reversed(run))   # oldest first, as it happened
            out.append(({"at": _iso(run[0].timestamp), "system": line}, run[-1].id))
            run.clear()

    for msg in messages:
        if msg.system or msg.kind == "system":
            run.append(msg)
            continue
        flush()
        out.append((_entry(msg), msg.id))
    flush()
    return out


def _cursor(cursor: str | None) -> int | None:
    if not cursor:
        return None
    if not cursor.isdigit():
        raise misuse("cursor is not one talk_read returned. Pass nextCursor as given, or leave it out for the "
                     "newest messages.", status=ToolStatus.BAD_CURSOR)
    return int(cursor)


def _within_budget(pairs: list[tuple[dict[str, Any], int]]) -> list[tuple[dict[str, Any], int]]:
    """The first entries whose text fits MAX_CHARS (at least one): long pastes page instead of flooding."""
    total = 0
    out: list[tuple[dict[str, Any], int]] = []
    for entry, oldest in pairs:
        total += len(entry.get("text") or entry.get("system") or "")
        if out and total > MAX_CHARS:
            break
        out.append((entry, oldest))
    return out


def read(ctx: ServerContext, *, token: str, limit: int, cursor: str | None, since: str | None) -> dict[str, Any]:
    """Newest first, at most `limit` entries (a folded system run counts as one), back to `since` when given."""
    talk = ctx.client().talk
    floor = int(bound(since, "since").timestamp()) if since else None
    before, collected, exhausted = _cursor(cursor), [], False
    for _ in range(MAX_PAGES):
        page, last = _nc(talk.chat_page, token, limit=PAGE, before=before)
        if floor is not None:
            kept = [m for m in page if m.timestamp >= floor]
            exhausted = len(kept) < len(page)
            page = kept
        collected.extend(page)
        exhausted = exhausted or last is None or not page
        before = last
        if exhausted or len(fold(collected)) > limit:
            break
    pairs = fold(collected)
    shown = _within_budget(pairs[:limit])
    more = len(pairs) > len(shown) or not exhausted
    out: dict[str, Any] = {"token": token, "messages": [entry for entry, _ in shown], "truncated": more}
    if more and shown:
        out["nextCursor"] = str(shown[-1][1])   # Talk's own cursor: "older than this message"
        out["hint"] = "Older messages: call talk_read again with cursor=nextCursor."
    if floor is not None:
        out["since"] = _iso(floor)
    if not shown:
        out["hint"] = ("No older messages." if cursor else "No messages"
                       + (" since then." if floor is not None else " in this conversation."))
    return out


def _mention(text: str, given: str, account: str) -> str:
    """`@given` in the text becomes Talk's `@"account"`; a name not written in the text is put in front."""
    tag = f'@"{account}"'
    pattern = re.compile(r'@"?' + re.escape(given) + r'"?(?![\w])', re.IGNORECASE)
    if pattern.search(text):
        return pattern.sub(lambda _: tag, text)
    return f"{tag} {text}"


def _people_in(ctx: ServerContext, token: str) -> list[Any]:
    """The accounts taking part in the room. A one-to-one room lists the other person only once they have
    joined or been written to (seen on Nextcloud 34 with Talk 22): its `name` is their account id."""
    talk = ctx.client().talk
    members = [p for p in _nc(talk.participants, token) if p.source == "users" and p.id]
    room = _nc(talk.room, token)
    if room.type == 1 and room.name and all(p.id != room.name for p in members):
        members.append(Participant(id=room.name, display_name=room.display_name, source="users"))
    return members


def _resolve_mentions(ctx: ServerContext, token: str, names: list[str]) -> dict[str, str]:
    """{given: account id}: each name among the room's participants first (in a one-to-one with one Élodie,
    "Élodie" is her), then among the account's contacts and directory (contacts_search's matching)."""
    if not names:
        return {}
    members = _people_in(ctx, token)
    out: dict[str, str] = {}
    rest: list[str] = []
    for given in names:
        key = given.strip()
        words = people.fold(key).split()
        exact = [p for p in members if p.id == key]
        found = exact or [p for p in members if all(w in people.fold(f"{p.display_name} {p.id}") for w in words)]
        if len(found) == 1:
            out[given] = found[0].id
        elif found:
            listed = "; ".join(f"{p.display_name} (accountId {p.id})" for p in found[:8])
            raise misuse(f"{given!r} matches several participants of this conversation: {listed}. Ask the user "
                         "which one and pass that accountId. Do not pick one yourself.",
                         status=ToolStatus.AMBIGUOUS_PERSON)
        else:
            rest.append(given)
    return {**out, **people.resolve_accounts(ctx, rest)}


def post(ctx: ServerContext, *, token: str, message: str, mentions: list[str] | None) -> dict[str, Any]:
    """Resolve the mentions to accounts (the room's participants first), then post; returns the message's id."""
    text = message.strip()
    if not text:
        raise misuse("message is empty. Give the text to post.", status=ToolStatus.EMPTY_MESSAGE)
    resolved = _resolve_mentions(ctx, token, [m for m in mentions or [] if m.strip()])
    for given, account in resolved.items():
        text = _mention(text, given.strip(), account)
    posted = _nc(ctx.client().talk.post_message, token, text)
    out: dict[str, Any] = {"token": token, "id": posted.id, "at": _iso(posted.timestamp), "text": render(posted)}
    if resolved:
        out["mentioned"] = sorted(set(resolved.values()))
    return out


def _participant_match(ctx: ServerContext, token: str, words: list[str]) -> bool:
    try:
        members = ctx.client().talk.participants(token)
    except NextcloudError:
        return False
    return any(all(w in people.fold(f"{p.display_name} {p.id}") for w in words) for p in members)


def rooms(ctx: ServerContext, *, query: str | None, limit: int) -> dict[str, Any]:
    """Conversations, most recently active first; `query` matches the name or a participant (folded)."""
    found = sorted(_nc(ctx.client().talk.rooms), key=lambda r: -r.last_activity)
    words = people.fold(query or "").split()
    warnings: list[str] = []
    if words:
        by_name = [r for r in found if all(w in people.fold(f"{r.display_name} {r.name}") for w in words)]
        others = [r for r in found if r not in by_name and r.kind not in ("one_to_one", "note_to_self",
                                                                           "changelog")]
        if len(others) > MAX_ROOMS_PROBED:
            warnings.append(f"Participants were checked in the {MAX_ROOMS_PROBED} most recent conversations "
                            "only; an older one with this person may be missing.")
        by_member = [r for r in others[:MAX_ROOMS_PROBED] if _participant_match(ctx, r.token, words)]
        found = [r for r in found if r in by_name or r in by_member]
    shown = [{"token": r.token, "name": r.display_name, "kind": r.kind, "unread": r.unread,
              "lastActivity": _iso(r.last_activity)} for r in found[:limit]]
    out: dict[str, Any] = {"rooms": shown, "truncated": len(found) > limit, "warnings": warnings}
    if not found:
        out["hint"] = ("No conversation matches. meet_create_room starts one." if words
                       else "This account is in no conversation yet. meet_create_room starts one.")
    return out


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add talk_rooms, talk_read and talk_post to `server`."""

    @server.tool(annotations=READ)
    def talk_rooms(
        query: Annotated[str | None, Field(description="Name or participant", max_length=200)] = None,
        limit: Annotated[int, Field(description="Max 100", ge=1, le=100)] = 20,
    ) -> Annotated[CallToolResult, RoomsOut]:
        """Find Talk conversations by name or participant."""
        return envelope(rooms(ctx, query=query, limit=limit))

    @server.tool(annotations=READ)
    def talk_read(
        token: Token,
        limit: Annotated[int, Field(description="Max 200", ge=1, le=200)] = 30,
        since: Annotated[str | None, Field(description="Only after, e.g. 2026-12-01", max_length=80)] = None,
        cursor: Annotated[str | None, Field(description="From nextCursor", max_length=40)] = None,
    ) -> Annotated[CallToolResult, MessagesOut]:
        """A conversation's messages, newest first."""
        return envelope(read(ctx, token=token, limit=limit, cursor=cursor, since=since))

    @server.tool(annotations=POST)
    def talk_post(
        token: Token,
        message: Annotated[str, Field(description="Text (Markdown)", min_length=1, max_length=32_000)],
        mentions: Annotated[list[str] | None, Field(description="People to @mention", max_length=20)] = None,
    ) -> Annotated[CallToolResult, PostedOut]:
        """Post a message in a conversation."""
        return envelope(post(ctx, token=token, message=message, mentions=mentions))
