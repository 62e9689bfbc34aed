"""The HTTP transports' own cost per tool call (issue 49): `serve --http` and the team server, on loopback.

A tools/call of nextcloud_whoami (answered from its one-minute cache: next to no tool work) timed by the client,
on one kept-alive connection and on a new connection per call. Before TCP_NODELAY on the accepted connections,
a response written in several pieces (headers, then the streamed body) met Nagle's algorithm and the client's
delayed ACK: about 40 ms per call on a kept connection. serve is measured with its tools in-process
(MCP_NEXTCLOUD_SERVICE=0: the figure is the transport's, held to the budget) and in the index service (its
default: the transport and the hop to the service), the team server as it always runs (its team service), all
without the meaning layer (MCP_NEXTCLOUD_MEANING=0: its embedding build would share the two cores with the calls).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import httpx

from benchmarks.conftest import report, summary
from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.helpers import stop
from tests.server.test_hostile_serve import _result, _rpc, _session
from tests.server.test_server_transports import ROOT, _free_port

CALLS = 60
WARM = 5
BUDGET_MS = 3.0     # server overhead p50 on a kept connection


WHOAMI = _rpc("tools/call", {"name": "nextcloud_whoami", "arguments": {}}, 5)
PING = _rpc("ping", {}, 6)     # the transport, the session and the bearer check, no tool


def _timed_calls(url: str, headers: dict[str, str], new_client: Callable[[], httpx.Client], kept: bool,
                 call: dict[str, Any] = WHOAMI) -> list[float]:
    """Milliseconds per call: all on one connection (`kept`) or each on its own."""
    out: list[float] = []
    shared = new_client() if kept else None
    try:
        for i in range(WARM + CALLS):
            client = shared or new_client()
            t0 = time.perf_counter()
            resp = client.post(url, json=call, headers=headers)
            answer = _result(resp)
            took = (time.perf_counter() - t0) * 1000
            if shared is None:
                client.close()
            assert resp.status_code == 200 and not answer["result"].get("isError", False), resp.text[:300]
            if i >= WARM:
                out.append(took)
    finally:
        if shared is not None:
            shared.close()
    return out


def _serve_http(emu: Emulator, tmp: Path, service: bool) -> tuple[subprocess.Popen[str], str, str]:
    """`serve --http` for alice on the emulator, its tools in-process or in the index service (its runtime
    folder in `tmp`): (process, /mcp address, bearer token)."""
    port, token = _free_port(), "t" * 40
    config = tmp / "config"
    config.mkdir()
    (tmp / "runtime").mkdir()
    (config / "http-token").write_text(token + "\n")
    (config / "http-token").chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    account = emu.account("alice")
    env.update({"NEXTCLOUD_URL": account["url"], "NEXTCLOUD_USER": account["user"],
                "NEXTCLOUD_APP_PASSWORD": account["app_password"], "MCP_NEXTCLOUD_SERVICE": "1" if service else "0",
                "XDG_RUNTIME_DIR": str(tmp / "runtime"), "MCP_NEXTCLOUD_SERVICE_IDLE_S": "60",
                "MCP_NEXTCLOUD_INDEX": str(tmp / "index.db"), "MCP_NEXTCLOUD_TELEMETRY": str(tmp / "calls.sqlite"),
                "MCP_NEXTCLOUD_CONFIG": str(config / "account.json"), "MCP_NEXTCLOUD_MEANING": "0",
                "PYTHONPATH": str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")})
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                             "--interval", "0"], env=env, cwd=str(ROOT), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 90
    while True:
        assert proc.poll() is None, "serve --http ended"
        try:
            httpx.get(url, timeout=1)
            return proc, url, token
        except httpx.HTTPError:
            assert time.monotonic() < deadline, "serve --http did not listen"
            time.sleep(0.1)


def _measure(url: str, token: str, synced: Callable[[], None] | None = None) -> dict[str, list[float]]:
    """Both runs; `synced`: first wait until the person's first sync is done (a grep finds alice's notes), then
    call it (it waits for the meaning build), so the calls do not share the machine's two cores with either."""
    headers = _session(url, token)
    if synced is not None:
        from tests.team.test_team_hostile import _grep

        assert _grep(url.removesuffix("/mcp"), headers, "supplier", within=120)["hits"]
        synced()
    make = lambda: httpx.Client(timeout=30)   # noqa: E731
    return {"kept": _timed_calls(url, headers, make, kept=True), "new": _timed_calls(url, headers, make, kept=False),
            "ping": _timed_calls(url, headers, make, kept=True, call=PING)}


def test_http_overhead_per_call() -> None:
    from tests.team.serving import running_team
    from tests.team.test_team_hostile import _token

    from tests.team.serving import _stop_services

    serve: dict[bool, dict[str, list[float]]] = {}
    with Emulator() as emu:
        for service in (False, True):
            with tempfile.TemporaryDirectory(prefix="httpbench") as tmp:
                proc, url, token = _serve_http(emu, Path(tmp), service)
                try:
                    serve[service] = _measure(url, token)
                finally:
                    stop(proc)
                    _stop_services(Path(tmp) / "runtime")
        # Without the meaning layer, as serve's runs: its build (embedding on both cores) kept running under the
        # calls after the first sync (11.7 ms p50 during it, 4.3-8 ms after 'complete' while it went on).
        with running_team(emu.url, env={"MCP_NEXTCLOUD_MEANING": "0"}) as team:
            team = {**team, "approve": lambda login_url, user: emu.approve_login(user, login_url)}
            _, tokens = _token(team, "alice")
            served = _measure(team["url"] + "/mcp", tokens["access_token"], synced=lambda: None)
    figures: dict[str, Any] = {}
    for name, runs in (("serve --http", serve[False]), ("serve --http, tools in the index service", serve[True]),
                       ("team server (tools in its index service)", served)):
        for how, label in (("kept", "a kept connection"), ("new", "a new connection per call")):
            figures[f"{name}: whoami tools/call on {label}"] = summary(runs[how])
        figures[f"{name}: ping on a kept connection"] = summary(runs["ping"])
    # The tool's own work: whoami in serve's own process, less the transport (its ping), measured in this run.
    tool = statistics.median(serve[False]["kept"]) - statistics.median(serve[False]["ping"])
    figures["whoami's own work (serve --http: whoami p50 - ping p50), ms"] = round(tool, 2)
    figures["load average (1 min, shared machine)"] = round(os.getloadavg()[0], 2)
    report("http_overhead", figures, [
        ("serve --http overhead p50 ms, kept connection", statistics.median(serve[False]["kept"]) - tool,
         BUDGET_MS, "<="),
        ("team server overhead p50 ms, kept connection", statistics.median(served["kept"]) - tool, BUDGET_MS, "<=")])
