"""The bearer token that guards `serve --http`, and the ASGI guard that checks it.

Streamable HTTP on 127.0.0.1 is still reachable by every local process and,
through DNS rebinding, by web pages; the SDK's rebinding protection covers
the second, this token covers the first. The token is generated once, stored
next to the account config with mode 0600, and compared in constant time.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any, Awaitable, Callable

from mcp_nextcloud.nextcloud.errors import instruction, sentence

TOKEN_FILE = "http-token"

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def token_path(config_path: Path) -> Path:
    """Where the token lives: beside the account config file."""
    return Path(config_path).parent / TOKEN_FILE


def repair_token_mode(config_path: Path) -> str | None:
    """Make an existing token file readable by its owner only; a note saying so when its mode was looser."""
    path = token_path(config_path)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        return None
    if not mode & 0o077:
        return None
    os.chmod(path, 0o600)
    return (f"the bearer token file {path} was readable by others (mode {mode:o}); its mode is now 600. "
            "If others could read it, delete the file and restart to get a new token")


def ensure_token(config_path: Path) -> tuple[str, bool]:
    """(token, created): read the stored token, or generate and store one (mode 0600)."""
    path = token_path(config_path)
    try:
        token = path.read_text(encoding="utf-8").strip()
        if token:
            return token, False
    except FileNotFoundError:
        pass
    from mcp_nextcloud.indexer.store.filemodes import write_private

    token = secrets.token_urlsafe(32)
    write_private(path, (token + "\n").encode("ascii"))
    return token, True


# -- tokens with their own profile (`mcp-nextcloud token add`) ------------------------------------------

TOKENS_FILE = "http-tokens.json"


def tokens_path(config_path: Path) -> Path:
    """Where the added tokens' digests and profiles live: beside the account config, mode 0600."""
    return Path(config_path).parent / TOKENS_FILE


def digest(token: str | bytes) -> str:
    """What is stored of a token: its SHA-256 (a 256-bit random token needs no slow hash)."""
    return hashlib.sha256(token if isinstance(token, bytes) else token.encode("ascii")).hexdigest()


def stored_tokens(config_path: Path) -> list[dict[str, Any]]:
    """The added tokens: [{"name", "sha256", "profile": {...}}] (no token itself is ever stored)."""
    try:
        data = json.loads(tokens_path(config_path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return [t for t in data.get("tokens", []) if isinstance(t, dict) and t.get("sha256") and t.get("name")]


def save_tokens(config_path: Path, tokens: list[dict[str, Any]]) -> None:
    from mcp_nextcloud.indexer.store.filemodes import write_private

    write_private(tokens_path(config_path), json.dumps({"tokens": tokens}, separators=(",", ":")).encode("utf-8"))


def add_token(config_path: Path, name: str, limits: dict[str, Any]) -> str:
    """A new token for a profile named `name`: stored as its digest, returned once to be printed."""
    tokens = [t for t in stored_tokens(config_path) if t["name"] != name]
    token = secrets.token_urlsafe(32)
    tokens.append({"name": name, "sha256": digest(token), "profile": limits})
    save_tokens(config_path, tokens)
    return token


def token_profiles(config_path: Path) -> dict[str, Any]:
    """{sha256: Profile} of the added tokens."""
    return {t["sha256"]: profile_of(t) for t in stored_tokens(config_path)}


def profile_of(token: dict[str, Any]) -> Any:
    """The Profile a stored token runs under."""
    from mcp_nextcloud.server.profile import build

    limits = token.get("profile") or {}
    return build(token["name"], folders=limits.get("folders"), read_only=bool(limits.get("readOnly")),
                 tools=limits.get("tools"))


# -- the guard ----------------------------------------------------------------------------------------

SESSION_HEADER = b"mcp-session-id"


class BearerGuard:
    """ASGI middleware: HTTP requests without a known `Authorization: Bearer <token>` get 401, nothing else runs.

    The serve token runs under the process's profile; an added token under its own, for the whole request
    (server/profile.py reads it). A session belongs to the token that opened it: another token naming it
    gets the SDK's answer for an unknown session (404), never the other profile.
    """

    def __init__(self, app: Any, token: str, profiles: dict[str, Any] | None = None) -> None:
        self.app = app
        self._expected = token.encode("ascii")
        self._profiles = dict(profiles or {})
        self._sessions: dict[bytes, str] = {}   # session id -> digest of the token that opened it

    def _who(self, credentials: bytes) -> tuple[str, Any] | None:
        """(digest, profile or None for the process's) of a known token, else None."""
        if hmac.compare_digest(credentials, self._expected):
            return "", None
        wanted = digest(credentials)
        for known, prof in self._profiles.items():
            if hmac.compare_digest(known, wanted):
                return known, prof
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":  # lifespan (and anything else) passes through
            await self.app(scope, receive, send)
            return
        headers = dict((k.lower(), v) for k, v in scope.get("headers") or [])
        # RFC 7235: the scheme is case-insensitive ("bearer x" is "Bearer x"); the token is compared exactly.
        scheme, _, credentials = headers.get(b"authorization", b"").strip().partition(b" ")
        who = self._who(credentials.strip()) if scheme.lower() == b"bearer" else None
        if who is None:
            await _answer(send, 401, refusal("unauthorized", "Missing or wrong bearer token",
                                             "Send 'Authorization: Bearer <token>' with the token printed by "
                                             "`mcp-nextcloud serve --http` (stored in the config folder as "
                                             "http-token) or by `mcp-nextcloud token add`"))
            return
        owner, prof = who
        session = headers.get(SESSION_HEADER)
        if session is not None and self._sessions.get(session, owner) != owner:
            await _answer(send, 404, refusal("session_not_found", "No such session for this token",
                                             "Start a new one (initialize) without mcp-session-id"))
            return

        async def remember(message: dict[str, Any]) -> None:
            if message.get("type") == "http.response.start":
                for key, value in message.get("headers") or []:
                    if key.lower() == SESSION_HEADER:
                        self._sessions.setdefault(value, owner)
            await send(message)

        if prof is None:
            await self.app(scope, receive, remember)
            return
        from mcp_nextcloud.server.profile import using

        with using(prof):
            await self.app(scope, receive, remember)


def refusal(code: str, cause: str, action: str, *, retry: bool = False) -> dict[str, Any]:
    """An HTTP-level refusal in the parts a tool failure has (code, cause, action, retry) and worded for the
    agent from them: the retry is a field, its words come from the error table's voice."""
    return {"code": code, "cause": sentence(cause), "action": sentence(action), "retry": retry,
            "message": instruction(cause, action, retry)}


async def _answer(send: Send, status: int, error: dict[str, Any]) -> None:
    body = json.dumps({"error": error, "message": error["message"]}, separators=(",", ":")).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
