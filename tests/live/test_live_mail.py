"""mcp-mail against a real Nextcloud with Mail (skipped unless NEXTCLOUD_* are set; skipped where Mail is not
installed or has no account). Only reads: people, a search, one message; nothing is composed or sent."""
from __future__ import annotations

import json
from typing import Any

import anyio
import pytest


@pytest.fixture
def mail_call(live_account: Any) -> Any:
    from mcp import Client

    from server.context import ServerContext
    from server.mail_app import build_mail_server

    ctx = ServerContext(account=live_account, index=None)
    server = build_mail_server(ctx)
    if not server.mail_installed():
        ctx.close()
        pytest.skip("Mail is not installed on this server")

    def run(name: str, args: dict[str, Any]) -> Any:
        async def go() -> Any:
            async with Client(server, mode="legacy") as client:
                return await client.call_tool(name, args)
        return anyio.run(go)
    yield run
    ctx.close()


def _ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_live_search_then_read_the_newest_message(mail_call: Any) -> None:
    first = mail_call("mail_search", {"limit": 1})
    if first.is_error and "No mail account" in first.content[0].text:
        pytest.skip("Mail has no account for this user")
    data = _ok(first)
    assert "proof" in data["hint"]
    if not data["messages"]:
        pytest.skip("the INBOX is empty")
    message = _ok(mail_call("mail_read", {"id": data["messages"][0]["id"], "limit": 500}))
    assert message["id"] == data["messages"][0]["id"] and "body" in message


def test_live_contacts_resolve_the_user_themselves(mail_call: Any, live_account: Any) -> None:
    people = _ok(mail_call("mail_contacts", {"name": live_account.user}))
    assert isinstance(people["people"], list)
    assert all("@" in p["email"] for p in people["people"])
