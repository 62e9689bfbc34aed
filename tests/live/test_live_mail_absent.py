"""mcp-mail on a real Nextcloud 34 without Mail: instructions, tools and resources agree (issue 22, 8d).

On a server started with `--mail` the module disables Mail for its duration (`occ app:disable mail`, through
start.sh's occ.sh and NC34_ROOT) and enables it again at the end, so these cases run there too (issue 35);
on a server without Mail they run as they are; on another server with Mail they skip. `serve --mail` is the
real process over stdio, as a host starts it. The wrong-password test sends one refused login and resets the
brute-force record in its teardown, so the shared server is not throttled for the others.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Iterator

import anyio
import httpx
import pytest

from tests.live.conftest import OCC_SH, ServerAdmin, live_configured

ROOT = Path(__file__).resolve().parents[2]


def _mail_installed(live_http: httpx.Client) -> bool:
    """Asked with a plain client: Mail's OCS route answers 404 where the app is not installed."""
    return live_http.get("/ocs/v2.php/apps/mail/account/list", params={"format": "json"}).status_code != 404


@pytest.fixture(scope="module", autouse=True)
def without_mail() -> Iterator[None]:
    """Mail disabled for this module where it is installed on start.sh's server, and enabled again after."""
    if not live_configured():
        yield
        return
    url = os.environ["NEXTCLOUD_URL"].rstrip("/")
    auth = (os.environ["NEXTCLOUD_USER"], os.environ["NEXTCLOUD_APP_PASSWORD"])
    with httpx.Client(base_url=url, auth=auth, headers={"OCS-APIRequest": "true"}, timeout=60) as http:
        installed = _mail_installed(http)
    root = os.environ.get("NC34_ROOT")
    if not installed:
        yield
        return
    if not root or not OCC_SH.is_file():
        pytest.skip("Mail is installed on this server and it is not start.sh's (no NC34_ROOT to disable it)")
    admin = ServerAdmin(Path(root), url)
    admin.occ("app:disable", "mail")
    try:
        yield
    finally:
        admin.occ("app:enable", "mail")


def _serve_mail(tmp_path: Path, account: Any, password: str) -> dict[str, Any]:
    from mcp import Client, StdioServerParameters

    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"NEXTCLOUD_URL": account.url, "NEXTCLOUD_USER": account.user, "NEXTCLOUD_APP_PASSWORD": password,
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.sqlite"),
                "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
                "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config" / "account.json"),
                "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--mail",
                                                                 "--interval", "0"],
                                   env=env, cwd=str(ROOT))

    async def go() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            return {"instructions": client.instructions or "",
                    "tools": [t.name for t in (await client.list_tools()).tools],
                    "resources": [str(r.uri) for r in (await client.list_resources()).resources],
                    "templates": [str(t.uri_template) for t in
                                  (await client.list_resource_templates()).resource_templates]}
    return anyio.run(go)


def test_live_without_mail_no_tool_no_app_and_instructions_that_say_so(live_account, live_http, tmp_path):
    assert not _mail_installed(live_http), "Mail still answers: the module fixture did not disable it"
    seen = _serve_mail(tmp_path, live_account, live_account.app_password)
    assert seen["tools"] == []
    assert seen["resources"] == [] and seen["templates"] == []
    assert "not installed" in seen["instructions"] and "administrator" in seen["instructions"]
    assert "mail_search" not in seen["instructions"] and "mail_compose" not in seen["instructions"]


def _refused_mail_requests(server_admin: Any, mark: int) -> list[str]:
    """Requests to Mail's routes answered 401 since `mark`: the log is shared with everyone's tests, and
    only a wrong password is refused there (a right one gets Mail's 404 on this server)."""
    with server_admin.access_log.open("rb") as fh:
        fh.seek(mark)
        lines = fh.read().decode("utf-8", "replace").splitlines()
    out = []
    for line in lines:
        parts = line.split('"')
        if len(parts) >= 3 and "/apps/mail/" in parts[1] and parts[2].split()[:1] == ["401"]:
            out.append(parts[1])
    return out


@pytest.fixture
def forget_failed_logins(server_admin):
    yield
    server_admin.reset_bruteforce()


def test_live_with_a_wrong_password_the_answer_names_the_credentials(live_account, tmp_path, server_admin,
                                                                     forget_failed_logins, live_http):
    mark = server_admin.log_mark()
    seen = _serve_mail(tmp_path, live_account, "wrong-" + live_account.app_password[:6])
    asked = _refused_mail_requests(server_admin, mark)
    assert seen["tools"] == [] and seen["resources"] == [] and seen["templates"] == []
    assert "refused" in seen["instructions"] and "mcp-nextcloud login" in seen["instructions"]
    assert "mail_search" not in seen["instructions"]
    assert 1 <= len(asked) <= 2, asked   # one probe (and no retry of a refused login)


# --- mcp-mail in process on the same server without Mail --------------------------------------------------------

@pytest.fixture
def mail_absent(tools_factory, live_http):
    """mcp-mail on a server without the Mail app (the module fixture disabled it where it was installed)."""
    assert not _mail_installed(live_http), "Mail still answers: the module fixture did not disable it"
    return tools_factory(mail=True)


def test_live_mail_absent_lists_no_tools_and_answers_a_call_as_an_unknown_tool(mail_absent):
    """Issue 37: a tool listed nowhere is answered as an unknown tool, argument errors included (the
    instructions say why Mail is not there: test_live_without_mail_no_tool_no_app_and_instructions_that_say_so)."""
    assert mail_absent.list_tools() == []
    assert mail_absent.error("mail_search", {"limit": 1}).startswith("Unknown tool: mail_search. Call tools/list")
    assert mail_absent.error("mail_read", {"nonsense": 1}).startswith("Unknown tool: mail_read. Call tools/list")


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


def test_live_main_identity_says_mail_is_absent(tools_factory):
    assert tools_factory().ok("nextcloud_whoami")["apps"]["mail"] is False
