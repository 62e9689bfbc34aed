"""`mcp-nextcloud` command line: one entry point, one module per command group.

Each command module exposes `register(subparsers)` which adds its sub-commands
(each with an `Example:` epilog) and sets `func` (taking the parsed args,
returning an exit code). Root help is an index of the commands. Results go to
stdout (compact JSON with --json); diagnostics go to stderr; no secret is ever
printed.

Each command module keeps its top cheap (argparse, json, stdlib): heavy imports
(mcp, apsw, the reader, icalendar via nextcloud.caldav) go inside the function
that runs the command, so `mcp-nextcloud --help` and every other command stay
fast (tests/server/test_cli_startup.py checks this).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from server.cli import index, inspect, jobs, login, serve

# Command modules, in the order root help lists them.
COMMAND_MODULES = [
    inspect,   # inspect FILE: what the reader makes of a local file
    index,     # index add/watch/status/sync, grep
    jobs,      # jobs status/wait/cancel/resume/list
    login,     # login URL
    serve,     # serve, report, demo
]

ROOT_EPILOG = """\
Start with: mcp-nextcloud demo   (no account needed: an emulated Nextcloud, and what an agent sees)
Then:       mcp-nextcloud login URL; mcp-nextcloud index sync; mcp-nextcloud serve
Run 'mcp-nextcloud COMMAND --help' for a command's options and an example."""


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that remembers its sub-commands and their summaries.

    argparse keeps them only in private attributes; recording them as they are
    added (through the public `add_subparsers().add_parser`) lets the root help
    and `iter_commands` walk the tree without touching those.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands: list[tuple[str, str, CommandParser]] = []

    def add_subparsers(self, **kwargs: Any) -> Any:
        # Nested parsers are CommandParsers too (argparse's parser_class defaults to type(self)).
        return _Recorder(super().add_subparsers(**kwargs), self.commands)


class _Recorder:
    """What `add_subparsers` returns: argparse's action, with `add_parser` recording each command."""

    def __init__(self, action: Any, commands: list[tuple[str, str, CommandParser]]) -> None:
        self._action = action
        self._commands = commands

    def add_parser(self, name: str, **options: Any) -> CommandParser:
        child = self._action.add_parser(name, **options)
        self._commands.append((name, options.get("help") or "", child))
        return child

    def __getattr__(self, name: str) -> Any:
        return getattr(self._action, name)


class RootParser(CommandParser):
    """Root help as an index: one line per command; a group names its actions on its line."""

    def format_help(self) -> str:
        rows = []
        for name, summary, child in self.commands:
            actions = ", ".join(sub for sub, _, _ in child.commands)
            rows.append((name, f"{summary} ({actions})" if actions else summary))
        width = max(len(name) for name, _ in rows) + 3
        listing = "\n".join(f"    {name.ljust(width)}{summary}" for name, summary in rows)
        return (f"{self.format_usage()}\n{self.description}\n\n"
                "options:\n  -h, --help  show this help message and exit\n\n"
                f"commands:\n  COMMAND\n{listing}\n\n{self.epilog}\n")


def iter_commands(parser: CommandParser, prefix: str = "") -> list[tuple[str, CommandParser]]:
    """Every command and sub-command as ("index sync", its parser), depth first, in help order."""
    out: list[tuple[str, CommandParser]] = []
    for name, _, child in parser.commands:
        out.append((f"{prefix}{name}", child))
        out.extend(iter_commands(child, f"{prefix}{name} "))
    return out


def build_parser() -> RootParser:
    """The root parser with every command registered; cheap (no heavy imports)."""
    parser = RootParser(
        prog="mcp-nextcloud",
        description="Search, read and act on your own Nextcloud from a terminal or an agent.",
        epilog=ROOT_EPILOG,
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands",
                                parser_class=CommandParser)
    for module in COMMAND_MODULES:
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
