"""A team person's damaged index is answered with its cause and the step (issue 53), in the team's voice: the
person can neither move the server's files nor run its commands, and the index's path is the server's layout,
so the answer says to tell the administrator and names no path. The person's index is zeroed in its middle while
the team server and the person's index service run."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from tests.team.test_team_long_session import _meaning_built
from tests.team.test_team_oauth import _grep_until, connected


def _zero_middle(path: Path) -> None:
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    with open(path, "r+b") as f:    # in place: the service keeps this file (its inode) open
        f.seek(third)
        f.write(bytes(third))


def test_a_damaged_index_of_a_team_person_is_named_with_its_rebuild_step(team: dict[str, Any]) -> None:
    async def go() -> tuple[Any, Any]:
        async with connected(team, "alice") as client:
            await _grep_until(client, "supplier")
            await _meaning_built(team)
            index = next(p for p in team["state"].rglob("*.db") if "jobs" not in p.name)
            _zero_middle(index)
            return (await client.call_tool("files_grep", {"query": "supplier"}),
                    await client.call_tool("nextcloud_whoami", {}))

    grep, whoami = anyio.run(go)
    text = grep.content[0].text
    assert grep.is_error and "index of your files is damaged" in text and "administrator" in text, text
    assert "internal error" not in text and "index sync" not in text and str(team["state"]) not in text
    assert not whoami.is_error, whoami.content[0].text
