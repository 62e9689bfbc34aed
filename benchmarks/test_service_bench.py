"""The index service's budgets (issue 25), whole processes, as installed in a fresh venv; ratios in one run.

- client CPU per command (user + system of the calling process alone; the service is not its child once
  started): `grep` <= 30 ms, a tool command (`contacts search` against the emulator) <= 150 ms;
- `grep` wall time <= 2x ripgrep (`rg -i -l -F`) on the issue's corpus of real documents: Debian's
  documentation packages, ~37 M characters in English, French and German (benchmarks/debian_docs.py:
  `apt-get download`, unpacked, .gz pages decompressed so both read the same bytes; the benchmark skips
  when apt cannot download them). MCP_NEXTCLOUD_DEBIAN_DOCS names other packages instead (the earlier
  4-package, 5.8 MB set: "debian-reference-en debian-policy developers-reference maint-guide", where rg
  takes ~7 ms and the ratio is bound by the interpreter's own start, printed beside it);
- the first command after the service exited, its start included, <= 1.5 s (a grep, and two tool commands:
  contacts search, and calendar list, whose module loads the most);
- two `serve` processes and the CLI on one index: a changed file downloaded (and so extracted) once,
  counted in the emulator's request log;
- the service's memory idle <= 80 MB (resident, after the calls above: busy, after the idle trim, and the lean
  service a grep starts once the loaded one exited past MCP_NEXTCLOUD_SERVICE_SHED_S).

Run with `python3 -m pytest -q -s benchmarks/test_service_bench.py`.
"""
from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks import debian_docs
from benchmarks.conftest import report
from benchmarks.installed import InstallFailed, install, install_form
from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.fixtures.emulator.testing import http_client

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = os.environ.get("MCP_NEXTCLOUD_DEBIAN_DOCS", "").split()   # none: the issue's corpus
WORDS = ("package", "maintainer", "dpkg-buildpackage", "lintian")
ROUNDS = 11
SHED_S = 8   # MCP_NEXTCLOUD_SERVICE_SHED_S here (120 by default): idle this long, the tool stack is shed
MIB = 1024 * 1024


def _corpus(into: Path) -> Path:
    """Debian documentation unpacked into `into`/docs (.gz decompressed): PACKAGES, else the issue's corpus."""
    return debian_docs.corpus(into, PACKAGES) if PACKAGES else debian_docs.issue_corpus(into)


def _client(cmd: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[float, float, str]:
    """(wall ms, CPU ms of the calling process, stdout) of one whole command; it must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, input=stdin, timeout=300)
    wall = (time.perf_counter() - t0) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert done.returncode == 0, f"{cmd[-4:]} failed: {done.stderr[-1500:]}"
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.stdout


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def _status(ours: list[str], env: dict[str, str]) -> dict[str, Any]:
    return json.loads(_client([*ours, "service", "status", "--json"], env)[2])


def test_service_budgets(tmp_path: Path) -> None:
    docs = _corpus(tmp_path / "corpus")
    rg = shutil.which("rg")
    try:
        ours = [str(install(tmp_path / "installed"))]
        form = "installed"
    except InstallFailed as exc:
        print(f"\nnot timed as installed ({exc}); the checkout's CLI stands in")
        ours, form = [sys.executable, "-m", "mcp_nextcloud"], "checkout"
    runtime = Path(tempfile.mkdtemp(prefix="svcb", dir="/tmp"))
    figures: dict[str, Any] = {"form": form, **install_form(), "packages": PACKAGES or "the issue's corpus",
                               "documents": sum(1 for p in docs.rglob("*") if p.is_file()),
                               "corpus MB": round(sum(p.stat().st_size for p in docs.rglob("*") if p.is_file())
                                                  / 1e6, 1)}
    budgets: list[tuple[str, float, float, str]] = []
    with Emulator() as emu:
        acct = emu.account("alice")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_")) and k not in ("PYTHONPATH", "PYTHONPYCACHEPREFIX")}
        env.update({"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
                    "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"),
                    "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                    "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_RUNTIME_DIR": str(runtime),
                    "MCP_NEXTCLOUD_SERVICE_SHED_S": str(SHED_S),
                    # The process model's figures, not a meaning build's: `index add` of the corpus would start
                    # one in the service (~6 min of both cores here), timed by the meaning benchmarks instead.
                    "MCP_NEXTCLOUD_MEANING": "0"})
        if form == "checkout":
            env["PYTHONPATH"] = str(ROOT)
        try:
            _measure(ours, env, docs, rg, emu, figures, budgets)
        finally:
            subprocess.run([*ours, "service", "stop", "--all"], env=env, cwd=ROOT, capture_output=True, timeout=60)
            shutil.rmtree(runtime, ignore_errors=True)
    figures["load average (1 min, shared machine)"] = round(os.getloadavg()[0], 2)
    report("service", figures, budgets)


def _measure(ours: list[str], env: dict[str, str], docs: Path, rg: str | None, emu: Emulator,
             figures: dict[str, Any], budgets: list[Any]) -> None:
    t0 = time.perf_counter()
    _client([*ours, "index", "sync", "--wait", "120"], env)
    _client([*ours, "index", "add", str(docs), "--json"], env)
    figures["index sync + add of the corpus (s)"] = round(time.perf_counter() - t0, 1)
    _grep_rounds(ours, env, docs, rg, figures, budgets)
    _tool_rounds(ours, env, figures, budgets)
    _first_after_exit(ours, env, figures, budgets)
    _two_serves(ours, env, emu, figures, budgets)
    status = _status(ours, env)
    time.sleep(3)   # past the idle trim (2 s), before the shed
    trimmed = _status(ours, env)["memoryBytes"] / MIB
    _wait_exit(ours, env, status["pid"])   # past the shed: a service with the tool stack loaded exits
    _client([*ours, "grep", "package", "--limit", "1"], env)   # the next call starts a lean one
    time.sleep(3)                           # past its idle trim
    idle = _status(ours, env)["memoryBytes"] / MIB
    figures["service resident memory after the calls: busy / trimmed / lean one idle after the shed (MB)"] = (
        round(status["memoryBytes"] / MIB, 1), round(trimmed, 1), round(idle, 1))
    budgets.append(("service memory idle (MB)", round(idle, 1), 80, "<="))


def _grep_rounds(ours: list[str], env: dict[str, str], docs: Path, rg: str | None, figures: dict[str, Any],
                 budgets: list[Any]) -> None:
    cpu, wall, rg_wall, ratios = [], [], [], []
    for word in WORDS:   # warm: the page cache, the service's caches
        _client([*ours, "grep", word, "--limit", "10"], env)
        if rg:
            subprocess.run([rg, "-i", "-l", "-F", word, str(docs)], capture_output=True)
    for i in range(ROUNDS):
        word = WORDS[i % len(WORDS)]
        w, c, _ = _client([*ours, "grep", word, "--limit", "10"], env)
        cpu.append(c)
        wall.append(w)
        if rg:
            t0 = time.perf_counter()
            subprocess.run([rg, "-i", "-l", "-F", word, str(docs)], capture_output=True)
            rg_wall.append((time.perf_counter() - t0) * 1000)
            ratios.append(w / rg_wall[-1])
    figures["grep client CPU (ms, median)"] = _median(cpu)
    figures["grep wall (ms, median)"] = _median(wall)
    python = str(Path(ours[0]).with_name("python")) if len(ours) == 1 else ours[0]
    floor = [_client([python, "-c", "pass"], env)[0] for _ in range(ROUNDS)]
    figures["the interpreter's own start, `python -c pass` (ms, median)"] = _median(floor)
    budgets.append(("grep client CPU (ms)", _median(cpu), 30, "<="))
    if rg:
        figures["rg -i -l -F wall (ms, median)"] = _median(rg_wall)
        budgets.append(("grep wall / rg wall (same round)", _median(ratios), 2.0, "<="))
    else:
        figures["rg"] = "not installed: the ratio is not measured"


def _tool_rounds(ours: list[str], env: dict[str, str], figures: dict[str, Any], budgets: list[Any]) -> None:
    for command in (["contacts", "search", "elodie", "--json"], ["whoami", "--json"],
                    ["files", "search", "--json", "--limit", "5"]):
        _client([*ours, *command], env)
        cpu = [_client([*ours, *command], env)[1] for _ in range(ROUNDS)]
        walls = [_client([*ours, *command], env)[0] for _ in range(3)]
        label = " ".join(command[:2])
        figures[f"{label}: client CPU / wall (ms, median)"] = (_median(cpu), _median(walls))
        budgets.append((f"{label} client CPU (ms)", _median(cpu), 150, "<="))


def _wait_exit(ours: list[str], env: dict[str, str], pid: int, timeout: float = SHED_S + 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _status(ours, env).get("pid") == pid:
        time.sleep(0.5)


def _first_after_exit(ours: list[str], env: dict[str, str], figures: dict[str, Any], budgets: list[Any]) -> None:
    for label, command in (("grep", ["grep", "package", "--limit", "10"]),
                           ("contacts search", ["contacts", "search", "elodie", "--json"]),
                           # the heaviest tool module to load (icalendar, recurring events, zones)
                           ("calendar list", ["calendar", "list", "--start", "2026-12-01", "--end", "2026-12-08",
                                              "--json"])):
        walls = []
        for _ in range(3):
            _client([*ours, "service", "stop"], env)
            time.sleep(0.3)
            walls.append(_client([*ours, *command], env)[0])
        figures[f"first {label} after the service exited, its start included (ms, median of 3)"] = _median(walls)
        budgets.append((f"first {label} after exit (s)", _median(walls) / 1000, 1.5, "<="))


def _two_serves(ours: list[str], env: dict[str, str], emu: Emulator, figures: dict[str, Any],
                budgets: list[Any]) -> None:
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=ours[0], args=[*ours[1:], "serve", "--interval", "1"], env=env,
                                   cwd=str(ROOT))
    names = [f"/Documents/bench-changed-{i}.txt" for i in range(5)]

    async def go() -> list[Any]:
        async with Client(params, mode="legacy") as one, Client(params, mode="legacy") as two:
            with http_client(emu) as http:
                for i, name in enumerate(names):
                    http.put(f"/remote.php/dav/files/alice{name}", content=f"quokkabench{i} changed\n".encode())
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                out = subprocess.run([*ours, "grep", "quokkabench4", "--json"], env=env, cwd=ROOT,
                                     capture_output=True, text=True).stdout
                if "bench-changed-4" in out:
                    break
                await anyio.sleep(0.5)
            await anyio.sleep(3)   # more sync periods of both serves
            return [await one.call_tool("files_grep", {"query": "quokkabench0"}),
                    await two.call_tool("files_grep", {"query": "quokkabench1"})]

    answers = anyio.run(go)
    assert all(not a.is_error for a in answers)
    gets = [r for r in emu.requests if r[0] == "GET" and "bench-changed-" in r[1]]
    per_file = max(sum(1 for r in gets if r[1].endswith(n.rsplit("/", 1)[1])) for n in names)
    figures["two serves + CLI: downloads of each changed file (max over 5 files)"] = per_file
    budgets.append(("downloads per changed file, two serves + CLI", per_file, 1, "<="))
