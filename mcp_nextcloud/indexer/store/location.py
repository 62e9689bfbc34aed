"""Which index file a command or the server opens: the one rule, so sync, grep, jobs and serve meet."""
from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir


def index_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--index when given, else $MCP_NEXTCLOUD_INDEX, else the platform data directory's index."""
    if explicit:
        return Path(explicit).expanduser()
    return default_index_path()


def default_index_path(account: str = "local") -> Path:
    """Where an account's index lives: $MCP_NEXTCLOUD_INDEX, else the platform data dir.

    Here rather than in index.py: finding the file must not load the index (a CLI command checking
    that the file exists, the warm process comparing a call's index with its own)."""
    env = os.environ.get("MCP_NEXTCLOUD_INDEX")
    if env:
        return Path(env).expanduser()
    return platform_index_path(account)


def platform_index_path(account: str = "local") -> Path:
    """An account's index in the platform data dir, whatever $MCP_NEXTCLOUD_INDEX says.

    On Linux and macOS it follows $HOME and $XDG_DATA_HOME only (server/cli/warm_client.py relies on it)."""
    safe = "".join(c if c.isalnum() or c in "-_.@" else "_" for c in account) or "local"
    return Path(user_data_dir("mcp-nextcloud")) / f"{safe}.db"
