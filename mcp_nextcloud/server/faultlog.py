"""Internal faults, logged with their traceback: never an argument value, a file's content or a message.

A tool answer that says "an internal error, logged on the server" must be
true. `record()` logs one fault to the `mcp_nextcloud.faults` logger: the
tool's name, the exception types and the stack frames (file, line, function,
code line of our source). Exception messages are left out on purpose: they
can quote the argument or the document that triggered the fault.

`install()` (called by `serve`) sends that logger to a rotating file under
the data directory (mode 0600) and, for stdio, to stderr at warning level.
"""
from __future__ import annotations

import io
import logging
import logging.handlers
import os
import sys
import traceback
from pathlib import Path
from typing import TextIO

LOGGER = logging.getLogger("mcp_nextcloud.faults")
FILE_NAME = "faults.log"
MAX_BYTES = 1024 * 1024
BACKUPS = 3


def describe(exc: BaseException) -> str:
    """The exception chain as types and frames, innermost cause last; no message text."""
    lines: list[str] = []
    seen: set[int] = set()
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        current = current.__cause__ or current.__context__
    for link in reversed(chain):
        lines.append(f"{type(link).__module__}.{type(link).__qualname__}")
        for frame in traceback.extract_tb(link.__traceback__):
            lines.append(f'  File "{frame.filename}", line {frame.lineno}, in {frame.name}')
            if frame.line:
                lines.append(f"    {frame.line.strip()}")
    return "\n".join(lines)


class _PrivateRotatingFile(logging.handlers.RotatingFileHandler):
    """A rotating log whose every file (the rotated ones too) is created readable by its owner only."""

    def _open(self) -> io.TextIOWrapper:
        fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.fchmod(fd, 0o600)
        return io.TextIOWrapper(io.FileIO(fd, "a"), encoding=self.encoding or "utf-8")


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg,unused-ignore]
    """A handler writing to whatever sys.stderr is when a fault happens (hosts and tests swap it)."""

    @property  # type: ignore[override,unused-ignore]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class CallStopped(Exception):
    """Raised on purpose to end a call early (a dry run stopping at its first write): not a fault.

    The code that raises it is the call's owner and expects it back; nothing failed, so it is never
    logged as an internal fault and never answered as one (server.app classifies it).
    """


def stopped(exc: BaseException | None) -> bool:
    """Whether `exc` or anything in its chain (cause, context) is a deliberate CallStopped."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, CallStopped):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def record(tool: str, exc: BaseException) -> None:
    """Log one internal fault of `tool` with its traceback (never raises); a deliberate stop is not one."""
    if stopped(exc):
        return
    try:
        LOGGER.warning("internal fault in %s:\n%s", tool, describe(exc))
    except Exception:  # logging must never turn a fault answer into a crash
        pass


def install(data_dir: Path | str, *, stderr: bool = True) -> Path:
    """Log faults to `data_dir`/faults.log (rotating, 0600) and, if asked, to stderr. Returns the file's path."""
    path = Path(data_dir) / FILE_NAME
    from mcp_nextcloud.indexer.store.filemodes import private_folder

    private_folder(path.parent)
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    for handler in list(LOGGER.handlers):
        LOGGER.removeHandler(handler)
        handler.close()
    file_handler = _PrivateRotatingFile(path, maxBytes=MAX_BYTES, backupCount=BACKUPS, encoding="utf-8")
    file_handler.setFormatter(fmt)
    LOGGER.addHandler(file_handler)
    if stderr:
        err = _Stderr()
        err.setLevel(logging.WARNING)
        err.setFormatter(fmt)
        LOGGER.addHandler(err)
    LOGGER.setLevel(logging.WARNING)
    LOGGER.propagate = False
    return path
