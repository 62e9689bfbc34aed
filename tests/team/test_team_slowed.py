"""Nextcloud's brute-force delay slowing the team server's address (issue 49): said as such, to the person and
in the log, with the count.

Everyone's calls reach Nextcloud from the team server's one address. Before it refuses the address (429:
test_team_throttle.py), Nextcloud slows every request from it that carries credentials, correct ones included,
for the failed logins from it in the last 30 minutes (0.1 s * 2^attempts on a real server; the emulator's unit
is scaled down, with its cap over alice's best-effort budget here). On the emulator, bob deletes the team
server's app password and calls (one failed login, recorded by the server), a stranger fails a few logins more,
and alice greps: her look at what changed waits past its budget, so the grep answers from the index and says
why (the brute-force delay, the administrator's allowlist), never blaming her password; the log says it too.
"""
from __future__ import annotations

import json
from typing import Any, Iterator

import httpx
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from tests.server.test_hostile_serve import _result, _rpc, _session
from tests.team.serving import diagnosis, running_team
from tests.team.test_team_hostile import _grep, _token
from tests.team.test_team_revocation import ADDRESS, _granted, _held

BEST_EFFORT_S = "0.1"      # alice's look at what changed waits this long (the emulator's delay cap: 0.25 s)


@pytest.fixture(scope="module")
def team() -> Iterator[dict[str, Any]]:
    """The team server on an emulator, every grep looking at what changed (no freshness interval)."""
    env = {"MCP_NEXTCLOUD_BEST_EFFORT_S": BEST_EFFORT_S, "MCP_NEXTCLOUD_FRESHNESS_S": "0"}
    with Emulator() as emulator, running_team(emulator.url, env=env) as team:
        yield {**team, "emulator": emulator, "approve": lambda login_url, user: emulator.approve_login(user, login_url)}


def _signed_in(team: dict[str, Any], user: str, word: str) -> dict[str, str]:
    """`user`'s MCP session headers, once their index finds `word`."""
    _, tokens = _token(team, user)
    headers = _session(team["url"] + "/mcp", tokens["access_token"])
    found = _grep(team["url"], headers, word, within=120)
    assert found.get("hits"), diagnosis(team, found)
    return headers


def _call(team: dict[str, Any], headers: dict[str, str], name: str, args: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(team["url"] + "/mcp", json=_rpc("tools/call", {"name": name, "arguments": args}, 9),
                      headers=headers, timeout=120)
    assert resp.status_code == 200, resp.text
    return dict(_result(resp)["result"])


def test_a_slowed_address_is_named_to_the_person_and_in_the_log(team: dict[str, Any]) -> None:
    emulator = team["emulator"]
    bob = _signed_in(team, "bob", "coffee")
    alice = _signed_in(team, "alice", "supplier")
    login, password = _granted(team, "bob")
    assert emulator.state.delete_app_password(login, password)
    refused = _call(team, bob, "files_read", {"path": "/Notes/groceries.txt"})
    assert refused["structuredContent"]["error"]["code"] == "signed_out", refused
    for _ in range(6):      # a stranger's failed logins: with bob's, Nextcloud now slows the address past 0.1 s
        emulator.bruteforce.failed(ADDRESS, "mallory")
    assert not emulator.bruteforce.blocked(ADDRESS) and emulator.bruteforce.delay_s(ADDRESS) > float(BEST_EFFORT_S)
    try:
        grep = _call(team, alice, "files_grep", {"query": "supplier"})
        held = _held(team, "alice")
    finally:
        emulator.bruteforce.reset(ADDRESS)      # `occ security:bruteforce:reset`
    answer = grep["structuredContent"]
    warnings = " ".join(answer.get("warnings") or [])
    assert not grep.get("isError") and answer["hits"], json.dumps(answer)[:2000]
    assert "brute-force protection slows every request from this server's address" in warnings, warnings
    assert "allowlist" in warnings and "did not answer within" in warnings, warnings
    for blame in ("Fix the app password", "fix the app password", "mcp-nextcloud login", "NEXTCLOUD_APP_PASSWORD",
                  "Signed out", "a login of this account"):
        assert blame not in warnings, warnings
    assert held, "a slowed call signed the person out"
    log = team["log"].read_text(errors="replace")
    slowed = [line for line in log.splitlines() if "Nextcloud slowed" in line]
    assert slowed and all("allowlist" in line and "time(s) since" in line for line in slowed), log[-3000:]
    assert any("a call of files_grep" in line for line in slowed), slowed
    assert password not in log
