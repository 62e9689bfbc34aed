"""mcp-mail against a real Nextcloud with Mail (skipped unless NEXTCLOUD_* are set; skipped where Mail is not
installed or has no account). Only reads: people, a search, one message; nothing is composed or sent."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers import caller

TOOLS_JSON = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "server" / "cli" / "tools.json"


@pytest.fixture
def mail_call(live_account: Any) -> Any:

    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    ctx = ServerContext(account=live_account, index=None)
    server = build_mail_server(ctx)
    if not server.mail_installed():
        ctx.close()
        pytest.skip("Mail is not installed on this server")

    yield caller(server)
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


# --- a server without Mail (the shared Nextcloud 34 has none): the honest answer -----------------------------

@pytest.fixture
def mail_absent(tools_factory, live_http):
    """mcp-mail on a server whose capabilities name no Mail app (skips where Mail is there)."""
    if _mail_answers(live_http):
        pytest.skip("Mail is installed on this server")
    return tools_factory(mail=True)


def _mail_answers(http: Any) -> bool:
    """Whether the server has Mail, asked plainly (its OCS account list is 404 where the app is missing)."""
    return http.get("/ocs/v2.php/apps/mail/account/list", params={"format": "json"}).status_code != 404


def test_live_mail_absent_lists_no_tools_and_a_call_says_why(mail_absent):
    assert mail_absent.list_tools() == []
    text = mail_absent.error("mail_search", {"limit": 1})
    assert "Mail app is not installed" in text and "Do not retry" in text


def _session_facts(tools: Any) -> tuple[str, list[str]]:
    from mcp import Client

    tools.server.mail_state()   # as `serve --mail` does before its first session (cli/serve.py)

    async def go() -> tuple[str, list[str]]:
        async with Client(tools.server, mode="legacy") as c:
            resources = [str(r.uri) for r in (await c.list_resources()).resources]
            return c.instructions or "", resources
    return anyio.run(go)


def test_live_mail_absent_advertises_nothing(mail_absent):
    instructions, resources = _session_facts(mail_absent)
    assert "mail_compose" not in instructions and "mail_search" not in instructions
    assert not [r for r in resources if r.startswith("ui://mail")]


def test_live_main_identity_has_no_mail_tools_and_says_mail_is_absent(tools_factory, live_http):
    main = tools_factory()
    names = main.list_tools()
    registered = [n for n, spec in json.loads(TOOLS_JSON.read_text()).items() if spec["server"] == "main"]
    assert sorted(names) == sorted(registered) and not [n for n in names if n.startswith("mail_")]  # own identity
    assert main.ok("nextcloud_whoami")["apps"]["mail"] == _mail_answers(live_http)
