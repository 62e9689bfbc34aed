"""The team server on loopback signing people in to an emulator (alice, bob, admin); one per test module."""
from __future__ import annotations

from typing import Any, Iterator

import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.team.serving import running_team


@pytest.fixture(scope="module")
def team() -> Iterator[dict[str, Any]]:
    """{url, state, proc, log, emulator, approve(nextcloud_login_url, user)}."""
    with Emulator() as emulator, running_team(emulator.url) as team:
        yield {**team, "emulator": emulator, "approve": lambda login_url, user: emulator.approve_login(user, login_url)}
