"""Which index file a command or the server opens: the one rule, so sync, grep, jobs and serve meet."""
from __future__ import annotations

import os
from pathlib import Path


def index_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--index when given, else $MCP_NEXTCLOUD_INDEX, else the platform data directory's index."""
    if explicit:
        return Path(explicit).expanduser()
    return default_index_path()


def default_index_path(account: str = "local") -> Path:
    """Where an account's index lives: $MCP_NEXTCLOUD_INDEX, else the platform data dir.

    Here rather than in index.py: finding the file must not load the index (a CLI call looking for
    the warm process's socket)."""
    env = os.environ.get("MCP_NEXTCLOUD_INDEX")
    if env:
        return Path(env).expanduser()
    from platformdirs import user_data_dir

    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in account) or "local"
    return Path(user_data_dir("mcp-nextcloud")) / f"{safe}.db"
