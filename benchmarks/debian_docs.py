"""Real documents for benchmarks: Debian packages fetched with `apt-get download` and unpacked with dpkg-deb.

One owner for the download-and-unpack step and for the issue's corpus (issues 24 and 25: ~37 M
characters of Debian documentation in English, French and German, manuals, HTML, PDF, JSON and CSV;
the meaning benchmark's real corpus and the service benchmark's grep-vs-ripgrep ratio both use it).
`.gz` files are decompressed so a peer (ripgrep, recollindex) reads the same bytes we do; symlinks are skipped
(Debian's FAQ packages link their pages to one another). Skips the calling test
when apt-get or dpkg-deb is missing or downloads nothing (no network, no apt lists).
"""
from __future__ import annotations

import gzip
import os
import re
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


# The issue's corpus: Debian's documentation packages in English, French and German: debian-reference,
# developers-reference, maint-guide, debian-faq (three languages each), debian-handbook and harden-doc (their
# en-US, fr-FR, de-DE books), debian-policy, apt-doc, debian-history, the Python 3.11 manual (English),
# iso-codes (JSON) and distro-info-data (CSV): 1,550 files, 35.6 M characters, 94.8 MB.
ISSUE_PACKAGES = os.environ.get("MCP_NEXTCLOUD_REAL_DOCS", (
    "debian-reference-en debian-reference-fr debian-reference-de developers-reference developers-reference-fr "
    "developers-reference-de maint-guide maint-guide-fr maint-guide-de debian-faq debian-faq-fr debian-faq-de "
    "debian-policy apt-doc debian-history debian-handbook harden-doc python3.11-doc iso-codes distro-info-data",
)[0]).split()   # MCP_NEXTCLOUD_REAL_DOCS: other packages (a quick run on a few)
ISSUE_ROOTS = {"usr/share/doc": "", "usr/share/debian-reference": "debian-reference",
               "usr/share/developers-reference": "developers-reference", "usr/share/iso-codes/json": "iso-codes",
               "usr/share/distro-info": "distro-info"}
SUFFIXES = {".html", ".txt", ".pdf", ".json", ".csv"}     # epub: the reader does not open it (said, not indexed)
# Books in other languages (handbook/harden-doc folders, name.xx.html files) and the Python manual's duplicates.
_OTHER = re.compile(r"/(ar-MA|ca-ES|cs-CZ|da-DK|el-GR|es-ES|fa-IR|hr-HR|id-ID|it-IT|ja-JP|ko-KR|nb-NO|nl-NL|pl-PL|"
                    r"pt-BR|ro-RO|ru-RU|sv-SE|tr-TR|vi-VN|zh-CN|zh-TW)/|\.(es|it|ja|ko|lt|nl|pl|pt|ru|zh-cn|zh-tw)"
                    r"\.[a-z]+$|/_sources/|/_static/|/genindex")


def _in_issue_corpus(rel: Path) -> bool:
    return rel.suffix in SUFFIXES and not _OTHER.search("/" + str(rel))


def issue_corpus(into: Path) -> Path:
    """The issue's corpus downloaded and unpacked into `into`/docs (returned); skips the test when impossible."""
    return corpus(into, ISSUE_PACKAGES, ISSUE_ROOTS, _in_issue_corpus)
