"""The tool commands' registration: whoami and the files / deck / calendar / ... groups, one command per tool.

Apart from cli/tool_commands.py (what each command is), so the modules that run a command (tool_run, tool_exec,
batch) import the commands' shapes without importing their own registrar: no import circle.
"""
from __future__ import annotations

import argparse
from typing import Any

from mcp_nextcloud.cli import batch, tool_run, toolspec
from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.parser import TOOL_WORDS, RawDescriptionFormatter, Subcommands
from mcp_nextcloud.cli.tool_commands import (DEFAULT_TIMEOUT_S, GROUP_HELP, RESERVED, ToolCommand, _quote,
                                             add_tool_argument, all_commands, is_write, needs_confirm)


def register(subparsers: Subcommands) -> None:
    """Add whoami and the files / deck / mail groups, one sub-command per MCP tool."""
    tools = toolspec.load()
    commands = all_commands(tools)
    groups: dict[str, Any] = {}
    for cmd in commands:
        spec = tools[cmd.tool]
        if cmd.group and cmd.group not in groups:
            summary = GROUP_HELP.get(cmd.group, f"the MCP {cmd.group} tools")
            g = subparsers.add_parser(cmd.group, help=summary, description=summary,
                                      epilog="Example: mcp-nextcloud " + " ".join(
                                          _quote(a) for a in next(c for c in commands
                                                                  if c.group == cmd.group).example))
            groups[cmd.group] = g.add_commands(dest=f"{cmd.group}_command", metavar="ACTION")
            g.set_defaults(func=g.help_command())
            g.tool_words = True   # its actions' summaries are the tools' descriptions
        where = groups[cmd.group] if cmd.group else subparsers
        summary = spec["description"].rstrip(".")
        rules = "".join(f"Rule: {c}\n" for c in cmd.constraints)
        p = where.add_parser(cmd.name, help=summary[:1].lower() + summary[1:], description=spec["description"],
                             epilog=rules + "Example: mcp-nextcloud " + " ".join(_quote(a) for a in cmd.example),
                             formatter_class=RawDescriptionFormatter)
        p.tool_words = True   # its description is the tool's
        _declare(p, cmd, spec)
        # A read may be asked again when the index service ended during it (service/client.py).
        p.set_defaults(func=tool_run.runner(cmd), repeatable=not is_write(spec))
    batch.register(groups["deck"])


def _tools_words(action: argparse.Action) -> None:
    setattr(action, TOOL_WORDS, True)   # its help is the tool's description: shown in the person's voice


def _declare(p: argparse.ArgumentParser, cmd: ToolCommand, spec: dict[str, Any]) -> None:
    props: dict[str, Any] = spec["input"].get("properties", {})
    assert not set(props) & set(RESERVED), f"{cmd.tool} has an argument named like a CLI option"
    required = set(spec["input"].get("required", [])) - {prop for prop, _ in cmd.defaults}
    for prop in cmd.positional:
        _tools_words(add_tool_argument(p, prop, props[prop], positional=True, required=prop in required))
    for prop, schema in props.items():
        if prop in cmd.positional or (cmd.records and prop == "cursor"):
            continue
        _tools_words(add_tool_argument(p, prop, schema, positional=False, required=prop in required))
    if cmd.records and "cursor" in props:
        p.add_argument("--cursor", metavar="TOKEN", default=None,
                       help="page.next_cursor of the previous page (opaque; bound to this query and account)")
    if cmd.records:
        fields = ", ".join(spec["records"][cmd.records])
        p.add_argument("--fields", metavar="A,B", default=None,
                       help=f"only these record fields ({fields}); {', '.join(cmd.ids)} always kept")
    if is_write(spec):
        p.add_argument("--dry-run", action="store_true",
                       help="validate and resolve everything, show the first write it would make; write nothing")
        if needs_confirm(spec):
            p.add_argument("--confirm", action="store_true",
                           help="required to run it: the MCP approval policy asks a person for this tool")
    p.add_argument("--input-file", metavar="PATH", default=None,
                   help="JSON object of the tool's arguments (schema: mcp-nextcloud manifest); options override it")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="SECONDS",
                   help=f"deadline for the whole command, retries included (default {DEFAULT_TIMEOUT_S:g})")
    if spec["server"] == "main":
        add_index(p)
    add_json(p, "the output format only")


