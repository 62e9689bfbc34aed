"""The bearer token that guards `serve --http`, and the ASGI guard that checks it.

Streamable HTTP on 127.0.0.1 is still reachable by every local process and,
through DNS rebinding, by web pages; the SDK's rebinding protection covers
the second, this token covers the first. The token is generated once, stored
next to the account config with mode 0600, and compared in constant time.
"""
from __future__ import annotations

import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any, Awaitable, Callable

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
    from indexer.store.filemodes import write_private

    token = secrets.token_urlsafe(32)
    write_private(path, (token + "\n").encode("ascii"))
    return token, True


class BearerGuard:
    """ASGI middleware: HTTP requests without `Authorization: Bearer <token>` get 401, nothing else runs."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self._expected = token.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":  # lifespan (and anything else) passes through
            await self.app(scope, receive, send)
            return
        given = b""
        for key, value in scope.get("headers") or []:
            if key.lower() == b"authorization":
                given = value
                break
        # RFC 7235: the scheme is case-insensitive ("bearer x" is "Bearer x"); the token is compared exactly.
        scheme, _, credentials = given.strip().partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._expected):
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": "unauthorized",
                           "message": "Missing or wrong bearer token. Send 'Authorization: Bearer <token>' with "
                                      "the token printed by `mcp-nextcloud serve --http` (stored in the config "
                                      "folder as http-token). Do not retry without it."},
                          separators=(",", ":")).encode()
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})
