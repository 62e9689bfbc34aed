"""The index service under kill -9 (issue 34): 2,000 mixed calls from three clients, 10 kill -9s among them.

Three clients at once on one index: a `serve` session (files_grep, files_read, nextcloud_whoami,
contacts_search over stdio), and two CLI loops (grep, inspect, files search, contacts search). A fourth thread
kills the service with SIGKILL ten times, spread over the run. Every answer is compared with the same call's
answer when every call runs in its own process (MCP_NEXTCLOUD_SERVICE=0): a read the service's end interrupted
must be asked again (by the client) and answer the same.

Budgets: 0 service deaths (a service that ended without being killed or told to: counted from the services'
logs, every start but the first and those after a kill), 0 wrong answers.

Run with `python3 -m pytest -q -s benchmarks/test_service_chaos_bench.py`.
"""
from __future__ import annotations

import json
from collections import Counter
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from benchmarks.conftest import report
from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.service.procs import alice_env

ROOT = Path(__file__).resolve().parents[1]
CALLS = 2000
KILLS = 10
CLI_A = [["grep", "install", "--json", "--limit", "3"], ["inspect", "mcp_nextcloud/fixtures/docs/notes.txt", "--json"],
         ["grep", "budget", "--json", "--limit", "2"]]
CLI_B = [["files", "search", "--json", "--limit", "3"], ["contacts", "search", "elodie", "--json"],
         ["grep", "newapp", "--json", "--limit", "1"]]
TOOLS = [("files_grep", {"query": "install", "limit": 3}), ("files_read", {"path": "/Documents/notes.txt"}),
         ("nextcloud_whoami", {}), ("contacts_search", {"query": "elodie"})]


def _steady(text: str) -> str:
    """An answer without what differs from one run to the next (durations, ages, times, ids of a run)."""
    text = re.sub(r'"([A-Za-z]*(Ms|At|Seconds|Age|ms))":("[^"]*"|[0-9.e+-]+)', r'"\1":_', text)
    text = re.sub(r'"(tookMs|elapsedMs|now|serverTime|checkedAt|lastSync[A-Za-z]*)":("[^"]*"|[0-9.e+-]+|null)',
                  r'"\1":_', text)
    return re.sub(r"[0-9.]+ ms\b", "_ ms", text)


def _where_differs(expected: str, got: str) -> str:
    """Where an answer first differs from the expected one: 60 characters of each from there."""
    pairs = enumerate(zip(expected, got, strict=False))
    i = next((k for k, (a, b) in pairs if a != b), min(len(expected), len(got)))
    return f"at {i}: expected {expected[i:i + 60]!r}, got {got[i:i + 60]!r}"


def _cli(env: dict[str, str], argv: list[str]) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], env=env, cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, _steady(done.stdout)


def _serve_params(env: dict[str, str]) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "mcp_nextcloud", "serve", "--interval", "0"],
                                 env=env, cwd=str(ROOT))


async def _tool_answers(env: dict[str, str], rounds: int, stop: threading.Event | None = None) -> list[Any]:
    from mcp import Client

    out: list[Any] = []
    async with Client(_serve_params(env), mode="legacy") as client:
        for i in range(rounds):
            if stop is not None and stop.is_set():
                break
            name, args = TOOLS[i % len(TOOLS)]
            result = await client.call_tool(name, args)
            out.append((name, bool(result.is_error), _steady(result.content[0].text)))
    return out


def _service_pid(env: dict[str, str]) -> int | None:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "service", "status", "--json"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    try:
        return json.loads(done.stdout).get("pid")
    except ValueError:
        return None


@pytest.mark.timeout(3600)   # 2,000 whole-process calls: minutes on 2 shared cores
def test_service_survives_kill_9_among_mixed_calls(tmp_path: Path) -> None:
    runtime = Path(tempfile.mkdtemp(prefix="svcc", dir="/tmp"))
    figures: dict[str, Any] = {"calls": CALLS, "kills": KILLS}
    with Emulator() as emu:
        env = alice_env(emu, tmp_path, runtime, "i.db", MCP_NEXTCLOUD_MEANING="0", PYTHONPATH=str(ROOT))
        alone = {**env, "MCP_NEXTCLOUD_SERVICE": "0"}
        served = {**env, "MCP_NEXTCLOUD_SERVICE": "1"}
        try:
            assert _cli(alone, ["index", "sync", "--wait", "120"])[0] == 0
            expected = {tuple(a): _cli(alone, a) for a in CLI_A + CLI_B}
            reference = anyio.run(_tool_answers, alone, len(TOOLS))
            expected_tools = {name: (err, text) for name, err, text in reference}
            t0 = time.perf_counter()
            wrong, answered, kills = _run(served, expected, expected_tools)
            figures["wall (s)"] = round(time.perf_counter() - t0, 1)
        finally:
            subprocess.run([sys.executable, "-m", "mcp_nextcloud", "service", "stop", "--all"], env=env, cwd=ROOT,
                           capture_output=True, timeout=60)
        logs = "".join(p.read_text() for p in (runtime / "mcp-nextcloud").glob("*.log"))
        shutil.rmtree(runtime, ignore_errors=True)
    starts = logs.count("listening at")
    deaths = max(0, starts - 1 - kills) + logs.count("request failed")
    figures.update({"answers": answered, "kill -9s done": kills, "service starts": starts,
                    "wrong answers by call": dict(Counter(str(w[0]) for w in wrong)),
                    "wrong answers (first 3)": wrong[:3],
                    "load average (1 min, shared machine)": round(os.getloadavg()[0], 2)})
    report("service_chaos", figures, [("service deaths", deaths, 0, "<="), ("wrong answers", len(wrong), 0, "<="),
                                      ("kill -9s among the calls", kills, KILLS, ">=")])
    assert answered >= CALLS


def _run(env: dict[str, str], expected: dict[tuple[str, ...], Any],
         expected_tools: dict[str, Any]) -> tuple[list[Any], int, int]:
    """Three clients and the killer until CALLS answers: (wrong answers, answers, kills)."""
    wrong: list[Any] = []
    counts = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def note(ok: bool, what: Any) -> None:
        with lock:
            counts[0] += 1
            if not ok:
                wrong.append(what)
            if counts[0] >= CALLS:
                stop.set()

    def cli_loop(commands: list[list[str]]) -> None:
        i = 0
        while not stop.is_set():
            argv = commands[i % len(commands)]
            got = _cli(env, argv)
            note(got == expected[tuple(argv)], (argv, got[0], _where_differs(expected[tuple(argv)][1], got[1])))
            i += 1

    def tool_loop() -> None:
        while not stop.is_set():
            for name, err, text in anyio.run(_tool_answers, env, 50, stop):
                note((err, text) == expected_tools[name], (name, err, _where_differs(expected_tools[name][1], text)))

    kills = [0]

    def killer() -> None:
        period = 6.0
        while not stop.is_set() and kills[0] < KILLS:
            stop.wait(period)
            pid = _service_pid(env)
            if pid and not stop.is_set():
                os.kill(pid, signal.SIGKILL)
                kills[0] += 1

    threads = [threading.Thread(target=f, args=a, daemon=True) for f, a in
               ((cli_loop, (CLI_A,)), (cli_loop, (CLI_B,)), (tool_loop, ()), (killer, ()))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=1800)
    return wrong, counts[0], kills[0]
