"""A long agent session's calls and what a process holds meanwhile (open files, resident memory): shared by the
leak tests of serve (stdio, HTTP) and of the team server, and by the soak in benchmarks/."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# The read tools an agent mixes in a long session; files_grep first (each used to keep two descriptors).
MIXED_READS: list[tuple[str, dict[str, Any]]] = [
    ("files_grep", {"query": "install", "limit": 2}),
    ("files_read", {"path": "/Documents/notes.txt", "limit": 400}),
    ("files_grep", {"query": "supplier budget", "limit": 2}),
    ("files_search", {"name": "notes", "limit": 3}),
    ("nextcloud_whoami", {}),
    ("files_read", {"path": "/Documents/notes.txt", "find": "install"}),
]


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def resident_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def held_files(pid: int) -> dict[str, int]:
    """What the open descriptors are, by file name (what a failed leak test prints)."""
    from collections import Counter

    names = Counter()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            names[os.readlink(f"/proc/{pid}/fd/{fd}").rsplit("/", 1)[-1]] += 1
        except OSError:
            pass
    return dict(names.most_common(6))


class Flat:
    """Open files and memory of some processes at the start and at the end of a run of calls: flat means open
    files within +5 of the start and memory grown by less than 10 MB (the start taken after a warm-up)."""

    FILES_SLACK, MEMORY_SLACK_MB = 5, 10.0

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {name: (open_files(pid), resident_mb(pid)) for name, pid in pids.items()}

    def grown(self) -> list[str]:
        """What grew past the slack, one line per process (empty: flat)."""
        out = []
        for name, pid in self.pids.items():
            files, memory = open_files(pid), resident_mb(pid)
            files0, memory0 = self.start[name]
            if files > files0 + self.FILES_SLACK or memory - memory0 >= self.MEMORY_SLACK_MB:
                out.append(f"{name}: open files {files0} -> {files}, memory {memory0:.1f} -> {memory:.1f} MB, "
                           f"holding {held_files(pid)}")
        return out
