"""The OAuth 2.1 authorization server of the team server: the SDK's provider protocol over store.py.

The SDK's routes (mcp.server.auth) check the requests (client authentication, redirect URI, PKCE S256, code
expiry); this provider keeps clients, codes and tokens, binds every token to this server's resource (RFC 8707:
a request naming another resource is refused) and to the person who signed in (`subject`), and sends
/authorize to the Nextcloud sign-in page (login.py) instead of deciding there.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from mcp.server.auth.provider import (AccessToken, AuthorizationCode, AuthorizationParams, AuthorizeError,
                                      RefreshToken, TokenError, construct_redirect_uri)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from mcp_nextcloud.team.cimd import ClientDocumentError, ClientDocuments, is_document_id
from mcp_nextcloud.team.store import CodeRow, Store, TokenRow, new_secret

ACCESS_TTL_S = 3600
REFRESH_TTL_S = 30 * 24 * 3600
CODE_TTL_S = 300
LOGIN_TTL_S = 900         # a sign-in page works this long after /authorize


@dataclass
class PendingLogin:
    """An /authorize waiting for its person to sign in to Nextcloud (kept in memory: the poll token is a secret)."""

    client_id: str
    client_name: str
    params: AuthorizationParams
    created: float = field(default_factory=time.time)
    flow: Any = None                   # nextcloud.login.LoginFlow once started
    profile: str = "{}"                # the limits the person chose on the sign-in page (JSON)


class TeamProvider:
    """OAuthAuthorizationServerProvider (mcp.server.auth.provider) for one resource."""

    def __init__(self, store: Store, public_url: str, resource: str, documents: ClientDocuments) -> None:
        self.store, self.public_url, self.resource = store, public_url.rstrip("/"), resource
        self.documents = documents
        self.pending: dict[str, PendingLogin] = {}
        self._lock = threading.Lock()

    # -- clients: registered (RFC 7591) or described by a client_id document (cimd.py) --
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        if is_document_id(client_id):
            try:
                return await self.documents.client(client_id)
            except ClientDocumentError:
                return None       # /authorize said why already (app.py); /token answers invalid_client
        info = self.store.client(client_id)
        return OAuthClientInformationFull.model_validate_json(info) if info else None

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None   # the SDK's registration handler sets it
        self.store.put_client(client_info.client_id, client_info.model_dump_json())

    # -- authorization --
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        if params.resource is not None and params.resource.rstrip("/") != self.resource:
            raise AuthorizeError("invalid_target", f"this server issues tokens for {self.resource} only")
        login_id = secrets.token_urlsafe(32)
        self.store.sweep(time.time())          # expired tokens and old codes go as new sign-ins come
        with self._lock:
            now = time.time()
            for key in [k for k, p in self.pending.items() if now - p.created > LOGIN_TTL_S]:
                del self.pending[key]
            self.pending[login_id] = PendingLogin(str(client.client_id), client.client_name or str(client.client_id),
                                                  params)
        return f"{self.public_url}/login/{login_id}"

    def login(self, login_id: str) -> PendingLogin | None:
        with self._lock:
            pending = self.pending.get(login_id)
            if pending is not None and time.time() - pending.created > LOGIN_TTL_S:
                del self.pending[login_id]
                return None
            return pending

    def finish(self, login_id: str, subject: str) -> str | None:
        """The client's redirect URI with a new code for `subject` (the sign-in page is used up)."""
        with self._lock:
            pending = self.pending.pop(login_id, None)
        if pending is None:
            return None
        code = new_secret()
        self.store.put_code(code, CodeRow(family=new_secret(), client_id=pending.client_id, subject=subject,
                                          grant_json=pending.params.model_dump_json(),
                                          expires_at=time.time() + CODE_TTL_S, profile=pending.profile))
        return construct_redirect_uri(str(pending.params.redirect_uri), code=code, state=pending.params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull,
                                      authorization_code: str) -> AuthorizationCode | None:
        row = self.store.code(authorization_code)
        if row is None or row.client_id != client.client_id:
            return None
        params = AuthorizationParams.model_validate_json(row.grant_json)
        return AuthorizationCode(code=authorization_code, scopes=params.scopes or [], expires_at=row.expires_at,
                                 client_id=row.client_id, code_challenge=params.code_challenge,
                                 redirect_uri=params.redirect_uri,
                                 redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                                 resource=self.resource, subject=row.subject)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull,
                                          authorization_code: AuthorizationCode) -> OAuthToken:
        row = self.store.code(authorization_code.code)
        if row is None or not self.store.use_code(authorization_code.code):
            raise TokenError("invalid_grant", "this authorization code was used already")
        return self._issue(row.family, str(client.client_id), row.subject, authorization_code.scopes, row.profile)

    # -- tokens --
    def _issue(self, family: str, client_id: str, subject: str, scopes: list[str], profile: str) -> OAuthToken:
        access, refresh, now = new_secret(), new_secret(), int(time.time())
        self.store.put_token(access, TokenRow("access", family, client_id, subject, scopes, self.resource,
                                              now + ACCESS_TTL_S, profile))
        self.store.put_token(refresh, TokenRow("refresh", family, client_id, subject, scopes, self.resource,
                                               now + REFRESH_TTL_S, profile))
        return OAuthToken(access_token=access, token_type="Bearer", expires_in=ACCESS_TTL_S,
                          scope=" ".join(scopes) or None, refresh_token=refresh)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> RefreshToken | None:
        row = self.store.token(refresh_token, "refresh")
        if row is None or row.client_id != client.client_id or row.expires_at < time.time():
            return None
        return RefreshToken(token=refresh_token, client_id=row.client_id, scopes=row.scopes,
                            expires_at=row.expires_at, resource=row.resource, subject=row.subject)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: RefreshToken,
                                     scopes: list[str]) -> OAuthToken:
        row = self.store.token(refresh_token.token, "refresh")
        if row is None or not self.store.drop_token(refresh_token.token):   # rotated: each works once
            raise TokenError("invalid_grant", "this refresh token was used or revoked")
        return self._issue(row.family, str(client.client_id), row.subject, scopes or refresh_token.scopes,
                           row.profile)

    async def load_access_token(self, token: str) -> AccessToken | None:
        row = self.store.token(token, "access")
        if row is None or row.expires_at < time.time() or self.store.person(row.subject) is None:
            return None
        return AccessToken(token=token, client_id=row.client_id, scopes=row.scopes, expires_at=row.expires_at,
                           resource=row.resource, subject=row.subject,
                           claims={"iss": self.public_url, "profile": json.loads(row.profile)})

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        for kind in ("access", "refresh"):
            row = self.store.token(token.token, kind)
            if row is not None:
                self.store.revoke_family(row.family)

    async def exchange_identity_assertion(self, client: OAuthClientInformationFull, params: Any) -> OAuthToken:
        raise TokenError("unsupported_grant_type", "this server signs people in through Nextcloud only")
