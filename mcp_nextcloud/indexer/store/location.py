"""Which index file a command or the server opens: the one rule, so sync, grep, jobs and serve meet."""
from __future__ import annotations

import os
from pathlib import Path

from mcp_nextcloud.environment import environ, expand, user_dir


def index_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--index when given, else $MCP_NEXTCLOUD_INDEX, else the platform data directory's index."""
    if explicit:
        return expand(explicit)
    return default_index_path()


def default_index_path(account: str = "local") -> Path:
    """Where an account's index lives: $MCP_NEXTCLOUD_INDEX, else the platform data dir.

    Here rather than in index.py: finding the file must not load the index (a CLI command checking
    that the file exists, the warm process comparing a call's index with its own)."""
    env = environ().get("MCP_NEXTCLOUD_INDEX")
    if env:
        return expand(env)
    return platform_index_path(account)


def platform_index_path(account: str = "local") -> Path:
    """An account's index in the platform data dir, whatever $MCP_NEXTCLOUD_INDEX says.

    On Linux it follows $HOME and $XDG_DATA_HOME only (service/client.py computes the same path)."""
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in account) or "local"
    return user_dir("data") / f"{safe}.db"
