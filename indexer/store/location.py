"""Which index file a command or the server opens: the one rule, so sync, grep, jobs and serve meet."""
from __future__ import annotations

import os
from pathlib import Path


def index_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """--index when given, else $MCP_NEXTCLOUD_INDEX, else the platform data directory's index."""
    if explicit:
        return Path(explicit).expanduser()
    from indexer.store.index import default_index_path

    return default_index_path()
