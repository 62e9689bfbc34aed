"""The heavy stacks the index service loads on first need, one at a time, under one lock.

The service preloads what every request needs before it takes the first one (the grep path). The MCP tool
stack (~100 MB) and the embedding model are loaded later, only when a call needs them; two threads importing
the same circle of modules at once can deadlock (Python's module locks: "_DeadlockError ... _ModuleLock"),
so every such load goes through `need()`, which imports the whole stack under one lock before any of it
is used. After the first load, `need()` costs a dict lookup.
"""
from __future__ import annotations

import importlib
import threading

STACKS = {
    # What a tool call and a serve's background sync import, whole (server/app.py pulls in every tool module).
    "tools": ("anyio", "mcp_nextcloud.server.app", "mcp_nextcloud.server.profile", "mcp_nextcloud.server.context",
              "mcp_nextcloud.server.telemetry", "mcp_nextcloud.server.faultlog", "mcp_nextcloud.server.mail_app",
              "mcp_nextcloud.indexer.remote.refresh", "mcp_nextcloud.indexer.jobs.embed"),
}
_lock = threading.RLock()
_loaded: set[str] = set()


def need(stack: str) -> None:
    """Import every module of `stack` (once; other threads wait until it is whole)."""
    if stack in _loaded:
        return
    with _lock:
        if stack in _loaded:
            return
        for name in STACKS[stack]:
            importlib.import_module(name)
        _loaded.add(stack)
