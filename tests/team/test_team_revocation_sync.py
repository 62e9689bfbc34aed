"""A deleted app password met first by the person's background sync (issue 49): their next call is answered
"signed out" without sending that password again.

The team server here syncs every 2 s. After alice's app password is deleted in Nextcloud (the emulator), her
background sync is refused once; later rounds and her next call send nothing (the emulator counts one failed
login in all), and that call is answered "sign in again" from what the sync learned (her record of refused
credentials), not from the index.
"""
from __future__ import annotations

import time
from typing import Any, Iterator

import anyio
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.team.serving import diagnosis, running_team
from tests.team.test_team_oauth import Memory, _grep_until, _paths, connected
from tests.team.test_team_revocation import ADDRESS, _granted, _held, _says_sign_in_again

SYNC_S = 2


@pytest.fixture(scope="module")
def syncing_team() -> Iterator[dict[str, Any]]:
    with Emulator() as emulator, running_team(emulator.url, interval=SYNC_S) as team:
        yield {**team, "emulator": emulator, "approve": lambda login_url, user: emulator.approve_login(user, login_url)}


def _attempts_settle(emulator: Any, before: int, within: float = 60.0) -> int:
    """Failed logins since `before`, once the sync met the deleted password and a few more rounds passed."""
    deadline = time.monotonic() + within
    while emulator.bruteforce.attempts(ADDRESS) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3 * SYNC_S)             # rounds that must not send it again
    return emulator.bruteforce.attempts(ADDRESS) - before


def test_a_refusal_the_background_sync_met_signs_the_person_out_at_their_next_call(
        syncing_team: dict[str, Any]) -> None:
    team, emulator = syncing_team, syncing_team["emulator"]

    async def run() -> tuple[Any, int, int, bool]:
        async with connected(team, "alice", Memory()) as client:
            found = await _grep_until(client, "supplier")
            assert _paths(found), diagnosis(team, found)
            login, password = _granted(team, "alice")
            before = emulator.bruteforce.attempts(ADDRESS)
            assert emulator.state.delete_app_password(login, password)
            by_sync = await anyio.to_thread.run_sync(_attempts_settle, emulator, before)
            result = await client.call_tool("files_grep", {"query": "supplier"})
            return result, by_sync, emulator.bruteforce.attempts(ADDRESS) - before, _held(team, "alice")

    result, by_sync, failed, held = anyio.run(run)
    assert by_sync == 1, f"the background sync cost {by_sync} failed logins"
    text = _says_sign_in_again(result)
    assert "/Projects/Alpha/notes.md" not in text, text
    assert failed == 1, f"{failed} failed logins in Nextcloud for one deleted app password"
    assert not held
