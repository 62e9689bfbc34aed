"""The team server's state: OAuth clients, codes and tokens, and the people who signed in (one SQLite file, 0600).

Codes and tokens are kept as SHA-256 hashes only: the file alone lets nobody call the server. A code and the
tokens issued from it share a family: revoking any member, or replaying the code, ends the whole family.
People's app passwords are stored sealed by the vault (vault.py).
"""
from __future__ import annotations

import hashlib
import os
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS clients(client_id TEXT PRIMARY KEY, info TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE IF NOT EXISTS codes(hash TEXT PRIMARY KEY, family TEXT NOT NULL, client_id TEXT NOT NULL,
    subject TEXT NOT NULL, grant_json TEXT NOT NULL, expires_at REAL NOT NULL, used INTEGER NOT NULL DEFAULT 0,
    profile TEXT NOT NULL DEFAULT '{}');
CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, kind TEXT NOT NULL, family TEXT NOT NULL,
    client_id TEXT NOT NULL, subject TEXT NOT NULL, scopes TEXT NOT NULL, resource TEXT,
    expires_at INTEGER NOT NULL, profile TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS tokens_family ON tokens(family);
CREATE TABLE IF NOT EXISTS people(subject TEXT PRIMARY KEY, nc_url TEXT NOT NULL, login_name TEXT NOT NULL,
    sealed BLOB NOT NULL, updated REAL NOT NULL);
"""
STATE_FILE = "team.sqlite"


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_secret() -> str:
    return secrets.token_urlsafe(32)       # 256 bits


@dataclass(frozen=True)
class TokenRow:
    kind: str           # "access" or "refresh"
    family: str
    client_id: str
    subject: str
    scopes: list[str]
    resource: str | None
    expires_at: int
    profile: str = "{}"   # the limits the person chose at sign-in (server/profile.py Profile.to_dict, JSON)


@dataclass(frozen=True)
class CodeRow:
    family: str
    client_id: str
    subject: str
    grant_json: str     # the authorization request's parameters (redirect URI, PKCE challenge, resource...)
    expires_at: float
    profile: str = "{}"


@dataclass(frozen=True)
class Person:
    subject: str        # the Nextcloud user id
    nc_url: str
    login_name: str
    sealed: bytes


def private_folder(path: Path) -> Path:
    """`path`, created 0700 (and set so when it exists)."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


class Store:
    """The state file; thread-safe (one connection under a lock: every statement is a few microseconds)."""

    def __init__(self, folder: Path) -> None:
        path = private_folder(folder) / STATE_FILE
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        os.chmod(path, 0o600)
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(SCHEMA)
        self._lock = threading.Lock()

    def _run(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # -- clients --
    def put_client(self, client_id: str, info: str) -> None:
        self._run("INSERT OR REPLACE INTO clients VALUES(?,?,?)", (client_id, info, time.time()))

    def client(self, client_id: str) -> str | None:
        rows = self._run("SELECT info FROM clients WHERE client_id=?", (client_id,))
        return str(rows[0][0]) if rows else None

    # -- codes --
    def put_code(self, code: str, row: CodeRow) -> None:
        self._run("INSERT INTO codes VALUES(?,?,?,?,?,?,0,?)", (digest(code), row.family, row.client_id, row.subject,
                                                               row.grant_json, row.expires_at, row.profile))

    def code(self, code: str) -> CodeRow | None:
        """The unused code's row; a code presented again ends the tokens issued from it (RFC 6749 4.1.2)."""
        rows = self._run("SELECT family, client_id, subject, grant_json, expires_at, used, profile FROM codes "
                         "WHERE hash=?", (digest(code),))
        if not rows:
            return None
        family, client_id, subject, grant_json, expires_at, used, profile = rows[0]
        if used:
            self.revoke_family(str(family))
            return None
        return CodeRow(str(family), str(client_id), str(subject), str(grant_json), float(expires_at), str(profile))

    def use_code(self, code: str) -> bool:
        """Mark the code used; False when it was used already (two exchanges racing)."""
        with self._lock:
            cur = self._db.execute("UPDATE codes SET used=1 WHERE hash=? AND used=0", (digest(code),))
            return cur.rowcount == 1

    # -- tokens --
    def put_token(self, token: str, row: TokenRow) -> None:
        self._run("INSERT INTO tokens VALUES(?,?,?,?,?,?,?,?,?)",
                  (digest(token), row.kind, row.family, row.client_id, row.subject, " ".join(row.scopes),
                   row.resource, row.expires_at, row.profile))

    def token(self, token: str, kind: str) -> TokenRow | None:
        rows = self._run("SELECT kind, family, client_id, subject, scopes, resource, expires_at, profile FROM tokens "
                         "WHERE hash=? AND kind=?", (digest(token), kind))
        if not rows:
            return None
        kind, family, client_id, subject, scopes, resource, expires_at, profile = rows[0]
        return TokenRow(str(kind), str(family), str(client_id), str(subject), str(scopes).split(),
                        None if resource is None else str(resource), int(expires_at), str(profile))

    def drop_token(self, token: str) -> bool:
        with self._lock:
            return self._db.execute("DELETE FROM tokens WHERE hash=?", (digest(token),)).rowcount == 1

    def revoke_family(self, family: str) -> None:
        self._run("DELETE FROM tokens WHERE family=?", (family,))

    def revoke_subject(self, subject: str) -> None:
        """Every token of a person (their app password no longer works)."""
        self._run("DELETE FROM tokens WHERE subject=?", (subject,))

    def sweep(self, now: float) -> None:
        """Forget expired tokens and codes."""
        self._run("DELETE FROM tokens WHERE expires_at < ?", (now,))
        self._run("DELETE FROM codes WHERE expires_at < ?", (now - 3600,))

    # -- people --
    def put_person(self, person: Person) -> None:
        self._run("INSERT OR REPLACE INTO people VALUES(?,?,?,?,?)",
                  (person.subject, person.nc_url, person.login_name, person.sealed, time.time()))

    def person(self, subject: str) -> Person | None:
        rows = self._run("SELECT subject, nc_url, login_name, sealed FROM people WHERE subject=?", (subject,))
        if not rows:
            return None
        subject, nc_url, login_name, sealed = rows[0]
        return Person(str(subject), str(nc_url), str(login_name), bytes(sealed))

    def drop_person(self, subject: str) -> None:
        self._run("DELETE FROM people WHERE subject=?", (subject,))

    def close(self) -> None:
        with self._lock:
            self._db.close()
