"""Shared test set-up: the Nextcloud emulator fixtures and paths to the sample files.

`fixtures.emulator.testing` (owned by the emulator) defines the pytest
fixtures `emulator` (a fresh emulator per test, seeded with the sample
documents) and friends; they are loaded here so every test package can use
them.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DOCS = ROOT / "mcp_nextcloud" / "fixtures" / "docs"
FIXTURE_BAD = ROOT / "mcp_nextcloud" / "fixtures" / "bad"
SHARED = ROOT.parent / "shared"
RECORDINGS = SHARED / "nextcloud-34"

pytest_plugins = ["mcp_nextcloud.fixtures.emulator.testing"]

# The CLI and serve processes tests start run in their own process unless a test asks for the index service
# (tests/server/test_cli_service.py does, and compares both ways): no test leaves a service behind it, and
# one that starts it anyway (an environment built from scratch) sees it go soon.
os.environ.setdefault("MCP_NEXTCLOUD_SERVICE", "0")
os.environ.setdefault("MCP_NEXTCLOUD_SERVICE_IDLE_S", "30")
# Tests that build their environment without MCP_NEXTCLOUD_* use the service: its sockets go to a runtime folder
# of this session (short: a socket path holds ~100 bytes), and every service in it is stopped at the end.
_RUNTIME = tempfile.mkdtemp(prefix="mcpt", dir="/tmp")
os.environ["XDG_RUNTIME_DIR"] = _RUNTIME


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    import shutil
    import subprocess
    import sys

    subprocess.run([sys.executable, "-m", "mcp_nextcloud", "service", "stop", "--all"], cwd=ROOT, capture_output=True,
                   timeout=60, env={**os.environ, "XDG_RUNTIME_DIR": _RUNTIME})
    shutil.rmtree(_RUNTIME, ignore_errors=True)


@pytest.fixture(scope="session")
def fixture_docs() -> Path:
    return FIXTURE_DOCS


@pytest.fixture(scope="session")
def fixture_bad() -> Path:
    return FIXTURE_BAD


@pytest.fixture(scope="session")
def recordings() -> Path:
    """The real Nextcloud 34 recordings; tests that need them skip where they are absent."""
    if not RECORDINGS.is_dir():
        pytest.skip("../shared/nextcloud-34 is not here (a user's fresh clone has no shared/)")
    return RECORDINGS
