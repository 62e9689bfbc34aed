"""The relevance corpus as a Nextcloud account's files, for the agent harness (benchmarks/test_agent_harness_bench.py).

files_grep over MCP answers only files that map to the account (rows.account_clause), and files_read stats
every file on the server first, so serve must see the 1,550 Debian files as alice's files on a server. The
emulator (a real HTTP server, in this process) gets the corpus folder under alice's root, at the same paths
the relevance index uses ("/debian-handbook/html/en-US/..."), so relevance_set's patterns hold unchanged.
The index serve answers from is built by the product's own remote sync (indexer.remote.sync over WebDAV, as
`mcp-nextcloud index sync` runs it) and the meaning build (`python -m mcp_nextcloud.indexer.jobs.embed`).

Why not the cheaper-looking way, the relevance index.db served as a desktop-client sync folder of an emulator
account: files_read stats every file on the server before reading it (server/tools/files/resolve.py), and
files_grep drops the hits whose fileIds the server does not have (server/tools/files/freshness.drop_deleted),
so the server must hold the 1,550 files either way, and the sync folder's journal would have to carry the
emulator's fileIds and etags. The remote sync gives the same index through the product's own path, once.

That build costs ~1 min of sync and ~6 min of meaning on 2 cores, so it is kept in
$MCP_NEXTCLOUD_RELEVANCE_CACHE/agent/ (index.db + built.json), keyed by the corpus's manifest (paths and
sizes). A kept index matches a new emulator exactly: fileids come in the order the files are put (sorted
paths on the `empty` seed), and the etags are set from each file's path and bytes (the emulator's are random
per run), so serve sees an account that has not changed since its last sync and reads no file again.
The key does not cover the product's extraction or meaning model: after a change there, delete agent/.

Run by hand: python3 -m benchmarks.agent_corpus   (builds the cache; the docs come from relevance_corpus)
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import relevance_corpus

ROOT = Path(__file__).resolve().parents[1]
USER = "alice"
MTIME = 1_700_000_000.0       # every corpus file's mtime on the server: "long before the last sync"


def corpus_files(docs: Path) -> list[tuple[str, Path]]:
    """(account path, local file) for every file of the corpus folder, sorted: the order fixes the fileids."""
    out = []
    for f in sorted(docs.rglob("*")):
        if f.is_file() and not f.is_symlink():
            out.append(("/" + f.relative_to(docs).as_posix(), f))
    return out


def manifest(files: list[tuple[str, Path]]) -> str:
    h = hashlib.sha256()
    for path, f in files:
        h.update(f"{path}\0{f.stat().st_size}\n".encode())
    return h.hexdigest()[:16]


def _etag(path: str, data: bytes, digits: int) -> str:
    return hashlib.sha256(path.encode() + b"\0" + data).hexdigest()[:digits]


def load(emulator: Any, docs: Path) -> int:
    """Put the corpus under alice's root of a running `empty`-seed emulator, with etags from path and bytes."""
    state = emulator.state
    files = corpus_files(docs)
    with state.lock:
        made: set[str] = set()
        for path, f in files:
            folder = path.rsplit("/", 1)[0]
            if folder and folder not in made:
                state.makedirs(USER, folder)
                made.add(folder)
            state.put_file(USER, path, f.read_bytes(), MTIME)
        # Stable etags: a file's from its path and bytes, a folder's from its children's (as Nextcloud propagates).
        def settle(node: Any, path: str) -> str:
            if not node.is_dir:
                node.etag = _etag(path, node.data, 32)
                return node.etag
            inner = "".join(settle(c, f"{path.rstrip('/')}/{name}") for name, c in sorted(node.children.items()))
            node.etag = _etag(path, inner.encode(), 13)
            return node.etag

        settle(state.root(USER), "/")
    return len(files)


class AgentIndex:
    """The cached index serve answers from: `db`, and its marker `built.json`."""

    def __init__(self, cache: Path) -> None:
        self.dir = cache / "agent"
        self.db = self.dir / "index.db"
        self.marker = self.dir / "built.json"

    def info(self) -> dict:
        return json.loads(self.marker.read_text()) if self.marker.exists() else {}


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_SERVICE": "0"})
    return env


def build(built: relevance_corpus.Built, emulator: Any) -> AgentIndex:
    """alice's synced index (keyword + meaning) of the corpus the running `emulator` serves; reused when kept."""
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    agent = AgentIndex(built.cache)
    key = manifest(corpus_files(built.docs))
    if agent.info().get("manifest") == key and agent.db.exists():
        return agent
    agent.dir.mkdir(parents=True, exist_ok=True)
    for f in agent.dir.glob("index.db*"):
        f.unlink()
    agent.marker.unlink(missing_ok=True)
    load0 = os.getloadavg()[0]
    creds = emulator.account(USER)
    account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
    t0 = time.perf_counter()
    with Index.open(agent.db) as index, NextcloudClient(account) as client:
        report = sync(client, index)
    info: dict[str, Any] = {"manifest": key, "sync_s": round(time.perf_counter() - t0, 1),
                            "sync": {k: v for k, v in report.to_dict().items() if isinstance(v, (int, bool))}}
    if not report.complete:
        raise RuntimeError(f"the sync of the corpus did not complete: {report.to_dict()}")
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud.indexer.jobs.embed", "--index", str(agent.db)],
                          env=_env(), cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"the meaning build failed: {done.stderr[-2000:]}")
    info["meaning_s"] = round(time.perf_counter() - t0, 1)
    info["load_at_start_end"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    agent.marker.write_text(json.dumps(info))
    return agent


def serving(docs: Path) -> Any:
    """A started `empty`-seed emulator holding the corpus as alice's files (stop it when done)."""
    from mcp_nextcloud.fixtures.emulator.server import Emulator

    emu = Emulator(seed="empty").start()
    try:
        load(emu, docs)
    except BaseException:
        emu.stop()
        raise
    return emu


if __name__ == "__main__":
    b = relevance_corpus.Built(relevance_corpus.CACHE)
    if not b.docs.exists():
        raise SystemExit(f"no corpus at {b.docs}: run python3 -m benchmarks.relevance_corpus first")
    emu = serving(b.docs)
    try:
        print(build(b, emu).info())
    finally:
        emu.stop()
