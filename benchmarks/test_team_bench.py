"""The team server's budgets (issue 39), on loopback with the emulator: 20 people (MCP_NEXTCLOUD_TEAM_BENCH_PEOPLE).

Measured, in this order:
1. the first person on a team server that just started, alone: the authorization flow (discovery to the first
   tool call, the person's approval on Nextcloud excluded; this client process's own first-use costs included),
   and the team service's resident memory once their first sync is done;
2. a second person alone: the flow on a warm server (wall time of the client, an upper bound of the server's:
   the sign-in page's reload pauses are left out), and grep p50 with nobody else busy;
3. the others signing in at once: their flows, and grep p50 while their first syncs run (each greps from their
   first call on, one grep every GREP_PAUSE_S, as an agent's calls come);
4. everyone idle: the team service's resident memory, and so the memory of an idle person (what each person past
   the first added), and the CPU the idle people cost (their background syncs, per minute).
"""
from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import anyio

from benchmarks.conftest import report
from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.team.serving import running_team
from tests.team.test_team_oauth import connected

PEOPLE = int(os.environ.get("MCP_NEXTCLOUD_TEAM_BENCH_PEOPLE", "20"))
GREPS = 20
GREP_PAUSE_S = 0.5
IDLE_WINDOW_S = 20.0


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")    # utime + stime


def _service_pids(runtime_log_folder: Path) -> list[int]:
    from tests.service.procs import _pid_of

    return [pid for sock in runtime_log_folder.glob("*.sock") if (pid := _pid_of(sock))]


class People:
    """The people's clients: their flows (less the sign-in page's reload pauses), greps."""

    def __init__(self, team: dict[str, Any], emu: Emulator) -> None:
        self.server: list[float] = []     # each flow, in the order they ended
        self.cpu: list[float] = []        # the server processes' CPU during each flow (alone: that flow's)
        self.grep_cpu: list[float] = []   # the server processes' CPU per grep (alone: that person's greps')
        self.pids = [team["proc"].pid]    # the team server, then its service once it runs
        self.greps: list[float] = []
        self._approvals: dict[str, float] = {}
        self._emu = emu
        self.team = {**team, "approve": self._approve}

    def _approve(self, login_url: str, user: str) -> None:
        t0 = time.perf_counter()
        self._emu.approve_login(user, login_url)
        self._approvals[user] = time.perf_counter() - t0

    async def person(self, user: str) -> None:
        slept: list[float] = []
        cpu0 = sum(_cpu_s(pid) for pid in self.pids)
        t0 = time.perf_counter()
        async with connected(self.team, user, slept=slept) as client:
            await client.call_tool("nextcloud_whoami", {})
            flow = time.perf_counter() - t0 - self._approvals.get(user, 0)
            self.server.append((flow - sum(slept)) * 1000)   # the browser's reload pauses are not server time
            self.cpu.append((sum(_cpu_s(pid) for pid in self.pids) - cpu0) * 1000)
            cpu1 = sum(_cpu_s(pid) for pid in self.pids)
            for _ in range(GREPS):
                t1 = time.perf_counter()
                result = await client.call_tool("files_grep", {"query": "supplier"})
                assert not result.is_error, result.content[0].text
                self.greps.append((time.perf_counter() - t1) * 1000)
                await anyio.sleep(GREP_PAUSE_S)
            self.grep_cpu.append((sum(_cpu_s(pid) for pid in self.pids) - cpu1) * 1000 / GREPS)

    def run(self, users: list[str]) -> None:
        async def everyone() -> None:
            async with anyio.create_task_group() as tg:
                for user in users:
                    tg.start_soon(self.person, user)

        anyio.run(everyone)


def _wait_synced(pid: int, seconds: float = 120.0) -> None:
    """Until the service's CPU stays still for 3 s (the first syncs done), at most `seconds`."""
    deadline, last = time.monotonic() + seconds, -1.0
    while time.monotonic() < deadline:
        now = _cpu_s(pid)
        if now - last < 0.05:
            return
        last = now
        time.sleep(3)


def test_team_budgets(monkeypatch: Any) -> None:
    monkeypatch.setenv("MCP_NEXTCLOUD_MEANING", "0")    # the process model's figures, not meaning builds'
    users = ["alice", "bob"] + [f"member{i}" for i in range(max(0, PEOPLE - 2))]
    with Emulator(new_accounts=users[2:]) as emu, running_team(emu.url, interval=60) as team:
        people = People(team, emu)
        people.run(users[:1])
        [service] = _service_pids(team["runtime"])      # one service for the whole team
        people.pids.append(service)
        _wait_synced(service)
        one_mb = _rss_mb(service)
        people.run(users[1:2])
        alone = people.greps[GREPS:]
        people.greps.clear()
        cpu_at = (_cpu_s(team["proc"].pid) + _cpu_s(service), time.process_time(), time.perf_counter())
        people.run(users[2:])
        cpu_used = (_cpu_s(team["proc"].pid) + _cpu_s(service) - cpu_at[0], time.process_time() - cpu_at[1],
                    time.perf_counter() - cpu_at[2])
        _wait_synced(service)
        assert _service_pids(team["runtime"]) == [service]
        all_mb = _rss_mb(service)
        cpu0 = _cpu_s(service)
        time.sleep(IDLE_WINDOW_S)
        idle_cpu_per_min = (_cpu_s(service) - cpu0) * 60 / IDLE_WINDOW_S
        server_mb = _rss_mb(team["proc"].pid)
    per_person = (all_mb - one_mb) / max(1, len(users) - 1)
    together = people.server[2:] or people.server[1:]
    figures = {"people": len(users),
               "first person's flow ms (fresh server and client; approval excluded)": round(people.server[0]),
               "a person alone, flow ms (warm server)": round(people.server[1]),
               "a person alone, the server processes' CPU ms during the flow": round(people.cpu[1]),
               f"{len(together)} people signing in at once, flow p50 ms": round(statistics.median(together)),
               "flow p90 ms, at once": round(statistics.quantiles(together, n=10)[-1]) if len(together) > 1 else None,
               "at once: server CPU s (team server + service), clients' CPU s (this process), wall s":
                   [round(v, 1) for v in cpu_used],
               "grep p50 ms, a person alone": round(statistics.median(alone), 1),
               "a person alone, the server processes' CPU ms per grep": round(people.grep_cpu[1], 1),
               f"grep p50 ms, {len(together)} people during their first syncs (one grep / {GREP_PAUSE_S:g} s each)":
                   round(statistics.median(people.greps), 1),
               "grep p90 ms, during the first syncs": round(statistics.quantiles(people.greps, n=10)[-1], 1),
               "team service RSS MB, one person": round(one_mb, 1),
               f"team service RSS MB, {len(users)} people idle": round(all_mb, 1),
               "idle person MB (each person past the first)": round(per_person, 2),
               f"idle CPU s per minute, {len(users)} people (syncs every 60 s)": round(idle_cpu_per_min, 2),
               "team server RSS MB": round(server_mb, 1),
               "load average (1 min, shared machine)": round(os.getloadavg()[0], 2)}
    report("team", figures, [
        ("authorization flow ms, a person alone", people.server[1], 2000, "<="),
        ("authorization flow p50 ms, signing in at once", statistics.median(together), 2000, "<="),
        ("grep p50 ms, during the first syncs", statistics.median(people.greps), 50, "<="),
        ("idle person MB", per_person, 30, "<=")])
