"""The index service under the faults a host meets: the first tool call at once, kill -9 mid-call and mid-sync,
a read interrupted by the service's end, many calls on one service (no descriptor kept per call).

Real processes: `serve` under the SDK's stdio client, the CLI as `python -m mcp_nextcloud`, the service the
process they start; the emulator is the Nextcloud.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

import anyio
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.helpers import wait_for
from tests.service.procs import ROOT, _alive, _cli, _log_of, _status

TRIALS = 20
pytestmark = pytest.mark.timeout(900)   # 20 fresh services, each with a serve: ~10 s a trial on a loaded machine


def _gone(pid: int) -> None:
    wait_for(lambda: not _alive(pid), what=f"the end of service {pid}")


def _serve_params(env: dict[str, str], interval: str = "1") -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", interval],
                                 env=env, cwd=str(ROOT))


def test_the_first_tool_call_at_once_never_keeps_the_background_sync_from_starting(env: dict[str, str]) -> None:
    """20 times: a fresh service, a serve, a files_grep the moment the session is up; the sync starts each time."""
    from mcp import Client

    started = 0
    for trial in range(TRIALS):
        async def go(trial: int = trial) -> Any:
            async with Client(_serve_params(env), mode="legacy") as client:
                first = await client.call_tool("files_grep", {"query": "install"})
                await anyio.to_thread.run_sync(
                    lambda: wait_for(lambda: _status(env).get("sync", {}).get("state") == "running", timeout=60,
                                     step=0.2, what=f"the background sync of trial {trial}"))
                return first

        first = anyio.run(go)
        assert not first.is_error or "never been synced" not in first.content[0].text
        started += 1
        pid = _status(env)["pid"]
        assert _cli(env, "service", "stop").returncode == 0
        _gone(pid)
    assert started == TRIALS
    log = _log_of(env)
    assert "not started" not in log
    # What a failure would be diagnosed from: each attachment and each sync's start, in the service's log.
    assert log.count("(sync every 1 s)") >= TRIALS and log.count("started (every 1 s)") >= TRIALS, log[-3000:]


def test_kill_9_during_calls_loses_nothing_and_the_next_call_recovers(env: dict[str, str]) -> None:
    """A service killed while a sync runs and while greps run: every grep answers (a read is asked again of a
    new service), the index is whole, and the next sync completes."""
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    expected = _cli(env, "grep", "install", "--json", "--limit", "3")
    for _ in range(3):
        pid = _status(env)["pid"]
        os.kill(pid, signal.SIGKILL)
        _gone(pid)
        again = _cli(env, "grep", "install", "--json", "--limit", "3")
        assert again.returncode == 0 and json.loads(again.stdout)["items"] == json.loads(expected.stdout)["items"]
    # Killed while a sync job runs in it: the next sync finishes what was left.
    job = _cli(env, "index", "sync", "--full", "--json", "--wait", "0")
    pid = _status(env)["pid"]
    os.kill(pid, signal.SIGKILL)
    _gone(pid)
    done = _cli(env, "index", "sync", "--wait", "120", "--json")
    assert done.returncode == 0, (job.stdout, done.stdout, done.stderr)
    status = json.loads(_cli(env, "index", "status", "--json").stdout)
    assert status["files"] >= 10


def test_a_read_the_service_ended_is_asked_again_a_write_is_not(env: dict[str, str], emulator: Emulator) -> None:
    """serve's files_grep while the service is killed answers (asked of a new service); a write says its outcome
    is unknown."""
    from mcp import Client

    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0

    async def go() -> list[Any]:
        async with Client(_serve_params(env, "0"), mode="legacy") as client:
            await client.call_tool("nextcloud_whoami", {})
            out = []
            for name, args, slow in (("files_read", {"path": "/Documents/notes.txt"}, "PROPFIND"),
                                     ("files_write", {"path": "/Documents/killed.txt", "content": "x"}, "PUT")):
                emulator.faults.add(method=slow, delay=3.0)   # the call is in flight in the service when it dies
                results: list[Any] = []
                async with anyio.create_task_group() as tg:
                    async def call(name: str = name, args: dict[str, Any] = args, into: list[Any] = results) -> None:
                        into.append(await client.call_tool(name, args))

                    tg.start_soon(call)
                    await anyio.sleep(1.0)
                    os.kill(_status(env)["pid"], signal.SIGKILL)
                out.append(results[0])
                emulator.faults.clear()
            return out

    read, write = anyio.run(go)
    assert not read.is_error, read.content[0].text
    assert write.is_error and "outcome is unknown" in write.content[0].text


def test_calls_keep_no_descriptor_behind(env: dict[str, str]) -> None:
    """300 greps on one service: its open descriptors stay bounded (one reader per worker, not one per call)."""
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0
    pid = _status(env)["pid"]

    def fds() -> int:
        return len(os.listdir(f"/proc/{pid}/fd"))

    from mcp_nextcloud.service.client import forward

    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        for _ in range(20):
            forward(["grep", "install", "--limit", "1", "--json"])
        before = fds()
        for _ in range(300):
            forward(["grep", "install", "--limit", "1", "--json"])
        after = fds()
    finally:
        os.environ.clear()
        os.environ.update(saved)
    # A worker thread the pool starts later (on a loaded machine a call can come before the last one's worker is
    # idle again) opens its own reader (the database and its WAL): at most WORKERS of them, never one per call.
    from mcp_nextcloud.service.daemon import WORKERS

    assert after <= before + 2 * WORKERS, (before, after)
    assert _status(env)["pid"] == pid


@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_damaged_index_is_one_line_for_every_command(env: dict[str, str], tmp_path: Any, switch: str) -> None:
    """whoami, files, grep and index sync on a file that is no index: one line naming the file and what to do, no
    traceback, in the service and in the command's own process alike; the service keeps answering after."""
    damaged = tmp_path / "damaged.db"
    damaged.write_bytes(os.urandom(64 * 1024))
    env = {**env, "MCP_NEXTCLOUD_INDEX": str(damaged), "MCP_NEXTCLOUD_SERVICE": switch}
    for argv in (["whoami"], ["files", "search"], ["grep", "x"], ["index", "sync", "--wait", "5"]):
        done = _cli(env, *argv)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (argv, done.stderr[-500:])
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and "damaged or not an index" in lines[0] and str(damaged) in lines[0], lines
    damaged.unlink()   # the cause gone: the same service builds the index
    assert _cli(env, "index", "sync", "--wait", "60").returncode == 0


@pytest.mark.parametrize("switch", ["1", "0"])
def test_a_lone_surrogate_in_a_tool_argument_is_answered_over_stdio(env: dict[str, str], switch: str) -> None:
    """Valid JSON, invalid Unicode: the SDK's reader drops such a request; serve answers it, naming the field."""
    import queue
    import subprocess
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0"], cwd=str(ROOT),
                            env={**env, "MCP_NEXTCLOUD_SERVICE": switch}, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None
    try:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "t", "version": "1"}}}
        proc.stdin.write((json.dumps(init) + "\n").encode())
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        proc.stdin.write(b'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"files_grep",'
                         b'"arguments":{"query":"a\\ud800b"}}}\n')
        proc.stdin.flush()
        # lines, not select(): both answers may come in one read, and the second then waits in the file's buffer
        lines: queue.Queue[bytes] = queue.Queue()
        stdout = proc.stdout
        threading.Thread(target=lambda: [lines.put(line) for line in stdout], daemon=True).start()
        answers = sorted((json.loads(lines.get(timeout=60)) for _ in range(2)), key=lambda a: a.get("id", 0))
        assert [a.get("id") for a in answers] == [1, 2], answers   # the refusal needs no session: either may lead
        error = answers[1]["error"]
        assert error["code"] == -32602 and "params.arguments.query" in error["message"]
        assert "U+D800" in error["message"]
    finally:
        proc.kill()
        proc.wait()


def _steady_answer(text: str) -> str:
    import re

    text = re.sub(r'"([A-Za-z]*(Ms|At|Seconds|Age)|now|localTime)":("[^"]*"|[0-9.e+-]+)', r'"\1":_', text)
    return re.sub(r"[0-9.]+ ms\b", "_ ms", text)


def test_two_serves_and_a_cli_loop_answer_as_their_own_processes_would(env: dict[str, str]) -> None:
    """Two serves and a CLI loop on one service for 20 s: every answer equals the one the same call gets when it
    runs in its own process (MCP_NEXTCLOUD_SERVICE=0), and one service answered them all."""
    from mcp import Client

    calls = [("files_grep", {"query": "install", "limit": 3}), ("files_read", {"path": "/Documents/notes.txt"}),
             ("contacts_search", {"query": "elodie"})]
    commands = [["grep", "install", "--json", "--limit", "3"], ["files", "search", "--json", "--limit", "3"]]
    alone = {**env, "MCP_NEXTCLOUD_SERVICE": "0"}
    assert _cli(alone, "index", "sync", "--wait", "60").returncode == 0

    async def tool_answers(environment: dict[str, str], seconds: float) -> list[tuple[str, str]]:
        out = []
        async with Client(_serve_params(environment, "0"), mode="legacy") as client:
            deadline = time.monotonic() + seconds
            while True:
                for name, args in calls:
                    result = await client.call_tool(name, args)
                    out.append((name, _steady_answer(result.content[0].text)))
                if time.monotonic() > deadline:
                    return out

    expected_tools = dict(anyio.run(tool_answers, alone, 0))
    expected_cli = {tuple(c): _steady_answer(_cli(alone, *c).stdout) for c in commands}
    wrong: list[Any] = []

    async def both() -> list[tuple[str, str]]:
        answers: list[tuple[str, str]] = []

        async def one() -> None:
            answers.extend(await tool_answers(env, 20))

        async def cli_loop() -> None:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                for c in commands:
                    got = await anyio.to_thread.run_sync(lambda c=c: _cli(env, *c))
                    if _steady_answer(got.stdout) != expected_cli[tuple(c)]:
                        wrong.append((c, got.stdout[:200], got.stderr[-200:]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
            tg.start_soon(cli_loop)
        return answers

    answers = anyio.run(both)
    wrong += [(name, text[:200]) for name, text in answers if text != expected_tools[name]]
    assert len(answers) >= 2 * len(calls) and not wrong, wrong[:3]
    assert _log_of(env).count("listening at") == 1


def test_a_new_app_password_is_used_by_the_same_service(env: dict[str, str]) -> None:
    """A serve with a wrong app password, then one with the right one, on one index: one service, and the second
    is answered with the right credentials (not the first one's refused client)."""
    from mcp import Client

    async def whoami(environment: dict[str, str]) -> Any:
        async with Client(_serve_params(environment, "0"), mode="legacy") as client:
            return await client.call_tool("nextcloud_whoami", {})

    wrong = anyio.run(whoami, {**env, "NEXTCLOUD_APP_PASSWORD": "wrong-" + "x" * 20})
    assert wrong.is_error
    right = anyio.run(whoami, env)
    assert not right.is_error, right.content[0].text
    assert json.loads(right.content[0].text)
    assert _log_of(env).count("listening at") == 1


def test_each_serve_s_own_caps_hold_on_one_service(env: dict[str, str]) -> None:
    """Two serves on one index, one with a read cap below /Documents/notes.txt's size: one service answers both,
    each with its own cap (the settings travel with the call, not with the first caller)."""
    from mcp import Client

    async def read(environment: dict[str, str]) -> Any:
        async with Client(_serve_params(environment, "0"), mode="legacy") as client:
            return await client.call_tool("files_read", {"path": "/Documents/notes.txt"})

    tight = {**env, "MCP_NEXTCLOUD_MAX_READ_MB": "0.00001"}   # 10 bytes
    capped = anyio.run(read, tight)
    assert capped.is_error and "read cap" in capped.content[0].text, capped.content[0].text
    plain = anyio.run(read, env)   # the first caller's cap held for every caller before
    assert not plain.is_error, plain.content[0].text
    assert _log_of(env).count("listening at") == 1


def test_the_background_sync_ends_with_the_last_serve_that_asked_for_it(env: dict[str, str]) -> None:
    """A serve with a sync interval attaches: the sync runs while it stays; once it is gone the service (kept for
    CLI calls) stops syncing: before, it went on every few seconds for nobody until the service exited."""
    from mcp import Client

    async def session() -> None:
        async with Client(_serve_params(env), mode="legacy") as client:
            await client.call_tool("nextcloud_whoami", {})
            await anyio.to_thread.run_sync(
                lambda: wait_for(lambda: _status(env).get("backgroundSync") is True, timeout=60, step=0.2,
                                 what="the background sync while the serve is attached"))

    anyio.run(session)
    status = wait_for(lambda: (lambda s: s if s.get("attachedServes") == 0 else None)(_status(env)),
                      timeout=30, step=0.2, what="the serve's going")
    assert status["backgroundSync"] is False and status["sync"] == {"state": "off"}, status
