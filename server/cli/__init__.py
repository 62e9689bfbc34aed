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

import importlib
import os
import sys

from server.cli import warm
from server.cli.parser import CommandParser, RootParser, iter_commands

__all__ = ["CommandParser", "RootParser", "build_parser", "iter_commands", "main", "run_command"]

# Command modules (server.cli.NAME), in the order root help lists them. Imported when the parser is built:
# a call the warm process answers (server/cli/warm.py) loads none of them.
COMMAND_MODULES = [
    "inspect",         # inspect FILE: what the reader makes of a local file
    "index",           # index add/watch/status/sync, grep
    "jobs",            # jobs status/wait/cancel/resume/list
    "login",           # login URL
    "serve",           # serve, report, demo
    "tool_commands",   # whoami, files, deck, calendar, contacts, meet, mail: one command per MCP tool
    "manifest",        # manifest, help COMMAND
    "warm",            # warm: a ready process answering grep and inspect
]

# Commands whose call needs only their own module's parser (read paths an agent shells out to): the other
# modules register dozens of commands (one per MCP tool), ~10 ms a call would pay for nothing.
OWN_MODULE = {"grep": "index", "index": "index", "inspect": "inspect", "warm": "warm"}

ROOT_EPILOG = """\
Start with: mcp-nextcloud demo   (no account needed: an emulated Nextcloud, and what an agent sees)
Then:       mcp-nextcloud login URL; mcp-nextcloud index sync; mcp-nextcloud serve
Run 'mcp-nextcloud COMMAND --help' for a command's options and an example."""


def build_parser(command: str | None = None) -> RootParser:
    """The root parser with every command registered (or only `command`'s module, see OWN_MODULE)."""
    parser = RootParser(
        prog="mcp-nextcloud",
        description="Search, read and act on your own Nextcloud from a terminal or an agent.",
        epilog=ROOT_EPILOG,
    )
    sub = parser.add_commands(dest="command", metavar="COMMAND", title="commands")
    names = [OWN_MODULE[command]] if command in OWN_MODULE else COMMAND_MODULES
    for name in names:
        importlib.import_module(f"server.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line: a read call goes to the warm process when one answers, else runs here."""
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in warm.FORWARDED and os.environ.get(warm.SWITCH) != "0":
        answered = warm.forward(argv)
        if answered is not None:
            return answered
    return run_command(argv)


def run_command(argv: list[str]) -> int:
    """Parse argv and run its command in this process."""
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from server.cli.logs import quiet_libraries

    quiet_libraries()
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader of our output went away (`| head`): normal in a pipeline, not an error to report.
        # Point stdout at /dev/null so the interpreter's final flush does not complain either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
