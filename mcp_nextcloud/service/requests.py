"""The index service's requests: typed, decoded once from the wire, each answered by its own handler.

Wire: one netstring of netstring fields, [PROTOCOL, kind, ...] (service/client.py packs them). The caller's
environment travels as one packed field of KEY=VALUE strings.
"""
from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Protocol, Union

from mcp_nextcloud.service.client import unpack


class Cancelled(KeyboardInterrupt):
    """The caller went away: the work stops at its next safe point, as on Ctrl-C (what it finished stays)."""


class CancelToken:
    """Set when the caller hangs up; work checks it where stopping is safe (`check`)."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise Cancelled()


@dataclass(frozen=True)
class CommandLine:
    """A command line, run as the caller's own process would run it."""

    env: dict[str, str]
    cwd: str
    columns: int
    ttys: str          # "1"/"0" for stdin, stdout, stderr
    argv: list[str]
    watched: ClassVar[bool] = True   # the caller hanging up stops it (its CancelToken, set by a watcher thread)


@dataclass(frozen=True)
class ToolCall:
    """One MCP tool call for a `serve`, under its profile."""

    env: dict[str, str]
    index: str
    name: str
    arguments: dict[str, Any]
    profile: dict[str, Any]
    # Not watched: it runs to its end (no tool reads a CancelToken), so no watcher thread is started for it
    watched: ClassVar[bool] = False


@dataclass(frozen=True)
class Attach:
    """A `serve` holding its connection open: the service stays, and syncs at `interval` seconds (0: never)."""

    env: dict[str, str]
    index: str
    interval: float


@dataclass(frozen=True)
class Status:
    pass


@dataclass(frozen=True)
class Stop:
    pass


Request = Union[CommandLine, ToolCall, Attach, Status, Stop]


class BadRequest(ValueError):
    """A request this service does not understand (another kind, missing fields)."""


def _env(field: str) -> dict[str, str]:
    pairs = (item.partition("=") for item in unpack(field.encode("utf-8", "surrogatepass")))
    return {key: value for key, _, value in pairs if key}


def decode(fields: list[str]) -> Request:
    """The typed request of a message's fields after the protocol field."""
    kind, rest = (fields[0], fields[1:]) if fields else ("", [])
    try:
        if kind == "cli":
            return CommandLine(_env(rest[0]), rest[1], int(rest[2]), rest[3], rest[4:])
        if kind == "tool":
            return ToolCall(_env(rest[0]), rest[1], rest[2], json.loads(rest[3]), json.loads(rest[4]))
        if kind == "attach":
            return Attach(_env(rest[0]), rest[1], float(rest[2]))
    except (IndexError, ValueError) as exc:
        raise BadRequest(f"a malformed {kind} request") from exc
    if kind == "status":
        return Status()
    if kind == "stop":
        return Stop()
    raise BadRequest("unknown request")


class Channel(Protocol):
    """What a handler answers through: the caller's streams, stdin on demand, and the one final answer."""

    out: Any   # text streams (TextIO's interface)
    err: Any
    inp: Any

    def answer(self, payload: bytes) -> None: ...

    def exit(self, code: int) -> None: ...

    def repeatable(self) -> None: ...

    def decline(self, why: str) -> None: ...

    def wait_closed(self) -> None: ...   # until the caller closes its end (an attached serve)


Handler = Callable[[Any, Channel, CancelToken], None]
