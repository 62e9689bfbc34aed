"""The limits a person chose at sign-in (a profile: folders, read-only, tools), carried by their tokens.

The sign-in page stores them as a profile's `to_dict` form with the code and every token of that sign-in; the
access token publishes them in its claims (`profile`). Here they become the Profile in force for each request
of that token (`TokenLimits`, an ASGI middleware inside the SDK's bearer check), so tools/list lists only what
the token may use and a call of anything else is refused by the profile's own path (server/profile.py).
"""
from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token


def profile_of(limits: dict[str, Any]) -> Any:
    """The Profile of a sign-in's limits (its to_dict form: name, folders, readOnly, tools)."""
    from mcp_nextcloud.server.profile import Profile

    folders, tools = limits.get("folders"), limits.get("tools")
    return Profile(name=str(limits.get("name", "signed-in")), folders=tuple(folders) if folders else None,
                   read_only=bool(limits.get("readOnly")), tools=frozenset(tools) if tools else None)


def token_limits() -> dict[str, Any] | None:
    """The limits of the current request's bearer token, or None (no token, or none chosen)."""
    token = get_access_token()
    limits = (token.claims or {}).get("profile") if token is not None else None
    return limits if isinstance(limits, dict) and limits else None


class TokenLimits:
    """ASGI middleware (after the SDK's AuthContextMiddleware): the request runs under its token's profile."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        limits = token_limits() if scope.get("type") == "http" else None
        if limits is None:
            await self.app(scope, receive, send)
            return
        from mcp_nextcloud.server.profile import using

        with using(profile_of(limits)):
            await self.app(scope, receive, send)
