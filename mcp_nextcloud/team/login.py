"""The sign-in page /authorize sends a person to: Nextcloud's Login Flow v2, then back to the client with a code.

GET /login/<id> starts the flow against the team's Nextcloud (once), shows which client asks and a link to
Nextcloud's own login page, and polls Nextcloud once per visit (the page reloads itself every 2 s). When the
person has granted access there, the app password is checked (who is it?), sealed and stored, and the page
redirects to the client's redirect URI with a one-time code bound to that person.

A person has one app password here: a new sign-in's replaces the one they had, and the replaced one is deleted
in Nextcloud (DELETE core/apppassword, authenticated by it), so Devices & sessions does not fill up with
passwords nobody uses. Its name there says what it is for and since when (app_password_name).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlsplit

import anyio
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.team.cimd import describe
from mcp_nextcloud.team.provider import PendingLogin, TeamProvider
from mcp_nextcloud.team.store import Person, Store
from mcp_nextcloud.team.vault import Vault

RELOAD_S = 2
_HEADERS = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer", "X-Frame-Options": "DENY",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'"}


@dataclass
class SignIn:
    """What the sign-in page needs: the provider (pending logins, codes), the state, the vault, the Nextcloud."""

    provider: TeamProvider
    store: Store
    vault: Vault
    nextcloud_url: str
    warm: Callable[[str], Any] | None = None     # called with a person who just signed in (starts their service)
    tools: dict[str, bool] = field(default_factory=dict)   # the tools a sign-in may allow: name -> read-only

    def routes(self) -> list[Route]:
        return [Route("/login/{login_id}", self.page, methods=["GET"])]

    async def page(self, request: Request) -> Response:
        pending = self.provider.login(request.path_params["login_id"])
        if pending is None:
            return _page("Sign-in link expired", "<p>This sign-in link has expired or was used already. Start "
                         "again from your MCP client.</p>", status=404)
        try:
            if pending.flow is None:
                problem = _choose(pending, request.query_params, self.tools) if "go" in request.query_params \
                    else ""
                if problem is not None:
                    return _consent(pending, request.url.path, problem, self.tools)
                from functools import partial

                from mcp_nextcloud.nextcloud.login import start_login

                name = app_password_name(pending.client_name, self.provider.public_url)
                pending.flow = await anyio.to_thread.run_sync(partial(start_login, self.nextcloud_url, name=name))
            account = await anyio.to_thread.run_sync(self._poll_once, pending.flow)
            if account is None:
                return _waiting(pending, request.url.path)
            subject = await anyio.to_thread.run_sync(self._keep, account)
            if self.warm is not None:     # their service starts while the client exchanges the code
                await anyio.to_thread.run_sync(self.warm, subject)
        except NextcloudError as err:
            return _page("Nextcloud did not answer", f"<p>{html.escape(err.cause or str(err))}. "
                         f"{html.escape(err.action or '')} Reload this page to try again.</p>", status=502)
        target = self.provider.finish(request.path_params["login_id"], subject)
        if target is None:
            return _page("Sign-in link used", "<p>This sign-in was completed already.</p>", status=404)
        return RedirectResponse(target, status_code=302, headers=_HEADERS)

    def _poll_once(self, flow: Any) -> Account | None:
        """The granted account, or None while the person has not granted access yet."""
        from mcp_nextcloud.nextcloud.login import poll_login

        try:
            return poll_login(flow, timeout=0, interval=0.05, server_url=self.nextcloud_url)
        except NextcloudError as err:
            if err.code is ErrorCode.LOGIN and err.status is None:
                return None
            raise

    def _keep(self, account: Account) -> str:
        """Check who the app password belongs to, store it sealed; that person's user id."""
        from mcp_nextcloud.nextcloud.client import NextcloudClient

        with NextcloudClient(account, retries=1, total_timeout=30.0) as client:
            user = client.ocs.current_user()
        subject = user.id or account.user
        before = self.store.person(subject)
        self.store.put_person(Person(subject, self.nextcloud_url, account.user, self.vault.seal(account.app_password)))
        replaced = self.vault.open(before.sealed) if before is not None else None
        if before is not None and replaced and replaced != account.app_password:
            _delete_app_password(Account(url=before.nc_url, user=before.login_name, app_password=replaced))
        return subject


def app_password_name(client_name: str, public_url: str) -> str:
    """The app password's name in Nextcloud's Devices & sessions: which client, through which server, since when
    (Nextcloud names it after the User-Agent that starts the login flow: printable ASCII, kept short)."""
    import time

    client = "".join(c for c in client_name if " " <= c <= "~")[:60].strip() or "an MCP client"
    host = urlsplit(public_url).netloc
    return f"{client} via mcp-nextcloud team server {host}, signed in {time.strftime('%Y-%m-%d', time.gmtime())}"


def _delete_app_password(account: Account) -> None:
    """Delete a replaced app password in Nextcloud; one that is gone already (deleted there, 401) or a Nextcloud
    that does not answer leaves nothing to do here: the password is no longer stored, so never used again."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient

    try:
        with NextcloudClient(account, retries=0, total_timeout=10.0) as client:
            client.ocs.delete_app_password()
    except NextcloudError:
        pass


def _choose(pending: PendingLogin, query: Any, tools: dict[str, bool]) -> str | None:
    """Keep the limits the person chose (a profile, server/profile.py); the problem with them, or None.

    Tools: every box ticked means no tool list (the profile's own rule then applies: a folder choice offers the
    file tools); fewer means exactly those."""
    import json

    from mcp_nextcloud.server.profile import build

    folders = [f.strip() for f in query.get("folders", "").replace(",", "\n").splitlines() if f.strip()]
    ticked = query.getlist("tool") if tools else []
    if tools and not ticked:
        return "Choose at least one tool (or all of them)"
    allow = None if set(ticked) >= set(tools) else ticked
    try:
        chosen = build("signed-in", folders=folders or None, read_only=query.get("read_only") == "on", tools=allow,
                       known_tools=tools or None)
    except ValueError as exc:
        return str(exc).replace("--folder", "folder").replace(" in --tools", "")
    pending.profile = json.dumps(chosen.to_dict())
    return None


def _consent(pending: PendingLogin, path: str, problem: str, tools: dict[str, bool]) -> Response:
    """The first page: who asks, where it returns, and what it may do (the whole account, or some folders, or
    read-only, and which tools)."""
    error = f"<p><b>{html.escape(problem)}</b></p>" if problem else ""
    boxes = "".join(f'<label><input type="checkbox" name="tool" value="{html.escape(name)}" checked> '
                    f'{html.escape(name)}{"" if read_only else " (changes things)"}</label><br>'
                    for name, read_only in sorted(tools.items()))
    choose_tools = (f"<fieldset><legend>Tools it may use (with folders chosen and every tool ticked: the file tools "
                    f"only)</legend>{boxes}</fieldset>") if tools else ""
    body = (f"{error}{_asker(pending)}"
            f"<form method=\"get\" action=\"{html.escape(path)}\"><input type=\"hidden\" name=\"go\" value=\"1\">"
            "<p><label><input type=\"checkbox\" name=\"read_only\"> Read only: it may search and read, never "
            "change anything</label></p><p><label>Only these folders (one per line; empty: all of them)<br>"
            "<textarea name=\"folders\" rows=\"3\" cols=\"40\"></textarea></label></p>"
            f"{choose_tools}<p><button type=\"submit\">Continue to Nextcloud</button></p></form>")
    return _page("Sign in with Nextcloud", body)


def _asker(pending: PendingLogin) -> str:
    """Who asks (the client's name, and for a client_id document the host that published it) and where the
    person is sent back after signing in."""
    redirect_host = urlsplit(str(pending.params.redirect_uri)).netloc or str(pending.params.redirect_uri)
    source = describe(pending.client_id)
    published = f" (described by <b>{html.escape(source)}</b>)" if source else ""
    return (f"<p><b>{html.escape(pending.client_name)}</b>{published} asks to act as you in your Nextcloud. After "
            f"you sign in, you are sent back to <b>{html.escape(redirect_host)}</b>.</p>")


def _waiting(pending: PendingLogin, path: str) -> Response:
    body = (f"{_asker(pending)}<p><a id=\"nextcloud-login\" href=\"{html.escape(pending.flow.login_url)}\" "
            "target=\"_blank\" rel=\"noopener\">Sign in to Nextcloud and grant access</a></p>"
            "<p>This page continues by itself once access is granted. Not you, or not a client you started? "
            "Close this page.</p>")
    return _page("Sign in with Nextcloud", body, refresh=path)


def _page(title: str, body: str, *, status: int = 200, refresh: str | None = None) -> Response:
    meta = f'<meta http-equiv="refresh" content="{RELOAD_S};url={html.escape(refresh)}">' if refresh else ""
    text = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>{meta}</head>"
            f"<body><h1>{html.escape(title)}</h1>{body}</body></html>")
    return HTMLResponse(text, status_code=status, headers=_HEADERS)
