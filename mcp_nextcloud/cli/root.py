"""The root parser with the command modules registered, and running a command in this process.

`cli` re-exports these names lazily: a call the index service answers
(service/client.py) never imports argparse or any command module.
"""
from __future__ import annotations

import argparse
import importlib

from mcp_nextcloud.cli.errors import EXIT_CODES
from mcp_nextcloud.cli.parser import CommandParser, RootParser, iter_commands
from mcp_nextcloud.cli.console import stderr, stdout

__all__ = ["COMMAND_MODULES", "CommandParser", "OWN_MODULE", "RootParser", "build_parser", "iter_commands",
           "parse", "run_command", "run_parsed"]

# Command modules (cli.NAME), in the order root help lists them. Imported when the parser is built.
COMMAND_MODULES = [
    "inspect",         # inspect FILE: what the reader makes of a local file
    "index",           # index add/watch/status/sync, grep
    "jobs",            # jobs status/wait/cancel/resume/list
    "login",           # login URL
    "connect",         # connect HOST: an MCP host's config entry for serve
    "serve",           # serve, report, demo
    "token",           # token add/list/remove: bearer tokens with their own profile
    "tool_register",   # whoami, files, deck, calendar, contacts, meet, mail: one command per MCP tool
    "manifest",        # manifest, help COMMAND
    "service_cmd",     # service status/stop/start: the per-user index service
    "version",         # version (and the root's --version)
]

# Commands whose call needs only their own module's parser (read paths an agent shells out to): the other
# modules register dozens of commands (one per MCP tool), ~10 ms a call would pay for nothing.
OWN_MODULE = {"grep": "index", "index": "index", "inspect": "inspect", "service": "service_cmd"}

ROOT_EPILOG = """\
Start with: mcp-nextcloud demo   (no account needed: an emulated Nextcloud, and what an agent sees)
Then:       mcp-nextcloud login URL; mcp-nextcloud index sync; mcp-nextcloud serve
Run 'mcp-nextcloud COMMAND --help' for a command's options and an example.

A failure is one line on stderr, or with --json {"error": {"code", "cause", "action", "retry", "message"}}
on stdout.

""" + EXIT_CODES


def build_parser(command: str | None = None) -> RootParser:
    """The root parser with every command registered (or only `command`'s module, see OWN_MODULE)."""
    parser = RootParser(
        prog="mcp-nextcloud",
        description="Search, read and act on your own Nextcloud from a terminal or an agent.",
        epilog=ROOT_EPILOG,
    )
    from mcp_nextcloud.cli.version import VersionFlag

    parser.add_argument("--version", action=VersionFlag, help="print the version of mcp-nextcloud and exit")
    sub = parser.add_commands(dest="command", metavar="COMMAND", title="commands")
    names = [OWN_MODULE[command]] if command in OWN_MODULE else COMMAND_MODULES
    for name in names:
        importlib.import_module(f"mcp_nextcloud.cli.{name}").register(sub)
    return parser


def run_command(argv: list[str]) -> int:
    """Parse argv and run its command in this process."""
    parser = build_parser(argv[0] if argv else None)
    return run_parsed(parser, parse(parser, argv))


def parse(parser: RootParser, argv: list[str]) -> argparse.Namespace:
    """argparse's parse, with its usage errors worded like every other misuse (exit 2, nothing done).

    With --json the error is {"error": {code, cause, action, retry, message}} on stdout, as a program reads
    every other error; without it, argparse's own usage line and message on stderr.
    """
    from mcp_nextcloud.cli.parser import UsageError

    try:
        args, extra = parser.parse_known_args(argv)
        if extra:   # argparse would blame the root: name the command that was given them
            command = _command_of(parser, argv)
            from mcp_nextcloud.cli.parser import did_you_mean

            guess = did_you_mean(extra[0].split("=")[0], command.flags()) if extra[0].startswith("--") else ""
            raise UsageError(command.prog, f"unrecognized arguments: {' '.join(extra)}.{guess}".rstrip("."),
                             command.format_usage())
        return args
    except UsageError as err:
        from mcp_nextcloud.cli.parser import dash_hint

        hint = "" if "Did you mean" in err.message else dash_hint(_command_of(parser, argv), argv)
        if hint:
            err.message = err.message.rstrip(".") + "." + hint
        options = argv[: argv.index("--")] if "--" in argv else argv
        if "--json" in options:
            from mcp_nextcloud.cli.errors import CliError, report

            from mcp_nextcloud.nextcloud.errors import sentence

            report(CliError(sentence(f"{err.prog}: {err.message}"), action=f"Run '{err.prog} --help' for its options",
                            usage=True), as_json=True)
        else:
            stderr().write(err.usage)
            stderr().write(f"{err.prog}: error: {err.message}\n")
        raise SystemExit(2) from None


def _command_of(parser: CommandParser, argv: list[str]) -> CommandParser:
    """The deepest command parser the leading words of argv name (the root when none)."""
    for word in argv:
        child = next((c for name, _, c in parser.commands if name == word), None)
        if child is None:
            break
        parser = child
    return parser


def run_parsed(parser: RootParser, args: argparse.Namespace) -> int:
    """Run parsed arguments' command: its exit code (the index service parses with a parser it keeps)."""
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    from mcp_nextcloud.cli.logs import quiet_libraries

    quiet_libraries()
    try:
        code = int(args.func(args) or 0)
        stdout().flush()
        return code
    except KeyboardInterrupt:
        print("interrupted", file=stderr())
        return 130
    except BrokenPipeError:
        from mcp_nextcloud.cli.console import reader_gone

        return reader_gone()
    except Exception as exc:
        if not _is_index_failure(exc):
            raise
        # Any command that opens the index (whoami, files, index sync...): a damaged file, a full disk or a
        # busy database is one line naming the file and what to do, never a traceback.
        from mcp_nextcloud.cli.console import index_file
        from mcp_nextcloud.cli.errors import CliError, report
        from mcp_nextcloud.indexer.errors import index_unusable

        where = index_file(getattr(args, "index", None))
        problem = index_unusable(where, exc).line()
        return report(CliError(problem, status="index_unusable"), getattr(args, "json", False))


def _is_index_failure(exc: BaseException) -> bool:
    """An error of SQLite (apsw, not imported here for it) or a full disk."""
    import errno

    return type(exc).__module__ == "apsw" or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT))
