"""Nextcloud's brute-force protection throttling the team server's address (issue 49): said as such, contained.

Everyone's calls reach Nextcloud from the team server's one address, so failed logins from it (anyone's) make
Nextcloud refuse every request from it, correct passwords included (429). On the emulator, a stranger's failed
logins lock the address out while alice is signed in: her read is answered with the throttle and the
administrator's fix (the brute-force IP allowlist), never with advice about her password or signing in again;
she stays signed in; the team server's log says it with a count; once the address is reset, her calls work.
"""
from __future__ import annotations

from typing import Any

import anyio

from tests.team.test_team_oauth import Memory, _json, connected
from tests.team.test_team_revocation import _held

ADDRESS = "127.0.0.1"     # the team server's address, as Nextcloud (the emulator) sees it


def _lock_out(emulator: Any) -> None:
    """Failed logins of somebody else from the team server's address, past Nextcloud's limit."""
    from mcp_nextcloud.fixtures.emulator.bruteforce import MAX_ATTEMPTS

    for _ in range(MAX_ATTEMPTS + 1):
        emulator.bruteforce.failed(ADDRESS, "mallory")
    assert emulator.bruteforce.blocked(ADDRESS)


def _not_blamed_on_the_password(text: str) -> None:
    assert "brute-force" in text and "allowlist" in text and "team server's" in text, text
    for blame in ("Fix the app password", "mcp-nextcloud login", "NEXTCLOUD_APP_PASSWORD", "Signed out"):
        assert blame not in text, text


def test_a_throttled_address_is_named_to_the_person_and_in_the_log(team: dict[str, Any]) -> None:
    emulator = team["emulator"]

    async def run() -> tuple[Any, dict[str, Any], bool, Any]:
        async with connected(team, "alice", Memory()) as client:
            _lock_out(emulator)      # after the sign-in, before her first call (and the server's first check)
            try:
                read = await client.call_tool("files_read", {"path": "/Projects/Alpha/notes.md"})
                grep = _json(await client.call_tool("files_grep", {"query": "supplier"}))
                held = _held(team, "alice")
            finally:
                emulator.bruteforce.reset(ADDRESS)      # `occ security:bruteforce:reset`
            again = await client.call_tool("files_read", {"path": "/Projects/Alpha/notes.md"})
            return read, grep, held, again

    read, grep, held, again = anyio.run(run)
    text = read.content[0].text
    assert read.is_error and read.structured_content["error"]["code"] == "throttled", text
    _not_blamed_on_the_password(text)
    _not_blamed_on_the_password(" ".join(grep.get("warnings") or []))
    assert held, "a throttled check signed the person out"
    assert not again.is_error and "blue cable" in again.content[0].text, again.content[0].text
    log = team["log"].read_text(errors="replace")
    throttled = [line for line in log.splitlines() if "Nextcloud throttled" in line]
    assert throttled and all("allowlist" in line and "time(s) since" in line for line in throttled), log[-3000:]
    # the server's own check of her password (her first call) met the 429 too: said, not dropped in silence
    assert any("check of a person's app password" in line for line in throttled), throttled
    assert any("a call of files_read" in line for line in throttled), throttled
