"""Credentials Nextcloud refused: remembered by a fingerprint, so they are not sent again until they change.

Every failed login from an address counts towards Nextcloud's brute-force
protection, and past about ten in half an hour the server refuses *every*
request from that address (HTTP 429), correct credentials included. So a 401
ends more than one attempt: whichever layer sent it (a tool call, the
background sync, the first sync, the CLI), the credential is recorded here and
every later request with it fails at once, without a request, until the app
password changes (a new `mcp-nextcloud login`, another NEXTCLOUD_APP_PASSWORD).

Only a fingerprint is kept: a salted SHA-256 of (server, login, password),
never the secret. The record is a small file next to the account's config
(0600), so `serve` and the CLI, separate processes, share it.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from .config import default_config_path
from mcp_nextcloud.environment import environ, expand

ENV_PATH = "MCP_NEXTCLOUD_REFUSED"      # where the record lives (default: beside the config file)
# A record shared by every account that calls Nextcloud from this machine's address (the team server's people):
# anyone's failed login from it slows everyone's requests. Its one entry is ADDRESS_MARK. Unset: none.
ADDRESS_ENV = "MCP_NEXTCLOUD_ADDRESS_REFUSED"
ADDRESS_MARK = "address"
_SALT = b"mcp-nextcloud refused credential v1\0"
MAX_LINES = 200                          # older fingerprints are forgotten past this many
PROVEN_S = 2.0                           # credentials accepted this recently carry requests side by side


def fingerprint(account: Any) -> str:
    """A stable, irreversible name for (server, login, password): equal only for the same credentials."""
    raw = "\0".join(str(getattr(account, k, "") or "") for k in ("url", "user", "app_password"))
    return hashlib.sha256(_SALT + raw.encode("utf-8")).hexdigest()[:32]


def server_fingerprint(account: Any) -> str:
    """A name for (server, login) alone: a refusal of any password of this account marks the server slow."""
    raw = "\0".join(str(getattr(account, k, "") or "") for k in ("url", "user"))
    return "s" + hashlib.sha256(_SALT + raw.encode("utf-8")).hexdigest()[:31]


def address_record() -> "Refusals | None":
    """The record of failed logins from this address that every account calling from it shares
    ($MCP_NEXTCLOUD_ADDRESS_REFUSED), or None where none is named (a person's own machine)."""
    env = environ().get(ADDRESS_ENV)
    return shared(expand(env)) if env else None


def default_path() -> Path:
    """$MCP_NEXTCLOUD_REFUSED, else `refused-credentials` beside the account's config file."""
    env = environ().get(ENV_PATH)
    if env:
        return expand(env)
    return default_config_path().with_name("refused-credentials")


class Refusals:
    """The refused fingerprints of this process, backed by a shared file (re-read when it changes)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._known: dict[str, float] = {}    # fingerprint -> when it was refused (epoch seconds)
        self._file_state: tuple[float, int] | None = None
        self._verified: dict[str, float] = {}   # credentials -> when a server last accepted them (monotonic)
        self._gates: dict[str, threading.Lock] = {}

    def accepted(self, fp: str) -> bool:
        """True while a request with these credentials got past the login within PROVEN_S, in this process."""
        when = self._verified.get(fp)
        return when is not None and time.monotonic() - when < PROVEN_S

    def mark_accepted(self, fp: str) -> None:
        self._verified[fp] = time.monotonic()

    def gate(self, fp: str) -> threading.Lock:
        """The one lock of these credentials while they are unproven: one request at a time carries them.

        Concurrent first requests (the background sync, a tool's best-effort check) would each be a failed
        login when the password is wrong, and one abandoned at its timeout is counted by the server without
        our ever seeing its 401. A password accepted before is unproven again PROVEN_S after its last accepted
        request: its person may have deleted it meanwhile (Settings > Security), and the calls they make next,
        side by side, must cost one failed login, not one each."""
        with self._lock:
            return self._gates.setdefault(fp, threading.Lock())

    def refused_at(self, fp: str) -> float | None:
        """When these credentials were refused (here or by another process), or None."""
        with self._lock:
            self._reload()
            return self._known.get(fp)

    def record(self, fp: str, server_fp: str | None = None) -> None:
        """Remember that Nextcloud refused these credentials (and tell the other processes); `server_fp`
        (server_fingerprint) marks when this server last counted a failed login from here."""
        now = time.time()
        with self._lock:
            self._known[fp] = now
            if server_fp:
                self._known[server_fp] = now
            self._write()

    def forget(self, fp: str) -> None:
        """Drop one record (a server mark, once a login from here passed again: Nextcloud forgets too)."""
        with self._lock:
            self._reload()
            if self._known.pop(fp, None) is not None:
                self._write()

    def _reload(self) -> None:
        if self.path is None:
            return
        try:
            st = self.path.stat()
        except OSError:
            return
        state = (st.st_mtime, st.st_size)
        if state == self._file_state:
            return
        try:
            lines = self.path.read_text("ascii", "replace").splitlines()
        except OSError:
            return
        for line in lines:
            fp, _, when = line.partition(" ")
            try:
                self._known.setdefault(fp, float(when))
            except ValueError:
                continue
        self._file_state = state

    def _write(self) -> None:
        """Rewrite the record (0600, atomically); a record that cannot be written stays in this process."""
        if self.path is None:
            return
        newest = sorted(self._known.items(), key=lambda kv: kv[1])[-MAX_LINES:]
        text = "".join(f"{fp} {when:.0f}\n" for fp, when in newest)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as fh:
                fh.write(text)
            os.replace(tmp, self.path)
            st = self.path.stat()
            self._file_state = (st.st_mtime, st.st_size)
        except OSError:
            pass


_shared: dict[Path | None, Refusals] = {}
_shared_lock = threading.Lock()


def shared(path: Path | None = None) -> Refusals:
    """The one Refusals of this process for `path` (default_path() when None)."""
    target = path or default_path()
    with _shared_lock:
        if target not in _shared:
            _shared[target] = Refusals(target)
        return _shared[target]
