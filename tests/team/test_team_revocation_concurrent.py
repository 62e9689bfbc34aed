"""Several calls of one person at once, just after they deleted the team server's app password (issue 49): one
failed login in Nextcloud for all of them, and every answer says signed out.

On the emulator (a real HTTP server with Nextcloud's brute-force count): alice signs in and her index syncs; her
app password is deleted as she does in Settings > Security, and a moment later her client sends four reads side
by side. Nextcloud must see that password once: the first request refused is the person's refusal, shared by
the others still in flight or about to go, which send nothing. Each answer is the team's "signed out", or, for
a call that arrives after the sign-out, the team server's own 401 (its token is revoked with the password).
"""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from tests.server.test_hostile_serve import _result, _rpc, _session
from tests.team.serving import diagnosis
from tests.team.test_team_hostile import _grep, _token
from tests.team.test_team_revocation import ADDRESS, _granted, _held

CALLS = 4


def _read(url: str, headers: dict[str, str], rid: int) -> tuple[int, dict[str, Any]]:
    """(HTTP status, the JSON-RPC result of a files_read, or {} when the team server refused the request)."""
    resp = httpx.post(url + "/mcp", json=_rpc("tools/call", {"name": "files_read",
                                                             "arguments": {"path": "/Projects/Alpha/notes.md"}}, rid),
                      headers=headers, timeout=120)
    return resp.status_code, (_result(resp)["result"] if resp.status_code == 200 else {})


def test_calls_side_by_side_after_the_deletion_cost_one_failed_login(team: dict[str, Any]) -> None:
    from mcp_nextcloud.nextcloud.refusals import PROVEN_S

    url, emulator = team["url"], team["emulator"]
    _, tokens = _token(team, "alice")
    headers = _session(url + "/mcp", tokens["access_token"])
    found = _grep(url, headers, "supplier", within=120)
    assert found.get("hits"), diagnosis(team, found)
    login, password = _granted(team, "alice")
    before = emulator.bruteforce.attempts(ADDRESS)
    assert emulator.state.delete_app_password(login, password)
    time.sleep(PROVEN_S + 0.5)      # a person's moment between Settings > Security and their next prompt
    with ThreadPoolExecutor(CALLS) as pool:
        answers = list(pool.map(lambda rid: _read(url, headers, rid), range(10, 10 + CALLS)))
    failed = emulator.bruteforce.attempts(ADDRESS) - before
    said = [(status, (result.get("structuredContent") or {}).get("error", {}).get("code"))
            for status, result in answers]
    assert failed == 1, f"{failed} failed logins in Nextcloud for one deleted app password: {said}"
    assert all(status == 401 or code == "signed_out" for status, code in said), json.dumps(answers)[:3000]
    assert any(code == "signed_out" for _, code in said), said
    for _, result in answers:
        text = json.dumps(result)
        assert "blue cable" not in text and password not in text, text[:2000]
    assert not _held(team, "alice"), "the sealed app password outlived its refusal"
    assert password not in team["log"].read_text(errors="replace")
