"""The calendar tools as the model sees them; the work is in cal_read, cal_write and cal_ics.

Every event carries `uid` and `calendar`, the handles update and delete
take. Times: a date is all day; a date-time without Z, an offset or a zone name is in the account's zone
(the answer says which).
"""
from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.tools.calendar import read as cal_read
from mcp_nextcloud.server.tools.calendar import write as cal_write
from mcp_nextcloud.server.tools.people.pim_out import DeletedOut, EventOut, EventsOut

# openWorldHint is left out where it would say false (see server/tools/files/tools.py).
READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)

Uid = Annotated[str, Field(description="From calendar_list_events", min_length=1, max_length=500)]
CalendarId = Annotated[str | None, Field(description="Calendar id", max_length=200)]
Title = Annotated[str, Field(description="Title", min_length=1, max_length=500)]
When = Annotated[str, Field(description="2026-12-24, or 2026-12-10T14:00 (account's zone) or with Z, offset or "
                                        "zone name: 2026-12-10T14:00 Europe/Paris", max_length=80)]
EndWhen = Annotated[str | None, Field(description="Default +1h; all day: last day", max_length=80)]
Location = Annotated[str | None, Field(description="Place or URL", max_length=1000)]
Description = Annotated[str | None, Field(description="Notes", max_length=20_000)]
Repeat = Annotated[str | None, Field(description="RRULE, e.g. FREQ=WEEKLY", max_length=300)]
Attendees = Annotated[list[str] | None, Field(description="E-mails: contacts_search or typed", max_length=100)]
TypedByUser = Annotated[list[str] | None, Field(description="Ones the user typed", max_length=100)]
RecurrenceId = Annotated[str | None, Field(description="Just this occurrence", max_length=80)]


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add calendar_list_events, calendar_create_event, calendar_update_event, calendar_delete_event."""

    @server.tool(annotations=READ)
    def calendar_list_events(
        start: When,
        end: Annotated[str | None, Field(description="Default start+7d", max_length=80)] = None,
        calendar: CalendarId = None,
        includeAppCalendars: Annotated[bool, Field(description="Add Deck boards")] = False,
        limit: Annotated[int, Field(description="Max 200", ge=1, le=200)] = 50,
    ) -> Annotated[CallToolResult, EventsOut]:
        """Events in a window, repeats expanded; times in UTC."""
        return cal_read.list_events(ctx, start=start, end=end, calendar=calendar, include_app=includeAppCalendars,
                                    limit=limit)

    @server.tool(annotations=WRITE)
    def calendar_create_event(
        title: Title,
        start: When,
        end: EndWhen = None,
        calendar: CalendarId = None,
        location: Location = None,
        description: Description = None,
        repeat: Repeat = None,
        attendees: Attendees = None,
        typedByUser: TypedByUser = None,
    ) -> Annotated[CallToolResult, EventOut]:
        """Create an event; attendees get invitations."""
        return envelope(cal_write.create(ctx, title=title, start=start, end=end, calendar=calendar,
                                         location=location, description=description, repeat=repeat,
                                         attendees=attendees, typed=typedByUser))

    @server.tool(annotations=WRITE)
    def calendar_update_event(
        uid: Uid,
        calendar: CalendarId = None,
        title: Annotated[str | None, Field(description="Title", max_length=500)] = None,
        start: Annotated[str | None, Field(description="Keeps duration", max_length=80)] = None,
        end: Annotated[str | None, Field(description="All day: last day", max_length=80)] = None,
        location: Location = None,
        description: Description = None,
        repeat: Annotated[str | None, Field(description="RRULE; empty removes", max_length=300)] = None,
        attendees: Annotated[list[str] | None, Field(description="All attendee e-mails", max_length=100)] = None,
        typedByUser: TypedByUser = None,
        recurrenceId: RecurrenceId = None,
    ) -> Annotated[CallToolResult, EventOut]:
        """Change only the given fields (a series: all)."""
        return cal_write.update(ctx, uid=uid, calendar=calendar, title=title, start=start, end=end,
                                location=location, description=description, repeat=repeat,
                                attendees=attendees, typed=typedByUser, recurrence_id=recurrenceId)

    @server.tool(annotations=DELETE)
    def calendar_delete_event(uid: Uid, calendar: CalendarId = None,
                              recurrenceId: RecurrenceId = None) -> Annotated[CallToolResult, DeletedOut]:
        """Delete an event or whole series; cancels invitations."""
        return cal_write.delete(ctx, uid=uid, calendar=calendar, recurrence_id=recurrenceId)
