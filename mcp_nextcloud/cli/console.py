"""Where a command line's input and output go, and what it runs with: the caller's, not the process's.

A command run in its own process has the process's streams, folder, terminal width and variables. In the
index service many command lines and tool calls run side by side, each for another caller: the service
hands every command line its own Console (cli/in_service.py) and nothing of the process changes. Command
code writes to `stdout()` / `stderr()`, reads `stdin()`, resolves a relative path with `path()`; `current()`
is the whole Console (the service's resources among them).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from mcp_nextcloud import environment
from mcp_nextcloud.service.requests import CancelToken

if TYPE_CHECKING:
    from mcp_nextcloud.service.resources import Resources


@dataclass
class Console:
    """One command line's streams and surroundings."""

    out: TextIO
    err: TextIO
    inp: TextIO
    cwd: str
    columns: int
    env: Mapping[str, str]
    cancel: CancelToken = field(default_factory=CancelToken)
    resources: "Resources | None" = None   # the index service's kept index and clients (None: own process)

    def path(self, given: str | os.PathLike[str]) -> Path:
        """A path the caller typed, as their shell meant it: `~` against their HOME, relative to their folder."""
        with environment.using(self.env):
            expanded = environment.expand(given)
        return expanded if expanded.is_absolute() else Path(self.cwd) / expanded


_CURRENT: contextvars.ContextVar[Console | None] = contextvars.ContextVar("mcp_nextcloud_console", default=None)


def _own_process() -> Console:
    """This process's own console (read each time: a test or a host may have swapped sys.stdout)."""
    from mcp_nextcloud.service.client import terminal_columns

    return Console(out=sys.stdout, err=sys.stderr, inp=sys.stdin, cwd=os.getcwd(), columns=terminal_columns(),
                   env=environment.process())


def current() -> Console:
    return _CURRENT.get() or _own_process()


def stdout() -> TextIO:
    found = _CURRENT.get()
    return sys.stdout if found is None else found.out


def stderr() -> TextIO:
    found = _CURRENT.get()
    return sys.stderr if found is None else found.err


def stdin() -> TextIO:
    found = _CURRENT.get()
    return sys.stdin if found is None else found.inp


def reader_gone() -> int:
    """The exit code when the reader of our output went away (`| head`, `--help | true`): normal in a pipeline,
    no error and no traceback. This process's stdout is pointed at /dev/null so the final flush is quiet too."""
    if stdout() is sys.stdout:
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):   # no file descriptor (a test's capture): nothing to flush there
            pass
    return 0


def columns() -> int:
    found = _CURRENT.get()
    if found is not None:
        return found.columns
    from mcp_nextcloud.service.client import terminal_columns

    return terminal_columns()


def check_cancelled() -> None:
    """Stop here when the caller went away (a no-op in a command's own process: Ctrl-C interrupts it)."""
    found = _CURRENT.get()
    if found is not None:
        found.cancel.check()


@contextlib.contextmanager
def running(console: Console) -> Iterator[Console]:
    """Run the block as `console`'s command line: its streams, folder, width and environment."""
    token = _CURRENT.set(console)
    try:
        with environment.using(console.env):
            yield console
    finally:
        _CURRENT.reset(token)




def index_file(explicit: str | os.PathLike[str] | None) -> Path:
    """The index a command line names: --index, else $MCP_NEXTCLOUD_INDEX, else the default (the caller's
    folder and HOME for a relative or `~` path; indexer/store/location.py owns the default)."""
    from mcp_nextcloud.indexer.store.location import index_path

    con = current()
    named = explicit or con.env.get("MCP_NEXTCLOUD_INDEX")
    if named:
        return con.path(named)
    with environment.using(con.env):
        return index_path(None)
