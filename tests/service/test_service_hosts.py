"""One index service hosting many people's indexes (the team server's model: service/hosts.py).

Two people (alice and bob on the emulator) link to one service process, each with their own environment and
index, as the team server links them: each one's calls run on their own context (credentials, index), their
background syncs fill their own index only, the service counts both, and a person's host goes with their
going (their context and credentials are not kept). The tool server over the call's context refuses to run
outside a call.
"""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_nextcloud.cli.service_cmd import _ask
from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.server.call_context import NoCallContext, call_context, serving
from mcp_nextcloud.service.client import service_name
from mcp_nextcloud.service.tools import ServiceTools


def _person(emulator: Emulator, user: str, home: Path, base: dict[str, str]) -> tuple[dict[str, str], Path]:
    acct = emulator.account(user)
    index = home / "index.db"
    env = {**base, "NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
           "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_INDEX": str(index), "HOME": str(home),
           "XDG_DATA_HOME": str(home / "data"), "XDG_CONFIG_HOME": str(home / "config"),
           "XDG_CACHE_HOME": str(home / "cache"), "XDG_STATE_HOME": str(home / "state")}
    return env, index


class _Profile:
    def describe(self) -> dict[str, Any]:
        return {"name": "default"}


def _call(link: ServiceTools, tool: str, **arguments: Any) -> dict[str, Any]:
    result = link.call(tool, arguments, _Profile(), read_only=True)
    out: dict[str, Any] = json.loads(result.content[0].text)
    return out


def _until(check: Any, seconds: float = 90.0) -> Any:
    deadline = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.5)


def test_two_people_in_one_service_each_on_their_own_index(env: dict[str, str], emulator: Emulator,
                                                            tmp_path: Path, runtime: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("MCP_NEXTCLOUD_SERVICE_IDLE_S", "60")
    base = {k: v for k, v in env.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_INDEX"))}
    name = service_name(["serve", "--index", str(tmp_path / "people")], {})
    alice_env, alice_index = _person(emulator, "alice", tmp_path / "alice", base)
    bob_env, bob_index = _person(emulator, "bob", tmp_path / "bob", base)
    alice = ServiceTools(name, alice_index, 2.0, alice_env)
    bob = ServiceTools(name, bob_index, 2.0, bob_env)
    try:
        assert _call(alice, "nextcloud_whoami")["userId"] == "alice"
        assert _call(bob, "nextcloud_whoami")["userId"] == "bob"
        alice.attach()
        bob.attach()
        status = _until(lambda: (s := _ask(name, "status")) and s.get("syncingIndexes") == 2 and s)
        assert status and status["indexes"] == 2 and status["attachedServes"] == 2, status
        hits = _until(lambda: _call(alice, "files_grep", query="supplier").get("hits"))
        assert hits, "alice's background sync never brought her file"
        # bob's index holds bob's files only: alice's text is nowhere in his answers, nor her file by path
        assert not _call(bob, "files_grep", query="supplier").get("hits")
        first = hits[0]["path"]
        refused = bob.call("files_read", {"path": first}, _Profile(), read_only=True)
        assert refused.is_error and "supplier" not in refused.content[0].text.lower()
        assert alice_index.exists() and bob_index.exists() and alice_index.stat().st_size > 0
    finally:
        bob.close()
    # bob's going takes his host (context, credentials, sync); alice's stays
    status = _until(lambda: (s := _ask(name, "status")) and s.get("attachedServes") == 1 and s)
    assert status and status.get("indexes", 1) == 1, status
    assert _call(alice, "files_grep", query="supplier").get("hits")
    alice.close()


def test_the_shared_tool_server_refuses_to_run_outside_a_call() -> None:
    from mcp_nextcloud.server.context import ServerContext

    ctx = call_context()
    with pytest.raises(NoCallContext):
        _ = ctx.account
    first, second = ServerContext(account=None, index=None), ServerContext(account=None, index=None)
    seen: dict[str, Any] = {}

    def read(label: str, own: ServerContext) -> None:
        with serving(own):
            time.sleep(0.05)          # both threads inside their calls at once
            seen[label] = ctx.notes
            ctx.last_checked_at = 1.0 if label == "first" else 2.0

    threads = [threading.Thread(target=read, args=("first", first)), threading.Thread(target=read,
                                                                                      args=("second", second))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen["first"] is first.notes and seen["second"] is second.notes
    assert (first.last_checked_at, second.last_checked_at) == (1.0, 2.0)
    with pytest.raises(NoCallContext):
        _ = ctx.notes


def test_a_caller_on_a_descriptor_past_1023_is_not_taken_for_gone() -> None:
    """A service hosting a team holds over a thousand descriptors: the hang-up watch must read a connection
    numbered past select()'s limit, and still see a real hang-up."""
    import os
    import socket

    from mcp_nextcloud.service.channel import Connection

    ours, theirs = socket.socketpair()
    high = os.dup2(ours.fileno(), 1500)
    ours.close()
    conn = Connection(socket.socket(fileno=high))
    try:
        with conn.watching() as token:
            time.sleep(0.6)                 # three rounds of the watch
            assert not token.cancelled and not conn.gone
            theirs.close()                  # the caller hangs up
            deadline = time.monotonic() + 3
            while not token.cancelled and time.monotonic() < deadline:
                time.sleep(0.05)
            assert token.cancelled and conn.gone
    finally:
        conn.close()
