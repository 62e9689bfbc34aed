"""/revoke (RFC 7009) for every client this server has: public ones (`none`) included.

The SDK's revocation handler requires a `client_secret` form field, so a public client (every client_id metadata
document, a registration with `token_endpoint_auth_method` `none`) was answered 400 and its token kept working,
and a `client_secret_basic` client (its secret in the Authorization header) too. Here the client is authenticated
by the SDK's own ClientAuthenticator (a secret when it has one, by the method it registered; none for a public
client), and the token, when it is this client's, ends with every token of its sign-in (provider.revoke_token).
"""
from __future__ import annotations

from typing import Any

from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.provider import AccessToken, RefreshToken
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from mcp_nextcloud.team.provider import TeamProvider

_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


class Revocation:
    """The /revoke endpoint of `provider` (an ASGI app: `asgi()`)."""

    def __init__(self, provider: TeamProvider) -> None:
        self.provider = provider
        self.clients = ClientAuthenticator(provider)

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.clients.authenticate_request(request)
        except AuthenticationError as err:    # RFC 7009 2.2.1 -> RFC 6749 5.2: a client that fails is 401
            return JSONResponse({"error": "invalid_client", "error_description": err.message}, status_code=401,
                                headers=_NO_STORE)
        form = await request.form()
        token = form.get("token")
        if not isinstance(token, str) or not token:
            return JSONResponse({"error": "invalid_request", "error_description": "token: send the access or "
                                 "refresh token to revoke in the form field 'token'"}, status_code=400,
                                headers=_NO_STORE)
        found = await self._find(client, token, refresh_first=form.get("token_type_hint") == "refresh_token")
        if found is not None and found.client_id == client.client_id:    # another client's token stays
            await self.provider.revoke_token(found)
        return Response(status_code=200, headers=_NO_STORE)   # an unknown token too (RFC 7009 2.2)

    async def _find(self, client: Any, token: str, *, refresh_first: bool) -> AccessToken | RefreshToken | None:
        """The token as an access token or a refresh token of `client` (an unknown hint is ignored: RFC 7009)."""
        async def access() -> AccessToken | RefreshToken | None:
            return await self.provider.load_access_token(token)

        async def refresh() -> AccessToken | RefreshToken | None:
            return await self.provider.load_refresh_token(client, token)

        for load in ((refresh, access) if refresh_first else (access, refresh)):
            found = await load()
            if found is not None:
                return found
        return None

    def asgi(self) -> Any:
        """As the SDK mounts its own: CORS outermost (browser-based clients), the SDK's request body limit."""
        from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, RequestBodyLimitMiddleware
        from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
        from starlette.middleware.cors import CORSMiddleware
        from starlette.routing import request_response

        inner = RequestBodyLimitMiddleware(request_response(self.handle), DEFAULT_MAX_REQUEST_BODY_SIZE)
        return CORSMiddleware(inner, allow_origins="*", allow_methods=["POST", "OPTIONS"],
                              allow_headers=[MCP_PROTOCOL_VERSION_HEADER])
