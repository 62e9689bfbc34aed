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
# there yet (or fails to import) must not break the other commands.
COMMAND_MODULES = [
    "server.cli_inspect",   # inspect FILE: what the reader makes of a local file
    "server.cli_index",     # index add/watch/status/sync, grep
    "server.cli_jobs",      # jobs status/wait/cancel
    "server.cli_login",     # login URL
    "server.cli_serve",     # serve, report, demo
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-nextcloud",
        description="Search, read and act on your own Nextcloud from a terminal or an agent.",
        epilog="Run 'mcp-nextcloud COMMAND --help' for a command's options.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
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
