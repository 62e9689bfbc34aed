"""A long session on the team server never runs out (issue 53): a signed-in person's 200 read calls leave the
team server and the person's index service with the open files and the memory they had after a warm-up."""
from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.service.long_session import MIXED_READS, Flat
from tests.service.procs import _pid_of
from tests.team.test_team_oauth import _grep_until, connected

CALLS, WARM_UP = 200, 24
pytestmark = pytest.mark.timeout(600)


async def _meaning_built(team: dict[str, Any], within: float = 300.0) -> None:
    """Wait until every indexed file of the person's index is embedded (read from the index file itself)."""
    from mcp_nextcloud.indexer.index import Index

    indexes = [p for p in team["state"].rglob("*.db") if "jobs" not in p.name]
    assert indexes, sorted(str(p) for p in team["state"].rglob("*"))
    deadline = anyio.current_time() + within
    while True:
        with Index.open(indexes[0]) as index:
            meaning = index.status()["meaning"]
        if meaning["of"] and meaning["complete"] >= meaning["of"]:
            return
        assert anyio.current_time() < deadline, meaning
        await anyio.sleep(0.5)


def test_200_reads_of_a_team_person_leave_the_server_and_their_service_flat(team: dict[str, Any]) -> None:
    async def go() -> list[str]:
        async with connected(team, "alice") as client:
            await _grep_until(client, "supplier")          # the person's first sync is done
            await _meaning_built(team)                      # and its meaning layer (a build's memory is no leak)
            for i in range(WARM_UP):
                name, args = MIXED_READS[i % len(MIXED_READS)]
                await client.call_tool(name, args)
            services = {f"service {sock.stem[:8]}": _pid_of(sock) for sock in team["runtime"].glob("*.sock")}
            assert services and all(services.values()), services
            flat = Flat({"team server": team["proc"].pid, **services})
            for i in range(CALLS):
                name, args = MIXED_READS[i % len(MIXED_READS)]
                result = await client.call_tool(name, args)
                assert not result.is_error, (name, result.content[0].text[:300])
            return flat.grown()

    grown = anyio.run(go)
    assert not grown, grown
