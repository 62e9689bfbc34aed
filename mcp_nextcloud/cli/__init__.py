"""`mcp-nextcloud` command line: one entry point, one module per command group.

Each command module exposes `register(subparsers)` which adds its sub-commands
(each with an `Example:` epilog) and sets `func` (taking the parsed args,
returning an exit code). Root help is an index of the commands. Results go to
stdout (compact JSON with --json); diagnostics go to stderr; no secret is ever
printed.

This package's top imports nothing: a call that the index service answers
(service/client.py) pays for os, sys and a socket only. The parser
and the in-process run live in cli/root.py and are re-exported here on
first use. Each command module keeps its top cheap
(argparse, json, stdlib): heavy imports (mcp, apsw, the reader, icalendar via
nextcloud.caldav) go inside the function that runs the command, so
`mcp-nextcloud --help` and every other command stay fast
(tests/server/test_cli_startup.py checks this).
"""
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from mcp_nextcloud.cli.root import (COMMAND_MODULES, OWN_MODULE, CommandParser, RootParser, build_parser,
                                               iter_commands, run_command, run_parsed)

__all__ = ["COMMAND_MODULES", "CommandParser", "OWN_MODULE", "RootParser", "build_parser", "iter_commands",
           "main", "run_command", "run_parsed"]

# Commands whose process ends as soon as its output is written (see `process_main`): the read calls an agent
# makes by the hundred. Tearing the interpreter down (freeing every module and object one by one) costs such
# a call ~6 ms, 10-15% of it, and does nothing the system does not do when the process ends.
QUICK_EXIT = ("grep", "inspect")
WRITE_FAILED = 120   # CPython's exit status when flushing the standard streams at exit fails


def __getattr__(name: str) -> object:
    """The parser side (cli/root.py), imported when first named."""
    if name in __all__ and name != "main":
        from mcp_nextcloud.cli import root

        return getattr(root, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main(argv: list[str] | None = None) -> int:
    """The command line: run by the index service (started when none runs), else here (MCP_NEXTCLOUD_SERVICE=0)."""
    from mcp_nextcloud.service.client import forward

    argv = sys.argv[1:] if argv is None else argv
    problem = undecodable(argv)
    if problem is not None:
        sys.stderr.write(f"mcp-nextcloud: {problem}\n")
        return 2
    answered = forward(argv)
    if answered is not None:
        return answered
    from mcp_nextcloud.cli.root import run_command

    return run_command(argv)


def undecodable(argv: list[str]) -> str | None:
    """What is wrong with an argument that is not UTF-8 (Python keeps its bytes as U+DC80..U+DCFF), or None."""
    for number, arg in enumerate(argv, 1):
        for index, char in enumerate(arg):
            if "\udc80" <= char <= "\udcff":
                return (f"argument {number} is not valid UTF-8 (byte 0x{ord(char) - 0xDC00:02X} at character "
                        f"{index}); give it in UTF-8 (a name in another encoding: rename it, or name its folder)")
    return None


def process_main() -> int:
    """`main()` as a process's entry point (console script, `python -m`): a QUICK_EXIT command's
    process ends right after its atexit handlers and a flush of its output; any other returns."""
    try:
        code = main()
    except BrokenPipeError:   # help printed while parsing (`--help | true`): past run_parsed's own handling
        from mcp_nextcloud.cli.console import reader_gone

        code = reader_gone()
    if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
        _end_process(code)
    return code


def _end_process(code: int) -> None:
    import atexit
    import os

    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)   # CPython's; elsewhere, a normal exit
    if run_exit_handlers is None:
        return
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BrokenPipeError:         # the reader went away (`| head`): nothing left to write to
            pass
        except (OSError, ValueError):   # output lost (a full disk...): fail as the interpreter's own exit does
            code = code or WRITE_FAILED
    os._exit(code)


if __name__ == "__main__":
    sys.exit(process_main())
