"""meet_create_room and meet_schedule: Talk rooms, and meetings whose calendar event points at the room.

Both refuse without NEXTCLOUD_PUBLIC_URL: a room link with an internal
hostname reaches nobody. Participants are account ids (names are resolved
through contacts_search's matching; several matches are refused with the
candidates). Attendees are e-mail addresses the calendar invites; inviting
them opens the room to guests with the link, and the answer says so.
"""
from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from nextcloud.errors import NextcloudError
from server.context import ServerContext
from server.envelope import envelope
from server.errors import ToolFailure, from_nextcloud, refused
from server.tools import cal_write, people
from server.tools.calendar import Description, EndWhen, Title, When
from server.tools.pim_out import MeetingOut, RoomOut

# openWorldHint is left out where it would say false (see server/tools/files.py).
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
GUESTS_WARNING = ("The room is open to guests: anyone with its link can join without an account. "
                  "Tell the user this.")

Participants = Annotated[list[str] | None, Field(description="Account ids", max_length=50)]


def require_public_url(ctx: ServerContext) -> str:
    """The address people open in a browser; refused when unset (an internal hostname reaches nobody)."""
    url = getattr(ctx.account, "public_url", None)
    if not url:
        raise refused("NEXTCLOUD_PUBLIC_URL is not set, so a room link would carry this server's internal "
                      "address, which reaches nobody. Tell the user to set NEXTCLOUD_PUBLIC_URL (the address "
                      "people open in a browser) and restart the server. Do not retry.", status="no_public_url")
    return str(url)


def _nc(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


def open_room(ctx: ServerContext, name: str, participants: list[str] | None) -> dict[str, Any]:
    """Resolve the participants, then create the group room and add them; returns the room's handles."""
    resolved = people.resolve_accounts(ctx, participants or [])
    client = ctx.client()
    talk = client.talk
    room = _nc(talk.create_room, name)
    added: list[str] = []
    for account in dict.fromkeys(resolved.values()):
        if account == client.user_id:
            continue   # the creator is in the room already (as its owner)
        _nc(talk.add_participant, room.token, account)
        added.append(account)
    out: dict[str, Any] = {"token": room.token, "url": room.url, "name": room.display_name or name,
                           "participants": added}
    renamed = {given: acc for given, acc in resolved.items() if given != acc}
    if renamed:
        out["resolved"] = renamed
    return out


def schedule(ctx: ServerContext, *, title: str, start: str, end: str | None, participants: list[str] | None,
             attendees: list[str] | None, description: str | None, calendar: str | None = None) -> dict[str, Any]:
    """Room first, then the event with the room URL as location; everything checkable is checked before."""
    require_public_url(ctx)
    cal_write.times(start, end)
    mails = cal_write.check_emails(attendees)
    if mails:
        cal_write.organizer(ctx)
    room = open_room(ctx, title, participants)
    talk = ctx.client().talk
    warnings: list[str] = []
    try:
        if mails:
            _nc(talk.allow_guests, room["token"])
            warnings.append(GUESTS_WARNING)
        event = cal_write.create(ctx, title=title, start=start, end=end, calendar=calendar,
                                 location=room["url"], description=description, repeat=None, attendees=mails)
    except ToolFailure as failure:
        try:
            talk.delete_room(room["token"])
            undo = "The Talk room made for it was deleted again."
        except Exception:  # best effort: say the room is still there rather than hide it
            undo = f"The Talk room made for it is still there (token {room['token']})."
        raise ToolFailure(f"{failure} {undo}", kind=failure.kind, status=failure.status) from None
    hint = event.pop("hint", None)
    return {"room": room, "event": event, "warnings": warnings, "hint": hint}


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add meet_create_room and meet_schedule to `server`."""

    @server.tool(annotations=CREATE)
    def meet_create_room(
        name: Annotated[str, Field(description="Room name", min_length=1, max_length=200)],
        participants: Participants = None,
    ) -> Annotated[CallToolResult, RoomOut]:
        """Create a Talk group room; returns its link."""
        require_public_url(ctx)
        return envelope(open_room(ctx, name, participants))

    @server.tool(annotations=CREATE)
    def meet_schedule(
        title: Title,
        start: When,
        end: EndWhen = None,
        participants: Participants = None,
        attendees: Annotated[list[str] | None,
                             Field(description="E-mails; opens room to guests", max_length=100)] = None,
        description: Description = None,
    ) -> Annotated[CallToolResult, MeetingOut]:
        """Talk room plus a calendar event linking it."""
        return envelope(schedule(ctx, title=title, start=start, end=end, participants=participants,
                                 attendees=attendees, description=description))
