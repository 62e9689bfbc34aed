"""The team server's ASGI app: MCP at /mcp behind OAuth, the authorization server, and the sign-in page.

Published (all from the SDK's mcp.server.auth routes, configured here):
- /.well-known/oauth-protected-resource/mcp: RFC 9728 metadata naming this server as the authorization server;
- /.well-known/oauth-authorization-server: RFC 8414 metadata (PKCE S256, registration, revocation, client_id
  metadata documents);
- /register (RFC 7591), /authorize (a client_id URL's document is fetched and checked first: cimd.py),
  /token (code and refresh grants), /revoke (our handler, revoke.py: public clients revoke without a secret);
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
from starlette.middleware import Middleware

from mcp_nextcloud.nextcloud.config import normalize_url
from mcp_nextcloud.team.cimd import ClientDocumentError, ClientDocuments, is_document_id
from mcp_nextcloud.team.limits import TokenLimits
from mcp_nextcloud.team.login import SignIn
from mcp_nextcloud.team.people import PersonTools
from mcp_nextcloud.team.provider import TeamProvider
from mcp_nextcloud.team.revoke import Revocation
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
    loopback = urlsplit(public).hostname in ("127.0.0.1", "localhost", "::1")
    provider = TeamProvider(store, public, resource, ClientDocuments(allow_loopback=loopback))
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
    tools = {t.name: bool(getattr(t.annotations, "read_only_hint", False)) for t in server._tool_manager.list_tools()}
    sign_in = SignIn(provider, store, vault, normalize_url(nextcloud_url), warm=people.link, tools=tools)
    extra: dict[str, Any] = {} if max_body is None else {"max_request_body_size": max_body}
    app = server._lowlevel_server.streamable_http_app(
        streamable_http_path=MCP_PATH, transport_security=security, auth=auth, auth_server_provider=provider,
        token_verifier=_Verifier(provider), custom_starlette_routes=sign_in.routes(), **extra)
    _with_documents(app, provider, auth)
    app.user_middleware.append(Middleware(TokenLimits))   # innermost: after the SDK's bearer check
    return TeamServer(app, provider, people, store)


def _with_documents(app: Any, provider: TeamProvider, auth: AuthSettings) -> None:
    """The SDK's auth routes, told about client_id metadata documents: the RFC 8414 metadata says they are
    supported (and public clients, `none`, at /token and /revoke), /authorize fetches and checks a client_id URL's
    document before the SDK's handler runs, answering a bad one with its cause (the SDK's answer would be 'not
    found'), and /revoke is ours (revoke.py: the SDK's requires a client secret)."""
    from mcp.server.auth.handlers.metadata import MetadataHandler
    from mcp.server.auth.routes import build_metadata, cors_middleware

    metadata = build_metadata(auth.issuer_url, None, auth.client_registration_options or ClientRegistrationOptions(),
                              auth.revocation_options or RevocationOptions())
    metadata.client_id_metadata_document_supported = True
    metadata.token_endpoint_auth_methods_supported = [*(metadata.token_endpoint_auth_methods_supported or []),
                                                      "none"]
    metadata.revocation_endpoint_auth_methods_supported = [
        *(metadata.revocation_endpoint_auth_methods_supported or []), "none"]
    for route in app.router.routes:
        if getattr(route, "path", None) == "/.well-known/oauth-authorization-server":
            route.app = cors_middleware(MetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        elif getattr(route, "path", None) == "/authorize":
            route.app = _AuthorizeGate(route.app, provider.documents)
        elif getattr(route, "path", None) == "/revoke":
            route.app = Revocation(provider).asgi()


class _AuthorizeGate:
    """ASGI wrapper of /authorize, before the SDK's handler: a client_id URL whose document cannot be used is
    refused here, with why (400, OAuth error JSON, never a redirect: the redirect URIs are the document's, not
    trusted); a usable one is kept, and the SDK's handler finds it through the provider's get_client. A request
    without code_challenge_method is passed on as the `plain` it means (RFC 7636 4.3), so the SDK refuses it with
    its own answer (S256 only) where it used to take it for S256."""

    def __init__(self, app: Any, documents: ClientDocuments) -> None:
        self.app, self.documents = app, documents

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        from urllib.parse import parse_qs

        from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
        from starlette.responses import JSONResponse

        post = scope.get("method") == "POST"
        body, more = b"", post
        while more and len(body) <= DEFAULT_MAX_REQUEST_BODY_SIZE:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        query = parse_qs(body.decode("latin-1") if post else scope.get("query_string", b"").decode("latin-1"))
        client_id = (query.get("client_id") or [""])[0]
        if is_document_id(client_id):
            try:
                await self.documents.client(client_id)
            except ClientDocumentError as err:
                await JSONResponse({"error": "invalid_client", "error_description": f"{err}. Fix the document at "
                                    "the client_id URL (or register the client at /register) and try again."},
                                   status_code=400, headers={"Cache-Control": "no-store"})(scope, receive, send)
                return
        if "code_challenge_method" not in query:
            if post and not more:
                body += b"&code_challenge_method=plain"
            elif not post:
                scope = {**scope, "query_string": scope.get("query_string", b"") + b"&code_challenge_method=plain"}
        replayed = [{"type": "http.request", "body": body, "more_body": more}]

        async def replay() -> Any:
            return replayed.pop() if replayed else await receive()

        await self.app(scope, replay if post else receive, send)


class _Verifier:
    """The bearer check of /mcp: the provider's own tokens (ProviderTokenVerifier's job, typed for mypy)."""

    def __init__(self, provider: TeamProvider) -> None:
        self.provider = provider

    async def verify_token(self, token: str) -> Any:
        return await self.provider.load_access_token(token)
