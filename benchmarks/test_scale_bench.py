"""Selective sync on an account too big to mirror: 200,000 files, of which one folder matters.

The emulator holds a generated tree (an archive of photos by day, plus a work
folder of 2,000 text files in 40 folders); the index is told to include only
/Work. The sync runs in a child process so its peak memory is its own (the
emulator lives in this process). Figures: requests, seconds and peak RSS of
the first selective sync and of a no-change resync, and the folders never
listed. The run fails only on request counts (deterministic).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from benchmarks.conftest import report
from mcp_nextcloud.fixtures.emulator.server import Emulator

ROOT = Path(__file__).resolve().parents[1]
N_FILES = int(os.environ.get("MCP_NEXTCLOUD_SCALE_FILES", "200000"))
WORK_FOLDERS, WORK_FILES = 40, 2_000

CHILD = textwrap.dedent("""
    import json, sys, time
    from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.store import selection as sel
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account
    def peak_mb():
        # VmHWM: this process image's own peak (ru_maxrss would carry the forking parent's over exec).
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return -1.0
    account, index_path = json.loads(sys.argv[1]), sys.argv[2]
    with Index.open(index_path) as index, NextcloudClient(Account(**account)) as client:
        sel.save(index, sel.Selection.of(include=["/Work"]))
        t0 = time.perf_counter()
        first = sync(client, index, pool=IN_PROCESS)
        t1 = time.perf_counter()
        again = sync(client, index, pool=IN_PROCESS)
        t2 = time.perf_counter()
    print(json.dumps({"first": first.to_dict(), "first_s": t1 - t0, "again": again.to_dict(), "again_s": t2 - t1,
                      "peak_rss_mb": peak_mb()}))
""")


def _populate(emu: Emulator) -> int:
    """The generated tree: photos by year/month/day under /Archive, text files under /Work."""
    state, made = emu.state, 0
    photos = N_FILES - WORK_FILES
    per_day = 50
    for d in range(photos // per_day + 1):
        folder = f"/Archive/{2000 + d // 372}/{(d // 31) % 12 + 1:02d}/{d % 31 + 1:02d}"
        state.makedirs("alice", folder)
        for i in range(min(per_day, photos - made)):
            state.put_file("alice", f"{folder}/IMG_{d:05d}_{i:02d}.jpg", b"\xff\xd8\xff")
            made += 1
    for f in range(WORK_FOLDERS):
        state.makedirs("alice", f"/Work/project-{f:02d}")
        for i in range(WORK_FILES // WORK_FOLDERS):
            state.put_file("alice", f"/Work/project-{f:02d}/note-{i:03d}.txt",
                           f"Project {f} note {i}: the budget review mentions item {i * 7}.\n".encode())
            made += 1
    return made


def test_selective_sync_of_a_huge_account(tmp_path: Path) -> None:
    with Emulator(seed="empty") as emu:
        t0 = time.perf_counter()
        files = _populate(emu)
        populate_s = time.perf_counter() - t0
        folders_total = sum(1 for n in emu.state.root("alice").walk() if n.is_dir)
        emu.reset_requests()
        out = subprocess.run([sys.executable, "-c", CHILD, json.dumps(emu.account("alice")),
                              str(tmp_path / "index.db")], capture_output=True, text=True, timeout=1800,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0, out.stderr[-2000:]
        figures = json.loads(out.stdout.strip().splitlines()[-1])
        listed = {p for m, p, _ in emu.requests if m == "PROPFIND"}
    first, again = figures["first"], figures["again"]
    report("scale: selective sync", {
        "files in the account": files,
        "folders in the account": folders_total,
        "emulator tree generated in s": round(populate_s, 1),
        "selection": "include /Work",
        "first sync: requests": first["requests"],
        "first sync: folders listed (PROPFIND)": first["propfinds"],
        "first sync: files indexed": first["indexed"],
        "first sync: seconds": round(figures["first_s"], 2),
        "no-change resync: requests": again["requests"],
        "no-change resync: seconds": round(figures["again_s"], 4),
        "sync process peak RSS MB": round(figures["peak_rss_mb"], 1),
        "folders never listed": folders_total - len(listed),
    }, [
        ("first sync PROPFINDs (root + /Work + its folders)", first["propfinds"], 2 + WORK_FOLDERS, "<="),
        ("no-change resync requests", again["requests"], 1, "<="),
    ])
    assert first["indexed"] == WORK_FILES and first["propfinds"] == 2 + WORK_FOLDERS
    assert again["requests"] == 1
