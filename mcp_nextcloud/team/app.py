"""The team server's ASGI app: MCP at /mcp behind OAuth, the authorization server, and the sign-in page.

Published (all from the SDK's mcp.server.auth routes, configured here):
- /.well-known/oauth-protected-resource/mcp: RFC 9728 metadata naming this server as the authorization server;
- /.well-known/oauth-authorization-server: RFC 8414 metadata (PKCE S256, registration, revocation);
- /register (RFC 7591), /authorize, /token (code and refresh grants), /revoke;
- /login/<id>: the Nextcloud sign-in page (login.py).
A request to /mcp without a valid token for this resource gets 401 with the metadata's address; a valid one
runs its tool calls as the token's person (people.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import AnyHttpUrl

from mcp_nextcloud.nextcloud.config import normalize_url
from mcp_nextcloud.team.login import SignIn
from mcp_nextcloud.team.people import PersonTools
from mcp_nextcloud.team.provider import TeamProvider
from mcp_nextcloud.team.store import Store
from mcp_nextcloud.team.vault import Vault

MCP_PATH = "/mcp"


@dataclass
class TeamServer:
    """The app and what it holds (closed by `close`)."""

    app: Any
    provider: TeamProvider
    people: PersonTools
    store: Store

    def close(self) -> None:
        self.people.close()
        self.store.close()


def public_url_problem(url: str) -> str | None:
    """Why --public-url cannot be used, or None."""
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        return f"--public-url {url[:80]!r} is not an http(s) address; give the address people reach, e.g. " \
               "https://mcp.example.org"
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        return "--public-url must be an origin without a path (https://mcp.example.org): the OAuth metadata lives " \
               "at its /.well-known/ addresses"
    if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return "--public-url must be https:// (put the server behind a TLS reverse proxy: docs/team-server.md); " \
               "plain http is only for 127.0.0.1"
    return None


def build_team_server(public_url: str, nextcloud_url: str, state: Path, *, interval: float,
                      max_body: int | None = None) -> TeamServer:
    """The team server for `public_url` (its origin), signing people in to `nextcloud_url`; state in `state`."""
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    public = public_url.rstrip("/")
    resource = public + MCP_PATH
    store = Store(state)
    vault = Vault(state)
    provider = TeamProvider(store, public, resource)
    people = PersonTools(state, store, vault, interval)
    people.keep_service()
    server = build_server(ServerContext(account=None, index=None))
    server.remote = people                    # every tools/call runs in the calling person's service
    auth = AuthSettings(issuer_url=AnyHttpUrl(public), resource_server_url=AnyHttpUrl(resource),
                        validate_token_resource=True,
                        client_registration_options=ClientRegistrationOptions(enabled=True),
                        revocation_options=RevocationOptions(enabled=True))
    origin = urlsplit(public)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[origin.netloc, "127.0.0.1:*", "localhost:*"],
        allowed_origins=[f"{origin.scheme}://{origin.netloc}", "http://127.0.0.1:*", "http://localhost:*"])
    sign_in = SignIn(provider, store, vault, normalize_url(nextcloud_url), warm=people.link)
    extra: dict[str, Any] = {} if max_body is None else {"max_request_body_size": max_body}
    app = server._lowlevel_server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, auth=auth, auth_server_provider=provider,
        token_verifier=_Verifier(provider), custom_starlette_routes=sign_in.routes(), **extra)
    return TeamServer(app, provider, people, store)


class _Verifier:
    """The bearer check of /mcp: the provider's own tokens (ProviderTokenVerifier's job, typed for mypy)."""

    def __init__(self, provider: TeamProvider) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> Any:
        return await self.provider.load_access_token(token)
