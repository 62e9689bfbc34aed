"""tasks_list, tasks_create, tasks_update: CalDAV VTODOs across the account's task lists.

A task list is a calendar whose supported-calendar-component-set holds
VTODO (Deck's per-board calendars are left out: they are cards). Every task
carries `uid` and `list`, the handles tasks_update takes. Updates patch the
stored object with If-Match (a stale etag re-reads once), never rebuild it.
Due times are read by the calendar's parser (cal_common.parse_when).
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import _Out, envelope
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud, misuse, refused
from mcp_nextcloud.server.errors import nextcloud_call as _nc
from mcp_nextcloud.server.tools.account import first_login
from mcp_nextcloud.server.tools.calendar.zones import LocalTimes, local_times
from mcp_nextcloud.server.tools.calendar.common import (CalendarRef, as_utc, bound, calendars, make_starter, parse_when,
                                                   pick_calendar)
from mcp_nextcloud.server.tools.tasks.ics import TaskFields, new_task, patch_task, summaries

READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)
CREATE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False)
# An update can replace a description or a due date: destructive, so the policy asks (as for deck_update_card).
UPDATE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False)
NO_LIST = first_login.TASKS.missing("tasks_create")
Priority = Literal["high", "medium", "low"]

ListId = Annotated[str | None, Field(description="Task list id or name", max_length=200)]
Uid = Annotated[str, Field(description="From tasks_list", min_length=1, max_length=500)]


class TasksOut(_Out):
    tasks: list[dict[str, Any]]
    truncated: bool


class TaskOut(_Out):
    uid: str
    list: str


def task_lists(ctx: ServerContext, wanted: str | None = None) -> list[CalendarRef]:
    """The account's task lists (or the one named); none at all is refused, saying tasks_create makes one."""
    all_cals = calendars(ctx)
    lists = [c for c in all_cals if "VTODO" in c.components and not c.app]
    if wanted:
        cal = pick_calendar(all_cals, wanted, "list")
        if cal not in lists:
            raise misuse(f"{cal.id} ({cal.name}) is not a task list: it accepts no tasks. Task lists: "
                         f"{', '.join(c.id for c in lists) or 'none'}.", status=ToolStatus.NOT_TASK_LIST)
        return [cal]
    if not lists:
        raise refused(NO_LIST, status=ToolStatus.NO_TASK_LIST)
    return lists


def _due_key(task: dict[str, Any]) -> tuple[bool, str, int]:
    order = {"high": 0, "medium": 1, "low": 2}
    return ("due" not in task, task.get("due", ""), order.get(task.get("priority", ""), 3))


def list_tasks(ctx: ServerContext, *, task_list: str | None, due_before: str | None, priority: str | None,
               completed: bool, limit: int) -> dict[str, Any]:
    """Open tasks (completed too when asked) of every task list, soonest due first."""
    try:
        lists = task_lists(ctx, task_list)
    except ToolFailure as exc:
        if exc.status is not ToolStatus.NO_TASK_LIST:
            raise
        return {"tasks": [], "truncated": False, "lists": {}, "hint": NO_LIST}
    local = local_times(ctx)
    limit_at = as_utc(bound(due_before, "dueBefore", local)) if due_before else None
    caldav = ctx.client().caldav
    found: list[dict[str, Any]] = []
    for cal in lists:
        for obj in _nc(caldav.todos, cal.id, open_only=not completed):
            for task in summaries(obj.ics):
                task["list"] = cal.id
                found.append(task)
    if not completed:
        found = [t for t in found if not t["done"]]
    if priority:
        found = [t for t in found if t.get("priority") == priority]
    if limit_at is not None:
        # A due date alone is its midnight UTC; the bound is exclusive.
        found = [t for t in found if "due" in t and as_utc(parse_when(t["due"], "due")) < limit_at]
    found.sort(key=_due_key)
    out: dict[str, Any] = {"tasks": found[:limit], "truncated": len(found) > limit,
                           "lists": {c.id: c.name for c in lists}}
    if len(found) > limit:
        out["hint"] = f"{len(found)} tasks match; narrow with list, dueBefore or priority, or raise limit."
    return _said(out, local)


def _due(value: str | None, local: LocalTimes) -> Any:
    if value is None or value.strip() == "":
        return value   # None: unchanged; "": remove the due date
    return parse_when(value, "due", local=local)


def _said(out: dict[str, Any], local: LocalTimes) -> dict[str, Any]:
    """The answer, saying in which zone a due time written without one was read."""
    if local.read:
        out["warnings"] = local.notes() + list(out.get("warnings") or [])
    return out


def create(ctx: ServerContext, *, title: str, due: str | None, priority: str | None, description: str | None,
           task_list: str | None) -> dict[str, Any]:
    """PUT a new VTODO (If-None-Match) in the named list, else the first writable one."""
    local = local_times(ctx)
    fields = TaskFields(title=title, due=_due(due, local) or None, priority=priority, description=description)
    cal, made = _list_for_new_task(ctx, task_list)
    uid, ics = new_task(fields)
    _nc(ctx.client().caldav.put_todo, cal.id, uid, ics)
    out = {**summaries(ics)[0], "list": cal.id}
    if made:
        out["hint"] = made
    return _said(out, local)


def _list_for_new_task(ctx: ServerContext, task_list: str | None) -> tuple[CalendarRef, str | None]:
    """The named list, else the first writable one; with none at all, "Tasks" made as the Tasks app makes it
    on first use (the second item says so)."""
    try:
        lists = task_lists(ctx, task_list)
    except ToolFailure as exc:
        if exc.status is not ToolStatus.NO_TASK_LIST:
            raise
        made = make_starter(ctx, first_login.TASKS, calendars(ctx))
        return made, first_login.TASKS.made(made.id)
    cal = next((c for c in lists if c.writable), lists[0])
    if not cal.writable:
        raise misuse(f"Task list {cal.id} is read-only. Name another with list.", status=ToolStatus.READ_ONLY)
    return cal, None


def _locate(ctx: ServerContext, uid: str, task_list: str | None) -> tuple[CalendarRef, Any]:
    caldav = ctx.client().caldav
    lists = task_lists(ctx, task_list)
    for cal in lists:
        obj = _nc(caldav.todo_by_uid, cal.id, uid)
        if obj is not None:
            return cal, obj
    raise misuse(f"No task with uid {uid!r} in {'list ' + lists[0].id if task_list else 'any task list'}. "
                 "Call tasks_list (completed=true for done ones) and use the uid it returns. Do not guess.",
                 status=ToolStatus.UNKNOWN_TASK)


def update(ctx: ServerContext, *, uid: str, task_list: str | None, fields: TaskFields) -> dict[str, Any]:
    """Patch the task `uid` with If-Match; a stale etag (someone else wrote) re-reads and tries once more."""
    if all(v is None for v in (fields.title, fields.due, fields.priority, fields.description, fields.done)):
        raise misuse("Nothing to change: give done, title, due, priority or description.",
                     status=ToolStatus.NO_CHANGE)
    local = local_times(ctx)
    fields.due = _due(fields.due, local) if isinstance(fields.due, str) else fields.due
    caldav = ctx.client().caldav
    for attempt in (1, 2):
        cal, obj = _locate(ctx, uid, task_list)
        ics = patch_task(obj.ics, uid, fields)
        try:
            caldav.put_todo(cal.id, uid, ics, etag=obj.etag, object_name=obj.name)
        except NextcloudError as exc:
            if exc.code is not ErrorCode.PRECONDITION or attempt == 2:
                raise from_nextcloud(exc) from None
            continue
        task = next(t for t in summaries(ics) if t["uid"] == uid)
        return _said({**task, "list": cal.id}, local)
    raise AssertionError("unreachable")


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add tasks_list, tasks_create and tasks_update to `server`."""

    @server.tool(annotations=READ)
    def tasks_list(
        list: ListId = None,
        dueBefore: Annotated[str | None, Field(description="e.g. 2026-12-31", max_length=80)] = None,
        priority: Annotated[Priority | None, Field(description="Only this priority")] = None,
        completed: Annotated[bool, Field(description="Include done tasks")] = False,
        limit: Annotated[int, Field(description="Max 200", ge=1, le=200)] = 50,
    ) -> Annotated[CallToolResult, TasksOut]:
        """Open tasks of every task list, soonest due first."""
        return envelope(list_tasks(ctx, task_list=list, due_before=dueBefore, priority=priority,
                                   completed=completed, limit=limit))

    @server.tool(annotations=CREATE)
    def tasks_create(
        title: Annotated[str, Field(description="Title", min_length=1, max_length=500)],
        due: Annotated[str | None, Field(description="2026-12-24, or 2026-12-10T14:00 (account's zone unless Z, "
                                                     "offset or zone name)", max_length=80)] = None,
        priority: Annotated[Priority | None, Field(description="Priority")] = None,
        description: Annotated[str | None, Field(description="Notes", max_length=20_000)] = None,
        list: ListId = None,
    ) -> Annotated[CallToolResult, TaskOut]:
        """Add a task to a task list."""
        return envelope(create(ctx, title=title, due=due, priority=priority, description=description,
                               task_list=list))

    @server.tool(annotations=UPDATE)
    def tasks_update(
        uid: Uid,
        done: Annotated[bool | None, Field(description="true completes, false reopens")] = None,
        title: Annotated[str | None, Field(description="Title", max_length=500)] = None,
        due: Annotated[str | None, Field(description="Empty removes", max_length=80)] = None,
        priority: Annotated[Priority | None, Field(description="Priority")] = None,
        description: Annotated[str | None, Field(description="Notes; empty removes", max_length=20_000)] = None,
        list: ListId = None,
    ) -> Annotated[CallToolResult, TaskOut]:
        """Change only the given fields of a task."""
        return envelope(update(ctx, uid=uid, task_list=list,
                               fields=TaskFields(title=title, due=due, priority=priority, description=description,
                                                 done=done)))
