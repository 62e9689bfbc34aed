"""meet_create_room and meet_schedule: Talk rooms, and meetings whose calendar event points at the room.

Both refuse without NEXTCLOUD_PUBLIC_URL: a room link with an internal
hostname reaches nobody. Participants are account ids (names are resolved
through contacts_search's matching; several matches are refused with the
candidates). Participants also get the event in their calendar: they are
invited by their account's e-mail (the answer names those without one).
Attendees are e-mail addresses (the same rule as mail_compose: known, or
typed by the user); one with an account here joins the room as a member,
and only one without an account opens the room to guests (the answer says
so). Once the room exists, any failure deletes it again and says so.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Annotated, Any, Iterator

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.nextcloud.errors import Category, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud, refused
from mcp_nextcloud.server.tools.calendar import write as cal_write
from mcp_nextcloud.server.tools.calendar.zones import local_times
from mcp_nextcloud.server.tools.people import lookup as people
from mcp_nextcloud.server.tools.calendar.tools import Description, EndWhen, Title, TypedByUser, When
from mcp_nextcloud.server.tools.people.pim_out import MeetingOut, RoomOut

# openWorldHint is left out where it would say false (see server/tools/files/tools.py).
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
                      "people open in a browser) and restart the server.", status=ToolStatus.NO_PUBLIC_URL)
    return str(url)


def _nc(call: Any, *args: Any) -> Any:
    try:
        return call(*args)
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


def _add_members(ctx: ServerContext, token: str, accounts: list[str]) -> list[str]:
    """Add each account (the creator aside: the room's owner is in it already); returns those added."""
    client = ctx.client()
    added: list[str] = []
    for account in dict.fromkeys(accounts):
        if account != client.user_id:
            _nc(client.talk.add_participant, token, account)
            added.append(account)
    return added


def _undo_room(ctx: ServerContext, token: str) -> str:
    """Delete the room made for a call that failed; the sentence the failure carries about it."""
    try:
        ctx.client().talk.delete_room(token)
        return "The Talk room made for it was deleted again."
    except Exception:  # best effort: say the room is still there rather than hide it
        return f"The Talk room made for it is still there (token {token}); delete it in Talk."


@contextlib.contextmanager
def _room_undone_on_failure(ctx: ServerContext, token: str) -> Iterator[None]:
    """Any failure once the room exists deletes it and says so, the expected ones and the unexpected."""
    try:
        yield
    except ToolFailure as failure:
        raise failure.reworded(f"{failure.action} {_undo_room(ctx, token)}".strip()) from None
    except Exception as exc:
        raise ToolFailure("meet_schedule failed on our side (an internal error, logged on the server)",
                          _undo_room(ctx, token), category=Category.FAULT, status=ToolStatus.INTERNAL,
                          retry=True) from exc


def open_room(ctx: ServerContext, name: str, participants: list[str] | None,
              extra: list[str] | None = None) -> dict[str, Any]:
    """Resolve the participants, then create the group room and add them (and `extra` accounts)."""
    resolved = people.resolve_accounts(ctx, participants or [])
    room = _nc(ctx.client().talk.create_room, name)
    with _room_undone_on_failure(ctx, room.token):
        added = _add_members(ctx, room.token, [*resolved.values(), *(extra or [])])
    out: dict[str, Any] = {"token": room.token, "url": room.url, "name": room.display_name or name,
                           "participants": added}
    renamed = {given: acc for given, acc in resolved.items() if given != acc}
    if renamed:
        out["resolved"] = renamed
    return out


@dataclass
class Invitations:
    """Who a meeting invites: e-mails for the event, accounts for the room, and what the answer must say."""

    mails: list[str]                  # the event's attendees: the given e-mails and the participants' own
    members: list[str]                # accounts added to the room (attendees who have one included)
    guests: list[str]                 # attendees without an account: the room opens to guests for them
    warnings: list[str]


def invitations(ctx: ServerContext, participants: list[str] | None, attendees: list[str] | None,
                typed: list[str] | None) -> Invitations:
    """Participants get the event in their calendar (by their account's e-mail); an attendee with an account
    joins the room as a member; only attendees without one open the room to guests."""
    given = cal_write.check_emails(attendees) or []
    unverified = cal_write.check_known(ctx, given, typed)
    resolved = people.resolve_accounts(ctx, participants or [])
    book = people.directory_emails(ctx) if (given or resolved) else {}
    mail_of: dict[str, str] = {}
    for mail, account in book.items():
        if account and account not in mail_of:
            mail_of[account] = mail
    me = ctx.client().user_id
    mails, warnings = list(given), cal_write.unverified_warning(unverified)
    no_mail = []
    for account in dict.fromkeys(resolved.values()):
        if account == me:
            continue
        address = mail_of.get(account)
        if address and address not in {m.casefold() for m in mails}:
            mails.append(address)
        elif not address:
            no_mail.append(account)
    if no_mail:
        warnings.append(f"No e-mail is known for {', '.join(no_mail)}: they are in the room but get no "
                        "calendar invitation.")
    members = [book[m.casefold()] or "" for m in given if book.get(m.casefold())]
    guests = [m for m in given if not book.get(m.casefold())]
    return Invitations(mails=mails, members=[a for a in members if a], guests=guests, warnings=warnings)


def schedule(ctx: ServerContext, *, title: str, start: str, end: str | None, participants: list[str] | None,
             attendees: list[str] | None, description: str | None, typed: list[str] | None = None,
             calendar: str | None = None) -> dict[str, Any]:
    """Room first, then the event with the room URL as location; everything checkable is checked before."""
    require_public_url(ctx)
    cal_write.times(start, end, local=local_times(ctx))
    plan = invitations(ctx, participants, attendees, typed)
    if plan.mails:
        cal_write.organizer(ctx)
    made = cal_write.target_calendar(ctx, calendar)[1]   # an account without one gets its calendar before a room
    room = open_room(ctx, title, participants, extra=plan.members)
    warnings = list(plan.warnings)
    with _room_undone_on_failure(ctx, room["token"]):
        if plan.guests:
            _nc(ctx.client().talk.allow_guests, room["token"])
            warnings.append(GUESTS_WARNING + f" (for {', '.join(plan.guests)}, who have no account here)")
        event = cal_write.create(ctx, title=title, start=start, end=end, calendar=calendar,
                                 location=room["url"], description=description, repeat=None,
                                 attendees=plan.mails or None, checked=True)
    hint = " ".join(filter(None, [made, event.pop("hint", None)])) or None
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
                             Field(description="E-mails; no account: guest", max_length=100)] = None,
        typedByUser: TypedByUser = None,
        description: Description = None,
    ) -> Annotated[CallToolResult, MeetingOut]:
        """Talk room plus a calendar event linking it."""
        return envelope(schedule(ctx, title=title, start=start, end=end, participants=participants,
                                 attendees=attendees, description=description, typed=typedByUser))
