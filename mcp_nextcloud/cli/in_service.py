"""The CLI's part of the index service: its process's entry point, and the handler that runs a command line.

The service (service/daemon.py) knows requests, not commands; this module gives it a handler per request
kind. A command line runs as the caller's own process would run it, on a Console of its own (the caller's
streams, folder, width and variables: cli/console.py) with the service's kept index and clients, so command
lines and tool calls run side by side and nothing of the process changes for any of them.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Any

from mcp_nextcloud.cli import console
from mcp_nextcloud.service import daemon, loading
from mcp_nextcloud.service import requests as rq
from mcp_nextcloud.service.resources import Resources

# Commands whose modules the service preloads (the read path an agent shells out to by the hundred); any other
# command loads the tool stack first, whole, under the one loading lock (service/loading.py).
LEAN_COMMANDS = ("grep", "index", "inspect", "jobs", "service", "help", "manifest")


class CommandLines:
    """Runs command lines as their own processes would, side by side, keeping parsers, the index and clients."""

    def __init__(self, resources: Resources, log: Any) -> None:
        self.resources, self.log = resources, log
        self._parsers: dict[str, Any] = {}
        self._lock = threading.Lock()

    def parser(self, command: str | None) -> Any:
        """The root parser for a command (built once; argparse parsers are read-only once built)."""
        from mcp_nextcloud.cli.root import build_parser

        key = command or ""
        with self._lock:
            if key not in self._parsers:
                self._parsers[key] = build_parser(command)
            return self._parsers[key]

    def handle(self, request: rq.CommandLine, channel: Any, cancel: rq.CancelToken) -> None:
        """The command's exit code to the caller (its output streamed as written)."""
        t0 = time.perf_counter()
        channel.set_ttys(request.ttys)
        code = self.run(request, channel, cancel)
        if code is None:
            channel.decline("")
        else:
            channel.exit(code)
        self.log(f"{request.argv[:1]}: exit {code} in {(time.perf_counter() - t0) * 1000:.1f} ms")

    def run(self, request: rq.CommandLine, channel: Any, cancel: rq.CancelToken) -> int | None:
        from mcp_nextcloud.cli.root import parse, run_parsed

        con = console.Console(out=channel.out, err=channel.err, inp=channel.inp, cwd=request.cwd,
                              columns=request.columns, env=request.env, cancel=cancel, resources=self.resources)
        argv = request.argv
        try:
            with console.running(con):
                parser = self.parser(argv[0] if argv else None)
                try:
                    args = parse(parser, argv)
                    if getattr(args, "repeatable", False):
                        channel.repeatable()     # a read: the caller may ask again if this service ends
                    if argv and argv[0] not in LEAN_COMMANDS:
                        loading.need("tools")    # whole, under the one lock, before the command imports any of it
                    return run_parsed(parser, args)
                except SystemExit as exc:            # argparse: --help, a usage error
                    return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except rq.Cancelled:
            return 130                               # the caller is gone: nobody reads this code
        except Exception as exc:                     # a bug: logged here; the caller runs the call and shows it
            import traceback

            self.log(f"{argv[:1]} failed: {type(exc).__name__}\n{traceback.format_exc()}")
            return None


def preload() -> None:
    """What every grep and command line needs, loaded before the first request (never half-imported)."""
    from mcp_nextcloud.cli.logs import quiet_libraries

    quiet_libraries()
    import mcp_nextcloud.cli.index  # noqa: F401
    import mcp_nextcloud.cli.root  # noqa: F401
    import mcp_nextcloud.indexer.search.grep  # noqa: F401
    import mcp_nextcloud.indexer.store.embed_registry  # noqa: F401
    import mcp_nextcloud.reader.extract  # noqa: F401


def main(argv: list[str]) -> int:
    """The service process (started by service/client.py with its socket path)."""
    from mcp_nextcloud.service.hosts import ToolHosts

    path = argv[0]
    resources = Resources()
    lines = CommandLines(resources, daemon.log)
    tools = ToolHosts(resources, daemon.log)

    def close() -> None:
        try:
            tools.close()
        finally:
            resources.close()

    handlers: dict[type, rq.Handler] = {rq.CommandLine: lines.handle, rq.ToolCall: tools.call,
                                        rq.Attach: tools.attach}
    return daemon.run(path, handlers, on_close=close, status=tools.status, preload=preload)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
