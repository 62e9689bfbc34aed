"""Real documents for benchmarks: Debian packages fetched with `apt-get download` and unpacked with dpkg-deb.

One owner for the download-and-unpack step (the service benchmark's corpus and the
meaning benchmark's real corpus both use it). `.gz` files are decompressed so a
peer (ripgrep, recollindex) reads the same bytes we do; symlinks are skipped
(Debian's FAQ packages link their pages to one another). Skips the calling test
when apt-get or dpkg-deb is missing or downloads nothing (no network, no apt lists).
"""
from __future__ import annotations

import gzip
import shutil
import subprocess
from pathlib import Path
from typing import Callable

import pytest


def unpack(packages: list[str], into: Path) -> Path:
    """Download `packages` into `into`/debs and extract them all into `into`/raw (returned); skip if impossible."""
    if not shutil.which("apt-get") or not shutil.which("dpkg-deb"):
        pytest.skip("apt-get/dpkg-deb are not here: no Debian documentation to index")
    debs = into / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["apt-get", "download", *packages], cwd=debs, capture_output=True, text=True, timeout=600)
    got = sorted(debs.glob("*.deb"))
    if not got:
        pytest.skip(f"apt-get download {' '.join(packages)} gave nothing: {done.stderr.strip()[-300:]}")
    raw = into / "raw"
    for deb in got:
        subprocess.run(["dpkg-deb", "-x", str(deb), str(raw)], check=True, timeout=300)
    return raw


def copy_tree(raw: Path, roots: dict[str, str], docs: Path, keep: Callable[[Path], bool] | None = None) -> Path:
    """Copy the regular files under `raw`/root into `docs`/folder for each root: folder (paths kept; .gz decompressed).

    keep(path relative to `docs`, .gz suffix already dropped) chooses files; None keeps all.
    """
    for root, folder in roots.items():
        base = raw / root
        for path in sorted(base.rglob("*")):
            if not path.is_file() or path.is_symlink():
                continue
            rel = Path(folder) / path.relative_to(base)
            rel = rel.with_suffix("") if path.suffix == ".gz" else rel
            if keep is not None and not keep(rel):
                continue
            target = docs / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = path.read_bytes()
            target.write_bytes(gzip.decompress(data) if path.suffix == ".gz" else data)
    return docs


def corpus(into: Path, packages: list[str], roots: dict[str, str] | None = None,
           keep: Callable[[Path], bool] | None = None) -> Path:
    """`packages` downloaded, unpacked and copied into `into`/docs (returned), as copy_tree() says."""
    return copy_tree(unpack(packages, into), roots or {"usr/share/doc": ""}, into / "docs", keep)
