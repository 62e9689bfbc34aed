"""Shared test set-up: the Nextcloud emulator fixtures and paths to the sample files.

`fixtures.emulator.testing` (owned by the emulator) defines the pytest
fixtures `emulator` (a fresh emulator per test, seeded with the sample
documents) and friends; they are loaded here so every test package can use
them.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DOCS = ROOT / "fixtures" / "docs"
FIXTURE_BAD = ROOT / "fixtures" / "bad"
SHARED = ROOT.parent / "shared"
RECORDINGS = SHARED / "nextcloud-34"

pytest_plugins = ["fixtures.emulator.testing"]

# The CLI and serve processes tests start run in their own process unless a test asks for the index service
# (tests/server/test_cli_service.py does, and compares both ways): no test leaves a service behind it, and
# one that starts it anyway (an environment built from scratch) sees it go soon.
os.environ.setdefault("MCP_NEXTCLOUD_SERVICE", "0")
os.environ.setdefault("MCP_NEXTCLOUD_SERVICE_IDLE_S", "30")


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
