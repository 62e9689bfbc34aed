"""Remote sync against the emulator: initial sync of a 2,000-file tree, a no-change resync, a one-file
change deep in the tree, and the client's overhead per request.

Request counts are exact and budgeted (no-change resync == 1 request, one deep
change <= depth + 2); times are printed next to them, never asserted, except
as a ratio measured in the same run (client stat vs a raw httpx PROPFIND).
"""
from __future__ import annotations

import random
import statistics
import time
from pathlib import Path

import httpx

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.indexer.remote.sync import sync
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.webdav import PROPFIND_BODY

from .conftest import report, summary, timed

SEED = 20261130
TOP, SUB, PER_FOLDER = 10, 10, 20                       # 10 x 10 folders x 20 files = 2,000 files
DEEP = ["deep", "l1", "l2", "l3", "l4", "l5"]           # a 6-level chain for the one-change case
FIXTURES = Path(__file__).resolve().parent.parent / "mcp_nextcloud" / "fixtures" / "docs"
WORDS = ("alpha beta gamma delta budget report meeting invoice contract roadmap quarterly sprint "
         "widget cable supplier review summary travel hardware software office notes plan").split()


def build_tree(emu: Emulator) -> int:
    """Create the tree server-side (state helpers propagate etags like the server); return the file count."""
    rng = random.Random(SEED)
    st = emu.state
    count = 0
    for t in range(TOP):
        st.mkdir("alice", f"/t{t:02d}")
        for s in range(SUB):
            folder = f"/t{t:02d}/s{s:02d}"
            st.mkdir("alice", folder)
            for f in range(PER_FOLDER):
                text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 200)))
                st.put_file("alice", f"{folder}/doc{f:02d}.txt", f"{folder} {f}\n{text}\n".encode())
                count += 1
    path = ""
    for name in DEEP:
        path += "/" + name
        st.mkdir("alice", path)
    st.put_file("alice", path + "/leaf.txt", b"the leaf at the bottom of the deep chain\n")
    count += 1
    if FIXTURES.is_dir():
        st.mkdir("alice", "/docs")
        for p in sorted(FIXTURES.iterdir()):
            if p.suffix in (".pdf", ".xlsx", ".docx", ".pptx", ".odt") and p.is_file():
                st.put_file("alice", f"/docs/{p.name}", p.read_bytes())
                count += 1
    return count


def test_sync_bench(tmp_path):
    with Emulator(seed="empty") as emu:
        total_files = build_tree(emu)
        account = Account(**emu.account("alice"))
        index = Index.open(tmp_path / "bench.db")
        with NextcloudClient(account) as client:
            emu.reset_requests()
            t0 = time.perf_counter()
            first = sync(client, index)
            initial_s = time.perf_counter() - t0
            initial_requests = emu.request_count()
            initial_propfinds = emu.request_count("PROPFIND")
            assert first.complete and first.indexed + first.failed == total_files

            # No change: exactly one request on the wire, timed over a few rounds.
            emu.reset_requests()
            resync_ms = timed(lambda: sync(client, index), repeat=5)
            resync_requests = emu.request_count() / 5

            # One file changed six folders down.
            depth = len(DEEP)
            emu.state.put_file("alice", "/" + "/".join(DEEP) + "/leaf.txt", b"the leaf changed\n")
            emu.reset_requests()
            t0 = time.perf_counter()
            one = sync(client, index)
            one_ms = (time.perf_counter() - t0) * 1000
            one_requests = emu.request_count()
            assert one.downloaded == 1

            # Client overhead per request: stat() vs the same PROPFIND sent with raw httpx.
            target = "/t03/s04/doc05.txt"
            url = f"{emu.url}/remote.php/dav/files/alice{target}"
            with httpx.Client(auth=(account.user, account.app_password)) as raw:
                def raw_propfind() -> None:
                    r = raw.request("PROPFIND", url, headers={"Depth": "0", "Content-Type": "application/xml"},
                                    content=PROPFIND_BODY)
                    assert r.status_code == 207
                raw_ms = timed(raw_propfind, repeat=200)
            stat_ms = timed(lambda: client.webdav.stat(target), repeat=200)
        index.close()

    overhead = statistics.median(stat_ms) / statistics.median(raw_ms)
    figures = {
        "files in tree": total_files,
        "folders in tree": TOP + TOP * SUB + len(DEEP) + 2,
        "initial sync seconds": round(initial_s, 2),
        "initial sync files/s": round(total_files / initial_s, 1),
        "initial sync requests": initial_requests,
        "initial sync PROPFINDs": initial_propfinds,
        "initial sync MB downloaded": round(first.bytes_downloaded / 1e6, 2),
        "no-change resync requests": resync_requests,
        "no-change resync ms": summary(resync_ms),
        f"one change at depth {depth}: requests": one_requests,
        f"one change at depth {depth}: ms": round(one_ms, 1),
        "client stat() ms": summary(stat_ms),
        "raw httpx PROPFIND ms": summary(raw_ms),
        "client overhead ratio (stat / raw)": round(overhead, 2),
    }
    budgets = [
        ("no-change resync requests", resync_requests, 1, "<="),
        ("one deep change requests (depth + 2)", one_requests, depth + 2, "<="),
        ("client stat / raw PROPFIND (same run)", overhead, 3.0, "<="),
    ]
    report("sync", figures, budgets)
    assert resync_requests == 1
    assert one_requests <= depth + 2
    assert overhead <= 3.0
