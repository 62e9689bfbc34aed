"""mcp-mail where Mail cannot work: instructions, tools and resources agree, and say why (issue 22, 8d).

Against the emulator: without the Mail app, and with an app password the server refuses (the emulator
has no brute-force record to spoil). With Mail installed, the full surface for comparison.
"""
from __future__ import annotations

from typing import Any

import anyio

from mcp_nextcloud.fixtures.emulator.server import ALL_APPS, Emulator


def _surface(emu: Emulator, password: str | None = None) -> dict[str, Any]:
    """What a host sees of mcp-mail as `serve --mail` starts it: state, instructions, tools, resources."""
    from mcp import Client

    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    creds = emu.account("alice")
    account = Account(url=creds["url"], user=creds["user"], app_password=password or creds["app_password"])
    ctx = ServerContext(account=account, index=None)
    server = build_mail_server(ctx)
    try:
        state = server.mail_state()       # as serve --mail does before its first session

        async def go() -> dict[str, Any]:
            async with Client(server, mode="legacy") as client:
                return {"instructions": client.instructions,
                        "tools": [t.name for t in (await client.list_tools()).tools],
                        "resources": [str(r.uri) for r in (await client.list_resources()).resources],
                        "call": await client.call_tool("mail_search", {}),
                        "bad_call": await client.call_tool("mail_read", {"nonsense": 1})}
        return {"state": state, **anyio.run(go)}
    finally:
        ctx.close()


def test_with_mail_the_six_tools_their_apps_and_the_mail_instructions() -> None:
    with Emulator() as emu:
        seen = _surface(emu)
    assert seen["state"] == "installed"
    assert len(seen["tools"]) == 6 and "mail_search" in seen["tools"]
    assert seen["resources"] and all(r.startswith("ui://mail") for r in seen["resources"])
    assert "mail_contacts" in seen["instructions"]


def test_without_mail_nothing_is_listed_and_the_instructions_say_why() -> None:
    with Emulator(apps=ALL_APPS - {"mail"}) as emu:
        seen = _surface(emu)
    assert seen["state"] == "missing"
    assert seen["tools"] == [] and seen["resources"] == []
    text = seen["instructions"]
    assert "not installed" in text and "administrator" in text and "do not retry" in text.lower()
    assert "mail_search" not in text and "mail_contacts" not in text   # no tool advertised that is not there
    # Issue 37: a tool listed nowhere answers as an unknown tool, argument errors included (no hint it exists).
    for call, name in ((seen["call"], "mail_search"), (seen["bad_call"], "mail_read")):
        assert call.is_error and call.content[0].text.startswith(f"Unknown tool: {name}. Call tools/list")
        assert call.structured_content["error"]["code"] == "unknown_tool"


def test_with_refused_credentials_nothing_is_listed_and_the_instructions_name_the_password() -> None:
    with Emulator() as emu:
        seen = _surface(emu, password="wrong-password")
        failed_logins = sum(1 for _m, _path, status in emu.requests if status == 401)
    assert seen["state"] == "refused"
    assert seen["tools"] == [] and seen["resources"] == []
    text = seen["instructions"]
    assert "refused" in text and "app password" in text and "mcp-nextcloud login" in text
    assert "mail_search" not in text
    assert 1 <= failed_logins <= 2       # the probe asked once (the client may not retry a 401)


def test_the_answer_is_asked_again_when_the_credentials_change() -> None:
    from dataclasses import replace

    from mcp_nextcloud.nextcloud.config import Account
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import INSTRUCTIONS, build_mail_server

    with Emulator() as emu:
        creds = emu.account("alice")
        ctx = ServerContext(account=Account(url=creds["url"], user=creds["user"], app_password="wrong-password"),
                            index=None)
        server = build_mail_server(ctx)
        try:
            assert server.mail_state() == "refused"
            ctx.account = replace(ctx.account, app_password=creds["app_password"])
            ctx._client = None                 # a context built for the new password has a new client
            state = server.mail_state()
        finally:
            ctx.close()
    assert state == "installed" and server.instructions == INSTRUCTIONS
