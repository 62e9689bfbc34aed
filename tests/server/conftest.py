"""Server test set-up: one emulator synced into one index per session, a fresh call log per test.

Syncing the sample documents costs seconds, so the emulator and its index are
shared by the session; tests that change files use their own names, and
tests that inject faults consume them (or clear them) before returning.
`call(name, args, mode=...)` drives the real server through the SDK's
in-process Client - "legacy" (JSON-RPC stream, today's hosts) or "auto".
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import anyio
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator


@dataclass
class World:
    emulator: Emulator
    account: Any
    index_path: Path
    secret: str


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    with Emulator() as emu:
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        path = tmp_path_factory.mktemp("server-index") / "index.db"
        with Index.open(path) as index, NextcloudClient(account) as client:
            report = sync(client, index)
            assert report.complete and report.indexed >= 10, report.to_dict()
        yield World(emu, account, path, creds["app_password"])


@pytest.fixture
def ctx(world: World, tmp_path: Path) -> Iterator[Any]:
    """A server context on the shared index with its own call log; freshness checked on every grep."""
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.server.context import ServerContext, Settings
    from mcp_nextcloud.server.telemetry import CallLog

    world.emulator.faults.clear()
    context = ServerContext(account=world.account, index=Index.open(world.index_path),
                            telemetry=CallLog(tmp_path / "calls.sqlite"),
                            # best_effort_s: the bounded calls on read paths get room on a loaded CI machine;
                            # the tests of the bound itself set their own (tests/server/test_server_trust.py).
                            settings=Settings(freshness_interval_s=0.0, best_effort_s=5.0))
    yield context
    world.emulator.faults.clear()
    context.close()


@pytest.fixture
def server(ctx: Any) -> Any:
    from mcp_nextcloud.server.app import build_server

    return build_server(ctx)


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    """Both client modes: legacy (handshake era, JSON-RPC stream) and auto (2026 era, direct dispatch)."""
    return request.param


@pytest.fixture
def call(server: Any) -> Callable[..., Any]:
    """call(name, args, mode="legacy") -> CallToolResult, through a real in-process MCP Client."""
    from mcp import Client

    def run(name: str, args: dict[str, Any] | None = None, mode: str = "legacy") -> Any:
        async def go() -> Any:
            async with Client(server, mode=mode) as client:
                return await client.call_tool(name, args or {})
        return anyio.run(go)

    return run


@pytest.fixture
def list_tools() -> Callable[..., list[Any]]:
    """list_tools(mode) -> tools/list of a server built without account or index (listing needs neither)."""
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    server = build_server(ServerContext(account=None, index=None))

    def run(mode: str = "legacy") -> list[Any]:
        async def go() -> list[Any]:
            async with Client(server, mode=mode) as client:
                return (await client.list_tools()).tools
        return anyio.run(go)

    return run


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    text = result.content[0].text
    data = json.loads(text)
    assert data == result.structured_content
    return data


@pytest.fixture
def ok() -> Callable[[Any], dict[str, Any]]:
    """ok(result) -> the payload, after checking it is not an error and text == structuredContent."""
    return _payload


@pytest.fixture
def err() -> Callable[[Any], str]:
    """err(result) -> the error text, after checking it is an error with its fields."""
    from tests.helpers import failure_text

    return failure_text


@dataclass
class Pim:
    """The calendar, contacts and Talk tools against one fresh emulator (no index: these tools need none)."""

    emulator: Emulator

    def server(self, user: str = "alice", *, public_url: bool = True) -> Any:
        from mcp_nextcloud.nextcloud.config import Account
        from mcp_nextcloud.server.app import build_server
        from mcp_nextcloud.server.context import ServerContext

        creds = self.emulator.account(user)
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"],
                          public_url=self.emulator.url if public_url else None)
        return build_server(ServerContext(account=account, index=None))

    def call(self, name: str, args: dict[str, Any] | None = None, *, user: str = "alice",
             public_url: bool = True) -> Any:
        from mcp import Client

        server = self.server(user, public_url=public_url)

        async def go() -> Any:
            async with Client(server, mode="legacy") as client:
                return await client.call_tool(name, args or {})
        return anyio.run(go)

    def calls(self, calls: list[tuple[str, dict[str, Any]]], *, user: str = "alice") -> list[Any]:
        """Several calls in one session of one server (what one call learns, e.g. a read's etag, the next keeps)."""
        from mcp import Client

        server = self.server(user)

        async def go() -> list[Any]:
            async with Client(server, mode="legacy") as client:
                return [await client.call_tool(name, args) for name, args in calls]
        return anyio.run(go)

    def http(self, user: str = "alice", *, ocs: bool = False) -> Any:
        """A raw client, to set up or inspect what the server holds (as the recordings' real clients would)."""
        from mcp_nextcloud.fixtures.emulator.testing import http_client

        return http_client(self.emulator, user, ocs=ocs)


@pytest.fixture
def pim(emulator: Emulator) -> Pim:
    return Pim(emulator)


@pytest.fixture
def pim_factory(emulator_factory: Callable[..., Emulator]) -> Callable[..., Pim]:
    """pim_factory(users=[...], apps=...) -> a Pim on an emulator built with those arguments."""
    return lambda **kwargs: Pim(emulator_factory(**kwargs))


@pytest.fixture
def person_cli(world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
               capsys: pytest.CaptureFixture[str]) -> Callable[..., tuple[int, str, str]]:
    """person_cli(*argv) -> (exit code, stdout, stderr): `mcp-nextcloud argv` in this process on the session's
    emulator (cli_env); argparse's exits (usage errors, --help) are returned as codes too."""
    from mcp_nextcloud.cli import main
    from tests.helpers import cli_env

    for key, value in cli_env(world, tmp_path).items():
        monkeypatch.setenv(key, value)
    world.emulator.faults.clear()

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as stop:
            code = int(stop.code or 0)
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary HOME with no stored login and none of the variables that name an account, config or index."""
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "MCP_NEXTCLOUD_CONFIG", "MCP_NEXTCLOUD_INDEX",
                 "NEXTCLOUD_URL", "NEXTCLOUD_USER", "NEXTCLOUD_APP_PASSWORD"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path
