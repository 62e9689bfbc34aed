"""`serve` without an account: the MCP handshake completes and the host hears how to log in.

Until an account is configured the server lists one tool, `nextcloud_login`: it starts Nextcloud's Login Flow v2
and answers with the URL the person opens (also asked through URL elicitation where the host supports it); the
approval is awaited in the background and stored as `mcp-nextcloud login` stores it. Every request first looks
for an account (stored by that tool, by `mcp-nextcloud login` in a terminal, or given by the environment): once
there is one, the full server is opened and answers from then on, without a restart, and the host is told that
the tool list changed.
"""
from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Callable

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field
from typing_extensions import Annotated

from mcp_nextcloud.environment import environ
from mcp_nextcloud.nextcloud.config import Account, load_account, no_account, normalize_url
from mcp_nextcloud.nextcloud.errors import Category, ErrorCode, NextcloudError
from mcp_nextcloud.nextcloud.login import NO_BROWSER, LoginFlow, poll_login, start_login, store_login
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud

LOGIN_TOOL = "nextcloud_login"
APPROVAL_WAIT_S = 600.0      # how long a started login waits for the person's approval

_DESCRIPTION = (
    "Connect this server to the user's Nextcloud (no account is configured yet). Starts Nextcloud's login in the "
    "browser and returns loginUrl: give it to the user to open and approve (on any device). Once approved, the "
    "Nextcloud tools appear in this server; no restart. Ask the user for their Nextcloud address first.")


def instructions(problem: NextcloudError) -> str:
    """The server instructions of a serve without an account: what is missing and the two ways on."""
    return (f"This server is not connected to a Nextcloud account yet ({problem.cause}). Ask the user for their "
            f"Nextcloud address (e.g. https://cloud.example.com), call {LOGIN_TOOL} with it and give the user the "
            "loginUrl it returns to open and approve; or tell the user to run `mcp-nextcloud login URL` in a "
            "terminal. The Nextcloud tools are listed here as soon as the account is stored; no restart is needed.")


class AccountGate(MCPServer):
    """The server a serve without an account speaks; it hands every request to the full server once there is one.

    `open_full(account)` opens the full server (or returns the problem that stops it, as text)."""

    def __init__(self, open_full: Callable[[Account], Any], problem: NextcloudError, *, mail: bool = False) -> None:
        super().__init__(name="mcp-mail" if mail else "mcp-nextcloud", instructions=instructions(problem))
        self.notification_options = NotificationOptions(tools_changed=True, resources_changed=True)
        self._open_full = open_full
        self.full: Any = None
        self._opening = threading.Lock()
        self._flow: tuple[LoginFlow, float] | None = None    # the pending login and when it started
        self._stored: str | None = None                       # who the background login stored, once it did
        self.add_tool(self._login, name=LOGIN_TOOL, description=_DESCRIPTION,
                      annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True,
                                                  open_world_hint=True))

    # --- the switch to the full server ------------------------------------------------------------------------

    def _find_full(self) -> Any:
        """The full server once an account is configured (opened once), else None; a problem opening it raised."""
        if self.full is not None:
            return self.full
        with self._opening:
            if self.full is None:
                try:
                    account = load_account()
                except NextcloudError:
                    account = None
                if account is None:
                    return None
                full = self._open_full(account)
                if isinstance(full, str):
                    raise ToolFailure(f"The account is configured, but the server cannot start its tools: {full}",
                                      "Tell the user; restart this MCP server once it is fixed",
                                      category=Category.FAULT, status=ToolStatus.SERVE_FAILED)
                self.full = full
        return self.full

    async def _ready(self) -> Any:
        return self.full if self.full is not None else await anyio.to_thread.run_sync(self._find_full)

    async def list_tools(self) -> list[Any]:
        full = await self._ready()
        return await (full.list_tools() if full is not None else super().list_tools())

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        try:
            full = await self._ready()
        except ToolFailure as failure:
            return failure.result()
        if full is not None:
            if name == LOGIN_TOOL:
                return _answer({"ok": True, "loggedIn": True,
                                "hint": "An account is configured: the Nextcloud tools are listed (tools/list)."})
            return await full.call_tool(name, arguments, context)
        if name != LOGIN_TOOL:
            problem = no_account()
            return ToolFailure(f"{name} cannot run: {problem.cause}",
                               f"Call {LOGIN_TOOL} with the user's Nextcloud address, or tell the user to run "
                               "`mcp-nextcloud login URL` in a terminal", category=Category.MISUSE,
                               status=ErrorCode.NO_CREDENTIALS).result()
        try:
            return await super().call_tool(name, arguments, context)
        except ToolFailure as failure:
            return failure.result()

    async def list_resources(self) -> list[Any]:
        full = await self._ready()
        return await (full.list_resources() if full is not None else super().list_resources())

    async def list_resource_templates(self) -> list[Any]:
        full = await self._ready()
        return await (full.list_resource_templates() if full is not None else super().list_resource_templates())

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        full = await self._ready()
        return await (full.read_resource(uri, context) if full is not None else super().read_resource(uri, context))

    # --- the login tool ---------------------------------------------------------------------------------------

    async def _login(self, ctx: Context,
                     url: Annotated[str | None, Field(
                         description="The user's Nextcloud address, as opened in a browser "
                                     "(e.g. https://cloud.example.com); default: NEXTCLOUD_URL", max_length=2000)]
                     = None) -> CallToolResult:
        """Start (or repeat) the login flow; answer with its URL and wait for the approval in the background."""
        address = (url or environ().get("NEXTCLOUD_URL") or "").strip()
        if not address:
            raise ToolFailure("No Nextcloud address was given and NEXTCLOUD_URL is not set",
                              "Ask the user for their Nextcloud address (what they open in a browser) and call "
                              f"{LOGIN_TOOL} with url", category=Category.MISUSE, status=ToolStatus.BAD_URL)
        pending = self._flow
        if pending is None or time.monotonic() - pending[1] > APPROVAL_WAIT_S:
            try:
                flow = await anyio.to_thread.run_sync(start_login, address)
            except NextcloudError as err:
                raise from_nextcloud(err) from err
            pending = self._flow = (flow, time.monotonic())
            threading.Thread(target=self._await_approval, args=(flow, normalize_url(address), ctx,
                                                                anyio.lowlevel.current_token()),
                             daemon=True, name="nextcloud-login").start()
        flow = pending[0]
        elicited = await _elicit(ctx, flow.login_url)
        return _answer({"ok": True, "loginUrl": flow.login_url, "elicited": elicited,
                        "waitSeconds": int(APPROVAL_WAIT_S - (time.monotonic() - pending[1])),
                        "hint": "Give the user loginUrl to open and approve (any device that reaches their "
                                "Nextcloud). The Nextcloud tools appear in tools/list once it is approved; then "
                                "call them. " + NO_BROWSER.replace("the URL", "that URL")})

    def _await_approval(self, flow: LoginFlow, address: str, ctx: Context, token: Any) -> None:
        """The background half of the login: poll, store the account, open the full server, tell the host."""
        try:
            account = poll_login(flow, timeout=APPROVAL_WAIT_S, server_url=address)
            account, user, _path = store_login(account)
        except NextcloudError:
            self._flow = None          # timed out or refused: the next call starts a new login
            return
        self._stored = user.id
        try:
            self._find_full()
            anyio.from_thread.run(ctx.request_context.session.send_tool_list_changed, token=token)
        except Exception:  # the session ended, or the server could not open: the next request says it
            return


async def _elicit(ctx: Context, url: str) -> str | None:
    """Ask the host to open the login URL (URL-mode elicitation) when it says it can: its answer, else None."""
    session = ctx.request_context.session
    caps = session.client_capabilities
    if caps is None or caps.elicitation is None or caps.elicitation.url is None:
        return None
    try:
        result = await ctx.elicit_url("Log in to your Nextcloud and approve access for mcp-nextcloud.", url,
                                      uuid.uuid4().hex)
    except Exception:   # a host that declared the capability but failed it: the URL is in the answer anyway
        return None
    return str(result.action)


def _answer(data: dict[str, Any]) -> CallToolResult:
    import json

    from mcp.types import TextContent

    return CallToolResult(content=[TextContent(type="text", text=json.dumps(data, separators=(",", ":")))],
                          structured_content=data)
