"""`mcp-nextcloud` command line: one entry point, one module per command group.

Each command module exposes `register(subparsers)` which adds its sub-commands
and sets `func` (taking the parsed args, returning an exit code). Root help is
an index of the commands. Results go to stdout (compact JSON with --json);
diagnostics go to stderr; no secret is ever printed.
"""
from __future__ import annotations

import argparse
import importlib
import sys

# Command modules, in the order root help lists them. A module that is not
# there yet (or fails to import) must not break the other commands. Each must
# keep its module top cheap (argparse, json, stdlib): heavy imports (mcp, apsw,
# the reader, icalendar via nextcloud.caldav) go inside the function that runs
# the command, so `mcp-nextcloud --help` and every other command stay fast
# (tests/server/test_cli_startup.py checks this).
COMMAND_MODULES = [
    "server.cli.inspect",   # inspect FILE: what the reader makes of a local file
    "server.cli.index",     # index add/watch/status/sync, grep
    "server.cli.jobs",      # jobs status/wait/cancel
    "server.cli.login",     # login URL
    "server.cli.serve",     # serve, report, demo
]

ROOT_EPILOG = """\
Start with: mcp-nextcloud demo   (no account needed: an emulated Nextcloud, and what an agent sees)
Then:       mcp-nextcloud login URL; mcp-nextcloud index sync; mcp-nextcloud serve
Run 'mcp-nextcloud COMMAND --help' for a command's options and an example."""

# Example lines for commands whose module does not set an epilog of its own yet
# (server/cli_index.py); a module's own epilog always wins.
FALLBACK_EXAMPLES = {
    "index": "Example: mcp-nextcloud index status",
    "index add": "Example: mcp-nextcloud index add ~/Nextcloud",
    "index watch": "Example: mcp-nextcloud index watch ~/Nextcloud",
    "index status": "Example: mcp-nextcloud index status --json",
    "grep": 'Example: mcp-nextcloud grep "quarterly budget" --path /Documents --limit 5',
}


class _IndexFormatter(argparse.RawDescriptionHelpFormatter):
    """Root help: wide enough that each command's summary stays on one line; the epilog as written."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30, width=120)


def _subcommands(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def iter_commands(parser: argparse.ArgumentParser, prefix: str = "") -> list[tuple[str, argparse.ArgumentParser]]:
    """Every command and sub-command as ("index sync", its parser), depth first, in help order."""
    out: list[tuple[str, argparse.ArgumentParser]] = []
    sub = _subcommands(parser)
    if sub is None:
        return out
    for action in sub._choices_actions:
        child = sub.choices[action.dest]
        name = f"{prefix}{action.dest}"
        out.append((name, child))
        out.extend(iter_commands(child, name + " "))
    return out


def _finish_help(parser: argparse.ArgumentParser) -> None:
    """Root help as an index: name a group's actions on its line; give every command an example."""
    sub = _subcommands(parser)
    if sub is not None:
        for action in sub._choices_actions:
            inner = _subcommands(sub.choices[action.dest])
            if inner is not None and action.help:
                action.help = f"{action.help} ({', '.join(a.dest for a in inner._choices_actions)})"
    for name, child in iter_commands(parser):
        if not child.epilog and name in FALLBACK_EXAMPLES:
            child.epilog = FALLBACK_EXAMPLES[name]


def build_parser() -> argparse.ArgumentParser:
    """The root parser with every available command registered; cheap (no heavy imports)."""
    parser = argparse.ArgumentParser(
        prog="mcp-nextcloud",
        description="Search, read and act on your own Nextcloud from a terminal or an agent.",
        epilog=ROOT_EPILOG,
        formatter_class=lambda prog: _IndexFormatter(prog),
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(sub)
    _finish_help(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from server.cli.logs import quiet_libraries

    quiet_libraries()
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
