"""One tool server for many contexts: the tools read the context of the call in progress.

The team's index service runs the calls of many people, each on their own context (account, index, clients,
caches). Registering the tools (their argument models) costs ~0.7 s and a few MB, so the service builds one tool
server over `CallContext` and runs each call `serving(that person's context)`: every attribute the tools read
or set goes to that context. A context variable, so calls of other people in other threads never see it
(anyio's worker threads run sync tools in a copy of the caller's context); outside a call it refuses, there is
no default to fall back to.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import TYPE_CHECKING, Any, Iterator, cast

if TYPE_CHECKING:
    from mcp_nextcloud.server.context import ServerContext

_SERVING: contextvars.ContextVar[ServerContext | None] = contextvars.ContextVar("mcp_nextcloud_ctx", default=None)


class NoCallContext(RuntimeError):
    """A tool of the shared server ran outside `serving(...)`: a bug, never another person's context."""


def _current() -> ServerContext:
    ctx = _SERVING.get()
    if ctx is None:
        raise NoCallContext("a tool of the shared tool server ran outside a call's context")
    return ctx


class CallContext:
    """Stands for the ServerContext of the call in progress (attributes read and set on it)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        return getattr(_current(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(_current(), name, value)


def call_context() -> ServerContext:
    """The stand-in, typed as what the tools expect."""
    return cast("ServerContext", CallContext())


@contextlib.contextmanager
def serving(ctx: ServerContext) -> Iterator[None]:
    """Run the block (and the tool calls it makes, in this thread and the worker threads it starts) on `ctx`."""
    token = _SERVING.set(ctx)
    try:
        yield
    finally:
        _SERVING.reset(token)
