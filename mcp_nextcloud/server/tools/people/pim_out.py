"""Output models of the calendar, contacts and Talk tools (validated; published as top-level field names)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from mcp_nextcloud.server.envelope import _Out


class Occurrence(BaseModel):
    """One occurrence calendar_list_events returns; uid + calendar are what update/delete accept."""

    model_config = ConfigDict(extra="allow")
    uid: str
    calendar: str
    title: str
    start: str | None = None
    end: str | None = None


class EventsOut(_Out):
    """Also from/to (the window covered), calendars ({id: name} read) and total."""

    events: list[Occurrence]
    truncated: bool


class EventOut(_Out):
    """An event created or updated: its handles and the times as stored."""

    uid: str
    calendar: str


class DeletedOut(_Out):
    """Also title, series (a whole series went) and cancelled (attendees told)."""

    uid: str
    deleted: bool


class Person(BaseModel):
    """One person: a contact card, an account, or both merged; accountId is what sharing and Talk accept."""

    model_config = ConfigDict(extra="allow")
    name: str
    accountId: str | None = None
    emails: list[str] | None = None


class PeopleOut(_Out):
    people: list[Person]
    truncated: bool


class RoomOut(_Out):
    """Also name and participants (account ids added)."""

    token: str
    url: str


class MeetingOut(_Out):
    room: dict[str, Any]
    event: dict[str, Any]
