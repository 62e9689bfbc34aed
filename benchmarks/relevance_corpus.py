"""The issue's Debian corpus built once for the relevance benchmark: our keyword and meaning index, and Recoll's.

The meaning build of this corpus takes ~6 minutes on 2 cores, so the built
indexes are kept in a cache folder (MCP_NEXTCLOUD_RELEVANCE_CACHE, default
/tmp/mcp-nextcloud-relevance) and reused while its `built.json` is there: the
benchmark then measures ranking and latency only. Delete the folder to rebuild.

Run by hand (the benchmark calls the same): python3 -m benchmarks.relevance_corpus
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from benchmarks import debian_docs

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("MCP_NEXTCLOUD_RELEVANCE_CACHE", "/tmp/mcp-nextcloud-relevance"))


class Built:
    """Paths of a built corpus: the documents, our index, Recoll's configuration (None without recollindex)."""

    def __init__(self, cache: Path) -> None:
        self.cache = cache
        self.docs = cache / "corpus" / "docs"
        self.db = cache / "index.db"
        self.recoll = cache / "recoll"
        self.marker = cache / "built.json"

    def info(self) -> dict:
        return json.loads(self.marker.read_text()) if self.marker.exists() else {}


def _run(cmd: list[str]) -> float:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_SERVICE": "0"}
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed: {done.stderr[-2000:]}")
    return round(time.perf_counter() - t0, 1)


def build(cache: Path = CACHE) -> Built:
    """The corpus, our index (keyword + meaning) and Recoll's index in `cache`; reused when already built."""
    b = Built(cache)
    if b.marker.exists():
        return b
    cache.mkdir(parents=True, exist_ok=True)
    if not b.docs.exists():
        debian_docs.issue_corpus(cache / "corpus")
    load0 = os.getloadavg()[0]
    b.db.unlink(missing_ok=True)
    info = {"keyword_s": _run([sys.executable, "-m", "mcp_nextcloud", "index", "add", str(b.docs),
                               "--index", str(b.db)])}
    info["meaning_s"] = _run([sys.executable, "-m", "mcp_nextcloud.indexer.jobs.embed", "--index", str(b.db)])
    if shutil.which("recollindex"):
        from benchmarks.test_lean_bench import recoll_config

        info["recoll_s"] = _run(["recollindex", "-c", str(recoll_config(b.recoll, b.docs)), "-z"])
    info["load_at_start_end"] = [round(load0, 2), round(os.getloadavg()[0], 2)]
    b.marker.write_text(json.dumps(info))
    return b


if __name__ == "__main__":
    print(build().info())
