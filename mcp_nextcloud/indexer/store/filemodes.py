"""Private file modes for what holds a person's documents: the data folder 0700, databases 0600.

Every folder and file of ours that holds a person's data is made here: `private_folder`,
`write_private` (artifacts, tokens) and `secure_database` (index, call log, jobs, batches).

The index is the full text of every document; the call log and job store sit
beside it. `secure_database(path)` runs before a database is opened: it
creates the folder 0700 (and the file 0600, so SQLite's -wal and -shm, which
copy the database's mode, are born 0600 too) and tightens looser modes left
by older versions, returning a note for each repair. A folder the person
chose (`--index /tmp/x.db`) is never changed: only the default data folder,
or one created here, is made private.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


DIR_MODE = 0o700
FILE_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")


# The default data folder's own name on every platform (platformdirs ends the path with the app name);
# checked first so that opening an index elsewhere (a CLI grep with --index) never imports platformdirs.
DATA_DIR_NAME = "mcp-nextcloud"


def default_data_dir() -> Path:
    from mcp_nextcloud.environment import user_dir

    return user_dir("data")


def private_folder(folder: Path | str) -> Path:
    """Create `folder` and any missing parents 0700 (the umask does not apply); an existing one is left as is.

    The one way our files' folders are made (data folder, artifacts, logs, tokens): `mkdir(parents=True)`
    would give the parents, and under a usual umask the folder itself, 0755.
    """
    target = Path(folder)
    missing = []
    probe = target
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for level in reversed(missing):
        try:
            level.mkdir(mode=DIR_MODE)
        except FileExistsError:   # made meanwhile by another process: its maker decided its mode
            continue
        os.chmod(level, DIR_MODE)
    return target


def write_private(path: Path | str, data: bytes) -> None:
    """Write `data` to `path` (replacing it atomically) as a 0600 file in a 0700 folder made if missing."""
    target = Path(path)
    private_folder(target.parent)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    os.replace(tmp, target)


def secure_database(path: Path | str) -> list[str]:
    """Make `path`'s folder (when it is ours) and the database with its side files private; notes on repairs."""
    db = Path(path)
    notes: list[str] = []
    folder = db.parent
    if not folder.exists():
        private_folder(folder)
    elif folder.name == DATA_DIR_NAME and _same(folder, default_data_dir()):
        notes += _tighten(folder, DIR_MODE, "data folder")
    if not db.exists():
        try:
            os.close(os.open(str(db), os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        except FileExistsError:
            pass
    for candidate in [db] + [db.with_name(db.name + suffix) for suffix in SIDE_FILES]:
        notes += _tighten(candidate, FILE_MODE, "database file")
    return notes


def _tighten(path: Path, mode: int, what: str) -> list[str]:
    try:
        st = path.stat()
    except OSError:
        return []
    wanted = stat.S_ISDIR if mode == DIR_MODE else stat.S_ISREG
    if not wanted(st.st_mode) or st.st_uid != os.getuid():
        return []  # not ours to change (a folder where a file belongs, another user's file, a device)
    current = st.st_mode & 0o777
    if current & ~mode & 0o777 == 0:
        return []
    os.chmod(path, mode)
    return [f"the {what} {path} was readable by others (mode {current:o}); its mode is now {mode:o}"]


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False
