"""Each service test has its own runtime folder (short, under /tmp: a Unix socket path holds ~100 bytes), its own
index and account folders, and stops every service it started."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.service.procs import _pid_of, with_suppress_kill


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
    acct = emulator.account("alice")
    out = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    out.update({"NEXTCLOUD_URL": acct["url"], "NEXTCLOUD_USER": acct["user"],
                "NEXTCLOUD_APP_PASSWORD": acct["app_password"], "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"),
                "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CACHE_HOME": str(tmp_path / "cache"),
                "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_RUNTIME_DIR": str(runtime),
                "MCP_NEXTCLOUD_SERVICE": "1", "MCP_NEXTCLOUD_SERVICE_IDLE_S": "60"})
    return out


