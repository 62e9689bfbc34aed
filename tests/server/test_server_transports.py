"""`mcp-nextcloud serve` as a real subprocess: stdio with the SDK's stdio client, --http with a bearer token."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx
import pytest
from tests.helpers import stop

ROOT = Path(__file__).resolve().parents[2]


def _registered() -> set[str]:
    """The tools the server registers in process: a subprocess server must list the same ones."""
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    return {t.name for t in build_server(ServerContext(account=None, index=None))._tool_manager.list_tools()}


def _env(world, tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({
        "NEXTCLOUD_URL": world.account.url, "NEXTCLOUD_USER": "alice", "NEXTCLOUD_APP_PASSWORD": world.secret,
        "MCP_NEXTCLOUD_INDEX": str(world.index_path),
        "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
        "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config" / "account.json"),
        "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", ""),
    })
    return env


def test_serve_over_stdio_with_the_sdk_stdio_client(world, tmp_path):
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "0"],
                                   env=_env(world, tmp_path), cwd=str(ROOT))

    async def go():
        async with Client(params, mode="legacy") as c:
            tools = (await c.list_tools()).tools
            grep = await c.call_tool("files_grep", {"query": "quota", "limit": 2})
            read = await c.call_tool("files_read", {"path": "/Documents/manual.pdf", "find": "quota", "limit": 1})
            bad = await c.call_tool("files_read", {"fileId": 424242424})
            return tools, grep, read, bad

    tools, grep, read, bad = anyio.run(go)
    assert {t.name for t in tools} == _registered()
    hits = json.loads(grep.content[0].text)["hits"]
    assert any(h["path"] == "/Documents/manual.pdf" for h in hits)
    match = json.loads(read.content[0].text)["matches"][0]
    assert match["text"].lower() == "quota" and match["page"] >= 1
    assert bad.is_error and "files_search" in bad.content[0].text
    # the subprocess wrote its call log where the environment said
    from mcp_nextcloud.server.telemetry import CallLog

    log = CallLog(tmp_path / "calls.sqlite")
    assert [r["kind"] for r in log.rows()] == ["ok", "ok", "misuse"]
    log.close()


def test_serve_without_an_account_explains_how_to_configure_one(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"MCP_NEXTCLOUD_CONFIG": str(tmp_path / "none.json"), "PYTHONPATH": str(ROOT)})
    # No crash before the handshake (tests/server/test_serve_without_account.py speaks to it): the person reading
    # the host's log learns what is missing; a host that hangs up ends it cleanly.
    proc = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "serve"], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120, input="")
    assert proc.returncode == 0
    assert "mcp-nextcloud login" in proc.stderr and "NEXTCLOUD_URL" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(world, tmp_path):
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                             "--interval", "0"], env=_env(world, tmp_path), cwd=str(ROOT),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"serve --http exited: {proc.stderr.read()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    token_file = tmp_path / "config" / "http-token"
    yield port, token_file, proc
    stop(proc)


def test_http_requires_the_bearer_token(http_server):
    port, token_file, proc = http_server
    token = token_file.read_text().strip()
    assert oct(token_file.stat().st_mode & 0o777) == "0o600" and len(token) >= 32
    url = f"http://127.0.0.1:{port}/mcp"
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    anonymous = httpx.post(url, json=body, headers=headers, timeout=10)
    assert anonymous.status_code == 401 and "bearer token" in anonymous.json()["message"]
    refusal = anonymous.json()["error"]   # the parts of a tool failure, the retry a field
    assert refusal["code"] == "unauthorized" and refusal["retry"] is False and "token add" in refusal["action"]
    wrong = httpx.post(url, json=body, headers={**headers, "Authorization": "Bearer nope"}, timeout=10)
    assert wrong.status_code == 401
    # DNS-rebinding protection stays on: a foreign Host is refused even with the token.
    rebind = httpx.post(url, json=body, headers={**headers, "Authorization": f"Bearer {token}",
                                                 "Host": "evil.example:80"}, timeout=10)
    assert rebind.status_code in (403, 421)

    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def go():
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
            tools = (await c.list_tools()).tools
            grep = await c.call_tool("files_grep", {"query": "quota", "limit": 1})
            return tools, grep

    tools, grep = anyio.run(go)
    assert {t.name for t in tools} == _registered() and json.loads(grep.content[0].text)["hits"]
    proc.terminate()
    stdout, stderr = proc.communicate(timeout=10)
    assert token in stderr and "Authorization: Bearer" in stderr  # printed once, to stderr, with instructions
    assert token not in stdout


def test_token_is_generated_once_and_reused(tmp_path):
    from mcp_nextcloud.server.http_auth import ensure_token

    config = tmp_path / "cfg" / "account.json"
    token, created = ensure_token(config)
    again, created_again = ensure_token(config)
    assert created and not created_again and token == again
    assert oct((tmp_path / "cfg" / "http-token").stat().st_mode & 0o777) == "0o600"
