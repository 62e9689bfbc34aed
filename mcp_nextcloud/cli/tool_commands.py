"""The CLI commands that mirror MCP tools: one declaration each, arguments derived from the tool's schema.

`files search`, `deck create-card`, `mail read`... run the very tool function
the MCP server runs (through the server's call path: same validation, same
answer), so a command can never say something the tool would not. What a
command adds is the CLI convention: collections page with --limit/--cursor/
--fields into {"items", "page"}; writes take --dry-run, --input-file and,
when the approval policy asks for a person, --confirm.

Cheap at import: the tools' schemas come from the snapshot in tools.json
(cli/toolspec.py); the work happens in cli/tool_run.py.
"""
from __future__ import annotations

import argparse
import re
from dataclasses import dataclass
from typing import Any

from mcp_nextcloud.cli import toolspec

# Collection conventions (one owner): --fields splits on this, cursors are opaque.
FIELDS_SEPARATOR = ","
# Options every tool command owns; no tool argument may take these names.
RESERVED = ("json", "fields", "index", "input_file", "dry_run", "confirm", "timeout")
DEFAULT_TIMEOUT_S = 60.0
# A text field larger than this goes to an artifact file instead of stdout.
ARTIFACT_BYTES = 16_000


@dataclass(frozen=True)
class ToolCommand:
    """One CLI command over one MCP tool. The summary and arguments come from the tool itself."""

    group: str                          # "files"; "" for a top-level command
    name: str                           # "search"
    tool: str                           # "files_search"
    example: tuple[str, ...]            # argv after mcp-nextcloud, runnable
    records: str | None = None          # the answer's list of records: a collection command
    ids: tuple[str, ...] = ()           # record fields --fields never removes (the handles)
    positional: tuple[str, ...] = ()    # tool arguments given without a flag
    artifact: tuple[str, ...] = ()      # text fields that go to an artifact file when large
    constraints: tuple[str, ...] = ()   # rules between arguments the schema cannot say (manifest, help)
    defaults: tuple[tuple[str, str], ...] = ()   # (argument, value) the CLI gives when absent (a person's default)

    @property
    def full_name(self) -> str:
        return f"{self.group} {self.name}".strip()


TOOL_COMMANDS: tuple[ToolCommand, ...] = (
    ToolCommand("", "whoami", "nextcloud_whoami", ("whoami", "--json")),
    ToolCommand("files", "search", "files_search", ("files", "search", "--name", "*.pdf", "--limit", "5"),
                records="files", ids=("path", "fileId")),
    ToolCommand("files", "grep", "files_grep", ("files", "grep", "install", "--fields", "passages"),
                records="hits", ids=("path", "fileId"), positional=("query",)),
    ToolCommand("files", "read", "files_read", ("files", "read", "/Documents/manual.pdf", "--find", "install"),
                artifact=("content",), positional=("path",),
                constraints=("one of PATH (or --path), --file-id",
                             "with --format outline, --find names the section to open (a title, else text in it)")),
    ToolCommand("files", "write", "files_write", ("files", "write", "/Notes/todo.md", "--content", "milk",
                                                   "--dry-run"), positional=("path",),
                constraints=("one of PATH (create or replace), --file-id (replace)",
                             "with --etag it replaces only that version; without, only a new file is written",
                             "text files only: binary formats are refused")),
    ToolCommand("files", "share", "files_share_internal", ("files", "share", "/Documents", "--share-with", "bob",
                                                            "--dry-run"), positional=("path",),
                constraints=("one of PATH (or --path), --file-id",)),
    ToolCommand("deck", "list", "deck_list_cards", ("deck", "list", "--board", "Roadmap", "--limit", "20"),
                records="cards", ids=("card", "board", "stack")),
    ToolCommand("deck", "create-board", "deck_create_board", ("deck", "create-board", "--title", "Trip",
                                                               "--stacks", "To do", "--dry-run")),
    ToolCommand("deck", "create-card", "deck_create_card", ("deck", "create-card", "--board", "Roadmap",
                                                             "--stack", "To do", "--title", "Call Bob",
                                                             "--dry-run")),
    ToolCommand("deck", "update-card", "deck_update_card", ("deck", "update-card", "--board", "Roadmap",
                                                             "--card", "12", "--done", "--dry-run"),
                constraints=("at least one of --title, --description, --due, --done, --labels, --assignees",
                             "--labels and --assignees replace the whole set")),
    ToolCommand("deck", "move-card", "deck_move_card", ("deck", "move-card", "--board", "Roadmap", "--card", "12",
                                                         "--stack", "Done", "--dry-run")),
    ToolCommand("mail", "contacts", "mail_contacts", ("mail", "contacts", "Bob"), records="people",
                ids=("email",), positional=("name",)),
    ToolCommand("mail", "search", "mail_search", ("mail", "search", "--unread", "--limit", "10"),
                records="messages", ids=("id",)),
    ToolCommand("mail", "read", "mail_read", ("mail", "read", "42"), positional=("id",), artifact=("body",)),
    ToolCommand("mail", "compose", "mail_compose", ("mail", "compose", "--to", "bob@example.com", "--subject",
                                                     "Hi", "--body", "See you")),
    ToolCommand("calendar", "list", "calendar_list_events", ("calendar", "list", "--start", "tomorrow"),
                records="events", ids=("uid", "calendar"), defaults=(("start", "today"),),
                constraints=("without --start: from today, 7 days",)),
    ToolCommand("calendar", "create", "calendar_create_event", ("calendar", "create", "--title", "Dentist",
                                                                "--start", "2026-12-10T09:00Z", "--dry-run")),
    ToolCommand("calendar", "update", "calendar_update_event", ("calendar", "update", "--uid", "UID", "--start",
                                                                "2026-12-10T10:00Z", "--dry-run")),
    ToolCommand("calendar", "delete", "calendar_delete_event", ("calendar", "delete", "--uid", "UID",
                                                                "--dry-run")),
    ToolCommand("contacts", "search", "contacts_search", ("contacts", "search", "Bob"), records="people",
                ids=("accountId",), positional=("query",)),
    ToolCommand("meet", "create-room", "meet_create_room", ("meet", "create-room", "--name", "Standup",
                                                            "--participants", "bob", "--dry-run")),
    ToolCommand("meet", "schedule", "meet_schedule", ("meet", "schedule", "--title", "Review", "--start",
                                                      "2026-12-10T14:00Z", "--participants", "bob", "--dry-run")),
)

GROUP_HELP = {
    "files": "your Nextcloud files",
    "deck": "Deck boards and cards",
    "mail": "your Nextcloud Mail, read and drafted here; you send what compose previews",
    "calendar": "calendar events",
    "contacts": "people in the address books and the account directory",
    "meet": "Talk rooms and scheduled meetings",
    "talk": "Talk conversations: find, read, post",
    "tasks": "tasks (CalDAV VTODO) in the task lists",
}


def derived(tool: str, spec: dict[str, Any]) -> ToolCommand:
    """A command for a tool nobody declared one for yet (calendar_list_events -> `calendar list-events`).

    Every model-visible tool gets a command: its arguments come from the schema as for the declared ones;
    a tool that pages (a cursor argument and one list of records) is a collection keyed by the first field.
    """
    group, _, rest = tool.partition("_")
    props = spec["input"].get("properties", {})
    example = [group, rest.replace("_", "-")]
    for prop in spec["input"].get("required", []):
        kind = props.get(prop, {}).get("type")
        example += [option(prop), "1" if kind in ("integer", "number") else "x"]
    records = spec.get("records") or {}
    key = next(iter(records)) if len(records) == 1 and "cursor" in props else None
    positional = tuple(p for p in POSITIONAL_FIRST if p in props and (group == "files" or p != "path"))[:1]
    return ToolCommand(group, rest.replace("_", "-"), tool, tuple(example), records=key,
                       ids=(records[key][0],) if key else (), positional=positional)


# The argument a derived command takes without a flag: a file command's path, a search's query, a Talk room's
# token (the flag stays an alias: `files delete /a.md` and `files delete --path /a.md` are one command).
POSITIONAL_FIRST = ("path", "query", "token")


def all_commands(tools: dict[str, dict[str, Any]] | None = None) -> list[ToolCommand]:
    """The declared commands, then one derived for every other tool the model sees (app-only tools excluded)."""
    tools = toolspec.load() if tools is None else tools
    declared = {c.tool for c in TOOL_COMMANDS}
    return [*TOOL_COMMANDS, *(derived(name, spec) for name, spec in tools.items()
                              if name not in declared and not spec.get("appOnly"))]


def by_tool() -> dict[str, ToolCommand]:
    return {c.tool: c for c in all_commands()}


def option(prop: str) -> str:
    """A tool argument's CLI flag: modifiedAfter -> --modified-after."""
    return "--" + re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", prop).lower()


def alias_dest(prop: str) -> str:
    """Where the flag of a positional argument (`--path` beside PATH) is parsed to."""
    return f"{prop}_flag"


def is_write(spec: dict[str, Any]) -> bool:
    return spec["annotations"].get("readOnlyHint") is not True


def needs_confirm(spec: dict[str, Any]) -> bool:
    """--confirm is required exactly where the MCP approval policy asks a person (server/policy.py)."""
    from mcp_nextcloud.server.policy import approval_for

    return is_write(spec) and approval_for(spec["annotations"]).needs_approval


def _type_of(schema: dict[str, Any]) -> Any:
    return {"integer": int, "number": float}.get(schema.get("type", "string"), str)


def _help(schema: dict[str, Any]) -> str:
    bits = []
    if "default" in schema:
        bits.append(f"default {schema['default']}")
    if "maximum" in schema and f"max {schema['maximum']}" not in schema.get("description", "").lower():
        bits.append(f"max {schema['maximum']}")
    if "maxItems" in schema:
        bits.append(f"at most {schema['maxItems']}")
    text = schema.get("description", "")
    return f"{text} ({', '.join(bits)})" if bits else text


def add_tool_argument(p: argparse.ArgumentParser, prop: str, schema: dict[str, Any], *, positional: bool,
                      required: bool) -> argparse.Action:
    """One tool argument as an option (or positional), typed from its JSON schema; absent means the tool's default.
    Returns the action whose help is the tool's description."""
    kind = schema.get("type")
    kw: dict[str, Any] = {"help": _help(schema) + (" (required)" if required else ""), "default": None, "dest": prop}
    if positional:
        del kw["dest"]
        said = p.add_argument(prop, nargs="?", metavar=prop.upper(), type=_type_of(schema), **kw)
        # the flag too, as an alias (its own dest: a positional absent would overwrite a shared one)
        kw.update(dest=alias_dest(prop), help=f"same as {prop.upper()}")
        if kind in ("integer", "number", "string", None):
            p.add_argument(option(prop), type=_type_of(schema), metavar=prop.upper(), **kw)
        return said
    if kind == "boolean":
        kw["action"] = argparse.BooleanOptionalAction
    elif kind == "array":
        kw.update(action="append", type=_type_of(schema.get("items", {})), metavar="VALUE")
        kw["help"] += " (repeat the option for each)"
    else:
        kw["type"] = _type_of(schema)
        if "enum" in schema:
            kw["choices"] = schema["enum"]
        else:
            kw["metavar"] = "N" if kind in ("integer", "number") else "TEXT"
    return p.add_argument(option(prop), **kw)


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
