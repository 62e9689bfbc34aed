"""What to tell a person when the index database cannot be used: one line, cause and next step.

One owner for these texts (`index ...` commands and `serve` both use it):
a full disk leaves the index intact, so the advice is to free space, never
to move the index away; a damaged or foreign file is the case for setting it
aside and rebuilding; a busy one only needs a moment.
"""
from __future__ import annotations

import errno
from pathlib import Path


def index_problem(where: Path | str, exc: BaseException) -> str:
    """The instruction for an apsw.Error or OSError raised while opening or writing the index at `where`."""
    name = type(exc).__name__
    if name == "FullError" or (isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)):
        return (f"the disk holding the index {where} is full; the index is intact (the interrupted write was "
                "rolled back). Free some space, then run the command again")
    if name in ("BusyError", "LockedError"):
        return f"the index {where} is busy (another mcp-nextcloud process is writing); wait a moment and run again"
    if Path(where).is_dir():
        what = "is a folder, not an index file"
    elif name in ("NotADBError", "CorruptError"):
        what = f"is damaged or not an index (SQLite says: {exc})"
    elif name in ("ReadOnlyError", "PermissionError", "CantOpenError"):
        return f"the index {where} cannot be opened for writing ({name}: {exc}); check its and its folder's permissions"
    else:
        what = f"could not be used ({name}: {exc})"
    return (f"the index {where} {what}. Move it aside (or pass --index with another path) and run "
            "`mcp-nextcloud index sync` to build a new one (nothing on the server is affected)")
