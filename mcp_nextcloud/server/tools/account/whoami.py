"""nextcloud_whoami: who the agent acts as, cheaply (cached for a minute).

The first thing a careful agent asks; answering it must not cost a second of
round trips each time, so the facts are cached per process for WHOAMI_TTL_S.
"""
from __future__ import annotations

import datetime as dt
from typing import Annotated, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations

from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import WhoamiOut, envelope

WHOAMI_TTL_S = 60.0
APPS = ("calendar", "contacts", "deck", "talk", "mail")


def whoami_payload(ctx: ServerContext) -> dict[str, Any]:
    """user id, display name, email, server version and which of our apps exist on this server."""
    client = ctx.client()
    user = client.ocs.current_user()
    try:
        version = client.ocs.server_version()
    except Exception:  # the version is a nicety; never fail whoami for it
        version = None
    available = client.ocs.apps_available() or {}
    apps = {name: bool(available.get(name, False)) for name in APPS}
    missing = [n for n, ok in apps.items() if not ok]
    payload: dict[str, Any] = {
        "userId": user.id,
        "displayName": getattr(user, "display_name", None),
        "email": getattr(user, "email", None) or None,
        "serverVersion": str(version) if version else None,
        "apps": apps,
        "timeZone": _zone_or_none(getattr(user, "timezone", None)),
    }
    if missing:
        payload["hint"] = "Not available here: " + ", ".join(missing) + ". Do not call tools for those apps."
    return payload


def _zone_or_none(name: str | None) -> str | None:
    """The IANA zone the account set in Nextcloud (its personal settings, or the browser at login); None when
    unset or not a zone this machine knows."""
    if not name:
        return None
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None
    return name


def clock(zone: str | None, now: dt.datetime | None = None) -> dict[str, Any]:
    """What day and time it is: UTC always, and the account's local time and weekday when its zone is known
    (else the weekday in UTC, and a note that the zone is unknown)."""
    utc = (now or dt.datetime.now(dt.timezone.utc)).astimezone(dt.timezone.utc).replace(microsecond=0)
    out: dict[str, Any] = {"now": utc.strftime("%Y-%m-%dT%H:%M:%SZ")}
    if zone:
        local = utc.astimezone(ZoneInfo(zone))
        out.update(localTime=f"{local.replace(tzinfo=None).isoformat(timespec='minutes')} {zone}",
                   weekday=local.strftime("%A"))
    else:
        out["weekday"] = utc.strftime("%A") + " (UTC)"
        out["timeNote"] = ("The account's time zone is unknown (none is set in Nextcloud): ask the user before "
                           "reading a local time such as 'Friday 9:00', or give times with Z (UTC).")
    return out


def register(server: MCPServer, ctx: ServerContext) -> None:
    """Add nextcloud_whoami to `server`."""

    # openWorldHint is left out where it would say false (as for every tool): see server/tools/files/tools.py.
    @server.tool(annotations=ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True))
    def nextcloud_whoami() -> Annotated[CallToolResult, WhoamiOut]:
        """Who you act as, which apps this server has, and the current time in the account's time zone."""
        from mcp_nextcloud.server import profile

        payload = dict(ctx.cached("whoami", WHOAMI_TTL_S, lambda: whoami_payload(ctx)))
        payload.update(clock(payload.get("timeZone")))   # per call: the cache must not stop the clock
        note = payload.pop("timeNote", None)
        if note:
            payload["hint"] = " ".join(filter(None, [payload.get("hint"), note]))
        in_force = profile.current()
        if not in_force.unrestricted:   # per request (a bearer token's own): never cached with the account
            tools = {t.name: bool(getattr(t.annotations, "read_only_hint", False))
                     for t in server._tool_manager.list_tools()}
            payload["profile"] = {**in_force.describe(), "offered": in_force.offered(tools)}
            note = in_force.summary(tools) + (" Files outside its folders are answered as missing."
                                              if in_force.folders is not None else "")
            payload["hint"] = " ".join(filter(None, [payload.get("hint"), note]))
        return envelope(payload)
