"""Each service test has its own runtime folder (short, under /tmp: a Unix socket path holds ~100 bytes), its own
index and account folders, and stops every service it started."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.service.procs import _pid_of, alice_env, with_suppress_kill


@pytest.fixture
def runtime() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="svc", dir="/tmp"))
    yield folder
    for sock in (folder / "mcp-nextcloud").glob("*.sock") if (folder / "mcp-nextcloud").is_dir() else []:
        pid = _pid_of(sock)
        if pid:
            with_suppress_kill(pid)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def env(tmp_path: Path, runtime: Path, emulator: Emulator) -> dict[str, str]:
    return alice_env(emulator, tmp_path, runtime, MCP_NEXTCLOUD_SERVICE="1", MCP_NEXTCLOUD_SERVICE_IDLE_S="60")


