"""A damaged index is answered the same way on every face (issue 53): the CLI's `grep`, `files grep` and `files
search`, and serve's files_grep and files_search over stdio, with and without the index service, name the file,
the damage and the rebuild step; serve completes its handshake (its instructions say it where the index cannot be
opened), the tools that need no index keep working, and `service status` says why the background sync is not
running. Nothing says "internal error" for a fault the product can name."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.service.procs import ROOT, _cli

DAMAGE = "damaged or not an index"
STEP = "mcp-nextcloud index sync"


def _damage(path: Path, how: str) -> None:
    """Truncated to a third (not even opened) or a zeroed middle third (opened; a query meets it)."""
    for side in ("-wal", "-shm"):
        Path(str(path) + side).unlink(missing_ok=True)
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    if how == "truncated":
        path.write_bytes(bytes(data[:third]))
    else:
        data[third:2 * third] = bytes(third)
        path.write_bytes(bytes(data))


@pytest.fixture(params=["truncated", "zeroed middle"])
def damaged(request: Any, env: dict[str, str]) -> tuple[dict[str, str], str]:
    alone = {**env, "MCP_NEXTCLOUD_SERVICE": "0"}
    assert _cli(alone, "index", "sync", "--wait", "60").returncode == 0
    _damage(Path(env["MCP_NEXTCLOUD_INDEX"]), request.param)
    return env, request.param


@pytest.mark.parametrize("switch", ["1", "0"])
def test_the_cli_names_the_damage_on_every_command(damaged: tuple[dict[str, str], str], switch: str) -> None:
    env, _ = damaged
    env = {**env, "MCP_NEXTCLOUD_SERVICE": switch}
    for argv in (["grep", "install"], ["files", "grep", "install"], ["files", "search"]):
        done = _cli(env, *argv)
        said = done.stderr.strip()
        assert done.returncode != 0 and DAMAGE in said and STEP in said, (argv, said[-400:])
        assert "internal error" not in said and "Traceback" not in said and len(said.splitlines()) == 1, said


@pytest.mark.parametrize("switch", ["1", "0"])
def test_serve_answers_the_damage_and_keeps_the_other_tools(damaged: tuple[dict[str, str], str], switch: str) -> None:
    from mcp import Client, StdioServerParameters

    env, how = damaged
    env = {**env, "MCP_NEXTCLOUD_SERVICE": switch}
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "1"],
                                   env=env, cwd=str(ROOT))

    async def go() -> tuple[str, dict[str, Any]]:
        async with Client(params, mode="legacy") as client:
            answers = {name: await client.call_tool(name, args) for name, args in
                       [("files_grep", {"query": "install"}), ("files_search", {"name": "notes"}),
                        ("nextcloud_whoami", {})]}
            return client.instructions or "", answers

    instructions, answers = anyio.run(go)
    for name in ("files_grep", "files_search"):
        text = answers[name].content[0].text
        assert answers[name].is_error and DAMAGE in text and STEP in text and "internal error" not in text, text
        assert answers[name].structured_content["error"]["code"] == "index_unusable"
    assert not answers["nextcloud_whoami"].is_error, answers["nextcloud_whoami"].content[0].text
    if how == "truncated":    # not even opened: said before any call
        assert "cannot be used" in instructions and DAMAGE in instructions, instructions


def test_service_status_says_why_the_background_sync_is_not_running(damaged: tuple[dict[str, str], str]) -> None:
    from mcp import Client, StdioServerParameters

    env, how = damaged
    if how != "truncated":
        pytest.skip("a zeroed middle opens: the sync's round meets it (its own report)")
    params = StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "1"],
                                   env=env, cwd=str(ROOT))

    async def go() -> dict[str, Any]:
        async with Client(params, mode="legacy") as client:
            await client.call_tool("nextcloud_whoami", {})
            for _ in range(100):
                status = json.loads(_cli(env, "service", "status", "--json").stdout)
                if status.get("sync", {}).get("state") == "failed":
                    return status
                await anyio.sleep(0.2)
            return status

    status = anyio.run(go)
    sync = status.get("sync", {})
    assert sync.get("state") == "failed" and DAMAGE in sync.get("cause", "") and STEP in sync["cause"], status


def test_serve_over_http_answers_the_damage(damaged: tuple[dict[str, str], str], tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    from tests.helpers import stop
    from tests.service.test_service_long_session import _http_serve

    env, how = damaged
    proc, url, token = _http_serve({**env, "MCP_NEXTCLOUD_SERVICE": "1"}, tmp_path)
    try:
        async def go() -> tuple[str, Any, Any]:
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
            async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
                return (client.instructions or "", await client.call_tool("files_grep", {"query": "install"}),
                        await client.call_tool("nextcloud_whoami", {}))

        instructions, grep, whoami = anyio.run(go)
    finally:
        stop(proc)
    text = grep.content[0].text
    assert grep.is_error and DAMAGE in text and STEP in text and "internal error" not in text, text
    assert not whoami.is_error
    if how == "truncated":
        assert DAMAGE in instructions, instructions
