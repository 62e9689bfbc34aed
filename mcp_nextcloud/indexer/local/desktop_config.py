"""Which Nextcloud folder a desktop-client sync folder mirrors, read from the client's own config.

The Nextcloud desktop client keeps its settings in `nextcloud.cfg`, a Qt
QSettings INI file (~/.config/Nextcloud/ on Linux, ~/Library/Preferences/
Nextcloud/ on macOS, %APPDATA%\\Nextcloud\\ on Windows). Each synced folder is
a group under `[Accounts]`, saved by `FolderDefinition::save`:

    [Accounts]
    0\\Folders\\1\\localPath=/home/alice/Work/
    0\\Folders\\1\\journalPath=.sync_3f2a9c1b7d4e.db
    0\\Folders\\1\\targetPath=/Work

(`Folders`, `Multifolders` or `FoldersWithPlaceholders` for virtual-files
folders). `targetPath` is the remote folder; the journal's paths are relative
to it, so a file's Nextcloud path is targetPath + journal path. We read only
these three keys: nothing else (no account URL, user or secret) is kept.
`$MCP_NEXTCLOUD_DESKTOP_CONFIG` (one path, or several joined with os.pathsep)
replaces the standard locations, for tests and unusual installs.
"""
from __future__ import annotations

import configparser
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from mcp_nextcloud.environment import environ, expand
from mcp_nextcloud.environment import home as user_home
from mcp_nextcloud.indexer.errors import IndexCode, IndexerError

ENV_VAR = "MCP_NEXTCLOUD_DESKTOP_CONFIG"
FOLDER_GROUPS = ("Folders", "Multifolders", "FoldersWithPlaceholders")
_KEY_ESCAPE = re.compile(r"%U([0-9A-Fa-f]{4})|%([0-9A-Fa-f]{2})")
_SIMPLE_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
                   '"': '"', "'": "'", "?": "?", "\\": "\\", ";": ";", ",": ","}


@dataclass(frozen=True)
class SyncFolder:
    """One folder the desktop client syncs: where it is locally and which Nextcloud folder it mirrors."""

    local_path: str          # absolute local folder, as the client wrote it
    target_path: str         # the Nextcloud folder it mirrors, normalised: "/" or "/Work"
    journal_path: str | None  # the journal's file name (relative to local_path) when recorded
    config: str              # the nextcloud.cfg it was read from


class RemotePathError(IndexerError, ValueError):
    """A remote path given by the user cannot be a Nextcloud folder path."""

    code = IndexCode.BAD_REMOTE_PATH


class _CaseSensitiveParser(configparser.ConfigParser):
    """Qt keys are case-sensitive; ConfigParser lower-cases option names unless told otherwise."""

    def optionxform(self, optionstr: str) -> str:
        return optionstr

def normalize_remote_path(path: str) -> str:
    """A Nextcloud folder path as "/" or "/A/B" (no trailing slash); '.' and '..' are refused.

    Backslashes are taken as separators too, so a Windows-style "\\Work" still works.
    """
    parts = [p for p in str(path).replace("\\", "/").split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise RemotePathError(
            f"remote path {path!r} contains '.' or '..'",
            "give the Nextcloud folder the sync folder mirrors as an absolute path such as /Work or /")
    if any(not p.isprintable() for p in parts):
        raise RemotePathError(f"remote path {path!r} contains control characters",
                              "give a folder path such as /Work")
    return "/" + "/".join(parts)


def config_paths() -> list[Path]:
    """The nextcloud.cfg files to consult: $MCP_NEXTCLOUD_DESKTOP_CONFIG, else the client's standard places."""
    env = environ().get(ENV_VAR)
    if env is not None:
        return [expand(p) for p in env.split(os.pathsep) if p]
    home = user_home()
    bases = [Path(environ().get("XDG_CONFIG_HOME") or home / ".config"),
             home / ".var" / "app" / "com.nextcloud.desktopclient.nextcloud" / "config",   # Flatpak
             home / "Library" / "Preferences"]                                             # macOS
    if sys.platform == "win32" and environ().get("APPDATA"):
        bases.insert(0, Path(environ()["APPDATA"]))
    return [b / "Nextcloud" / "nextcloud.cfg" for b in bases]


def _unescape_key(key: str) -> list[str]:
    """Qt INI key -> its group path ('0\\Folders\\1\\localPath' -> ['0', 'Folders', '1', 'localPath'])."""
    decoded = _KEY_ESCAPE.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), key)
    return decoded.split("\\")


def _unescape_value(raw: str) -> list[str]:
    """A Qt INI value -> its string list (one element for a plain string).

    Qt quotes strings holding ',' ';' or edge spaces, writes backslash escapes
    (\\xHHHH for characters Qt5 did not write raw) and splits unquoted ','.
    """
    if raw.startswith("@@"):
        raw = raw[1:]
    elif raw.startswith("@"):
        return []   # @Variant(...), @ByteArray(...): never a path
    out, cur, quoted, i = [], [], False, 0
    while i < len(raw):
        c = raw[i]
        if c == '"':
            quoted = not quoted
        elif c == "\\" and i + 1 < len(raw):
            i += 1
            e = raw[i]
            if e == "x":
                j = i + 1
                while j < len(raw) and raw[j] in "0123456789abcdefABCDEF":
                    j += 1
                if j > i + 1:
                    cur.append(chr(int(raw[i + 1:j], 16) & 0x10FFFF))
                i = j - 1
            elif e in "01234567":
                j = i
                while j < len(raw) and j < i + 3 and raw[j] in "01234567":
                    j += 1
                cur.append(chr(int(raw[i:j], 8)))
                i = j - 1
            else:
                cur.append(_SIMPLE_ESCAPES.get(e, e))
        elif c == "," and not quoted:
            out.append("".join(cur))
            cur = []
            while i + 1 < len(raw) and raw[i + 1] == " ":   # Qt writes lists as "a, b"
                i += 1
        elif c == ";" and not quoted:
            break   # a comment
        else:
            cur.append(c)
        i += 1
    out.append("".join(cur))
    return out if '"' in raw else [o.strip() for o in out]   # Qt trims unquoted text


def read_sync_folders(cfg: str | Path) -> list[SyncFolder]:
    """Every sync folder a nextcloud.cfg declares (empty when it declares none).

    Raises OSError when the file cannot be read and ValueError when it is not an INI file.
    """
    parser = _CaseSensitiveParser(interpolation=None, strict=False, delimiters=("=",),
                                  comment_prefixes=(";", "#"), default_section="\x00none")
    try:
        with open(cfg, encoding="utf-8", errors="replace") as fh:
            parser.read_file(fh)
    except configparser.Error as exc:
        raise ValueError(f"not a desktop-client config ({type(exc).__name__})") from None
    groups: dict[tuple[str, ...], dict[str, str]] = {}
    for section in parser.sections():
        if _unescape_key(section) != ["Accounts"]:
            continue
        for key, value in parser.items(section, raw=True):
            parts = _unescape_key(key)
            # <account>\<Folders|Multifolders|FoldersWithPlaceholders>\<folder id>\<name>
            if len(parts) == 4 and parts[1] in FOLDER_GROUPS:
                values = _unescape_value(value)
                if len(values) == 1:
                    groups.setdefault(tuple(parts[:3]), {})[parts[3]] = values[0]
    found = []
    for fields in groups.values():
        local = fields.get("localPath")
        if not local:
            continue
        target = fields.get("targetPath") or "/"
        try:
            target = normalize_remote_path(target)
        except RemotePathError:
            continue
        found.append(SyncFolder(local_path=local, target_path=target, journal_path=fields.get("journalPath") or None,
                                config=str(cfg)))
    return found


def _same_folder(a: str, b: str) -> bool:
    def norm(p: str) -> str:
        return os.path.normcase(os.path.realpath(expand(p)))

    return norm(a) == norm(b)


def find_sync_folder(folder: str | Path, journal_name: str | None = None) -> tuple[SyncFolder | None, list[str]]:
    """The desktop client's entry for the local `folder`, and notes about configs that could not be read.

    When several entries name the folder (a stale one left behind), the one
    whose journalPath is `journal_name` wins.
    """
    notes: list[str] = []
    matches: list[SyncFolder] = []
    for cfg in config_paths():
        if not cfg.is_file():
            continue
        try:
            entries = read_sync_folders(cfg)
        except (OSError, ValueError) as exc:
            notes.append(f"the desktop client's config {cfg} could not be read ({exc})")
            continue
        matches += [e for e in entries if _same_folder(e.local_path, os.fspath(folder))]
    if not matches:
        return None, notes
    for m in matches:
        if journal_name and m.journal_path and os.path.basename(m.journal_path.replace("\\", "/")) == journal_name:
            return m, notes
    return matches[0], notes


def configured_remote(folder: str, journal_name: str) -> tuple[str | None, list[str]]:
    """The Nextcloud folder the desktop client's config says the sync folder `folder` mirrors (None: no entry),
    and notes about configs that could not be read (indexer.store.roots.RemoteLookup)."""
    entry, problems = find_sync_folder(folder, journal_name)
    return (entry.target_path if entry is not None else None), problems
