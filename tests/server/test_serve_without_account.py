"""`mcp-nextcloud serve` with no (or an incomplete) account, as a subprocess under the SDK's stdio client.

The host completes its handshake and lists a tool, the instructions and every answer say what is missing and how
to log in, and once an account is stored (by the login tool's own Login Flow v2, or by `mcp-nextcloud login` in
a terminal) the same session lists the Nextcloud tools, without a restart.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import anyio

from mcp_nextcloud.cli import main

ROOT = Path(__file__).resolve().parents[2]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config" / "account.json"),
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"),
                "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
                "MCP_NEXTCLOUD_SERVICE": "0",
                "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    env.update(extra)
    return env


def _params(env: dict[str, str]):
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable,
                                 args=["-m", "mcp_nextcloud", "serve", "--interval", "0"], env=env, cwd=str(ROOT))


async def _wait_for_tools(client, names: set[str], within: float = 30.0) -> set[str]:
    """tools/list, asked again until it holds `names` (the background login's poll takes ~2 s)."""
    deadline = time.monotonic() + within
    while True:
        listed = {t.name for t in (await client.list_tools()).tools}
        if names <= listed or time.monotonic() > deadline:
            return listed
        await anyio.sleep(0.3)


def test_serve_without_any_account_answers_and_logs_in_through_its_tool(emulator, tmp_path):
    from mcp import Client, types

    elicited: list[str] = []
    notices: list[str] = []

    async def elicitation(context, params):   # a host that supports URL elicitation: it opens the URL
        elicited.append(params.url)
        threading.Timer(0.3, emulator.approve_login, args=("alice",)).start()   # the person approves
        return types.ElicitResult(action="accept")

    async def on_message(message):
        if isinstance(message, types.ServerNotification):
            notices.append(message.method)

    async def go():
        async with Client(_params(_env(tmp_path)), mode="legacy", elicitation_callback=elicitation,
                          message_handler=on_message) as c:
            instructions = c.instructions
            before = {t.name for t in (await c.list_tools()).tools}
            refused = await c.call_tool("files_grep", {"query": "quota"})
            login = await c.call_tool("nextcloud_login", {"url": emulator.url})
            after = await _wait_for_tools(c, {"files_grep", "nextcloud_whoami"})
            whoami = await c.call_tool("nextcloud_whoami", {})
            return instructions, before, refused, login, after, whoami

    instructions, before, refused, login, after, whoami = anyio.run(go)
    assert before == {"nextcloud_login"}
    for text in (instructions, refused.content[0].text):
        assert "NEXTCLOUD_URL" in text and "NEXTCLOUD_APP_PASSWORD" in text and "mcp-nextcloud login" in text
    assert refused.is_error and refused.structured_content["error"]["code"] == "no_credentials"
    answer = json.loads(login.content[0].text)
    assert not login.is_error and "/login/v2/flow/" in answer["loginUrl"] and answer["elicited"] == "accept"
    assert elicited == [answer["loginUrl"]]
    assert {"files_grep", "files_read", "nextcloud_whoami"} <= after and "nextcloud_login" not in after
    assert not whoami.is_error and '"alice"' in whoami.content[0].text
    assert "notifications/tools/list_changed" in notices
    saved = json.loads((tmp_path / "config" / "account.json").read_text())
    assert saved["user"] == "alice" and oct(os.stat(tmp_path / "config" / "account.json").st_mode & 0o777) == "0o600"


def test_an_incomplete_account_names_what_is_missing_and_a_terminal_login_is_picked_up(emulator, tmp_path):
    from mcp import Client

    env = _env(tmp_path, NEXTCLOUD_URL=emulator.url, NEXTCLOUD_USER="alice")
    config = tmp_path / "config" / "account.json"

    async def go():
        async with Client(_params(env), mode="legacy") as c:   # no elicitation: the URL is in the answer
            instructions = c.instructions
            before = {t.name for t in (await c.list_tools()).tools}
            login = await c.call_tool("nextcloud_login", {})      # the address defaults to NEXTCLOUD_URL
            # the person runs `mcp-nextcloud login` in a terminal instead (a second flow, approved there)
            approver = threading.Thread(target=_approve_second_flow, args=(emulator,), daemon=True)
            approver.start()
            code = await anyio.to_thread.run_sync(lambda: main(["login", emulator.url, "--timeout", "10",
                                                                "--interval", "0.05", "--config", str(config)]))
            after = await _wait_for_tools(c, {"files_grep"})
            return instructions, before, login, code, after

    instructions, before, login, code, after = anyio.run(go)
    assert before == {"nextcloud_login"}
    assert "NEXTCLOUD_APP_PASSWORD is missing" in instructions and "NEXTCLOUD_URL and NEXTCLOUD_USER" in instructions
    answer = json.loads(login.content[0].text)
    assert answer["elicited"] is None and answer["loginUrl"].startswith(emulator.url)
    assert "No browser on this machine" in answer["hint"] and "app password" in answer["hint"]
    assert code == 0 and "files_grep" in after


def _approve_second_flow(emulator) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            from mcp_nextcloud.fixtures.emulator import loginflow

            if len([f for f in loginflow._flows(emulator.state) if f.user is None and not f.done]) >= 2:
                emulator.approve_login("alice")
                return
        except LookupError:
            pass
        time.sleep(0.05)


def test_every_account_missing_message_names_the_missing_variables(tmp_path, capsys, monkeypatch):
    from mcp_nextcloud.nextcloud.config import no_account

    none = no_account(tmp_path / "none.json", env={})
    assert "NEXTCLOUD_URL, NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD are not set" in none.cause
    partial = {"NEXTCLOUD_URL": "https://x.example", "NEXTCLOUD_USER": "a"}
    only_password = no_account(tmp_path / "none.json", env=partial)
    assert "NEXTCLOUD_APP_PASSWORD is missing" in only_password.cause
    (tmp_path / "a.json").write_text(json.dumps({"url": "https://x.example", "app_password": "p"}))
    assert "NEXTCLOUD_USER is missing" in no_account(tmp_path / "a.json", env={}).cause
    # the CLI commands that need the account say the same
    for name in ("NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MCP_NEXTCLOUD_CONFIG", str(tmp_path / "none.json"))
    monkeypatch.setenv("MCP_NEXTCLOUD_INDEX", str(tmp_path / "index.db"))
    for argv in (["index", "sync", "--json"], ["whoami", "--json"]):
        code = main(argv)
        out = capsys.readouterr().out
        assert code != 0 and "NEXTCLOUD_APP_PASSWORD" in json.loads(out)["error"]["cause"], argv


def test_login_explains_the_route_without_a_browser(emulator, tmp_path, capsys):
    code = main(["login", emulator.url, "--timeout", "0.2", "--interval", "0.05", "--config", str(tmp_path / "a")])
    err = capsys.readouterr().err
    assert code == 1
    assert "No browser on this machine" in err and "any device" in err
    assert "NEXTCLOUD_APP_PASSWORD" in err and "Devices & sessions" in err
