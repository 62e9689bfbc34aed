"""A person deletes the team server's app password in Nextcloud (issue 49): the next call that reaches Nextcloud
ends their access at once, with one failed login at most.

On the emulator, as a person does in Settings > Security > Devices & sessions: the granted app password is
deleted, then the person calls a tool. The answer says to sign in again and carries nothing of the index; the
emulator's brute-force protection counts at most one failed login for it (each one counts towards throttling
the whole server's address); the team store no longer holds the person, and their access token is refused by
the team server itself (401), so the client must sign in again.
"""
from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from tests.team.serving import diagnosis
from tests.team.test_team_oauth import Memory, _grep_until, _paths, connected

ADDRESS = "127.0.0.1"     # the team server's address, as Nextcloud (the emulator) sees it


def _granted(team: dict[str, Any], subject: str) -> tuple[str, str]:
    """(login name, app password) the team server holds for `subject` (read from its own store)."""
    from mcp_nextcloud.team.store import Store
    from mcp_nextcloud.team.vault import Vault

    store = Store(team["state"])
    try:
        person = store.person(subject)
        assert person is not None, "the sign-in kept nobody"
        password = Vault(team["state"]).open(person.sealed)
    finally:
        store.close()
    assert password is not None
    return person.login_name, password


def _held(team: dict[str, Any], subject: str) -> bool:
    from mcp_nextcloud.team.store import Store

    store = Store(team["state"])
    try:
        return store.person(subject) is not None
    finally:
        store.close()


def _mcp_status(team: dict[str, Any], access_token: str) -> int:
    """The team server's status for an MCP request with this bearer token (401: signed out)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "revocation test", "version": "0"}}}
    resp = httpx.post(team["url"] + "/mcp", json=body, timeout=30,
                      headers={"Authorization": f"Bearer {access_token}",
                               "Accept": "application/json, text/event-stream"})
    return resp.status_code


def _revoke_then(team: dict[str, Any], user: str, tool: str, arguments: dict[str, Any],
                 warm: str) -> tuple[Any, int, bool, int, str]:
    """Sign `user` in, grep `warm` until found, delete their app password in Nextcloud, call `tool`: (its result,
    failed logins it cost, whether the store still holds the person, the team server's status for the token,
    the password that was deleted)."""
    storage = Memory()
    emulator = team["emulator"]

    async def run() -> tuple[Any, int, bool, str, str]:
        async with connected(team, user, storage) as client:
            found = await _grep_until(client, warm)
            assert _paths(found), diagnosis(team, found)
            login, password = _granted(team, user)
            token = storage.tokens.access_token     # the client's storage gets new tokens when it signs in again
            before = emulator.bruteforce.attempts(ADDRESS)
            assert emulator.state.delete_app_password(login, password)
            result = await client.call_tool(tool, arguments)
            # read before the session closes: the SDK's client, refused, signs in again on its own
            return result, emulator.bruteforce.attempts(ADDRESS) - before, _held(team, user), password, token

    result, failed, held, password, token = anyio.run(run)
    status = _mcp_status(team, token)
    return result, failed, held, status, password


def _says_sign_in_again(result: Any) -> str:
    text = result.content[0].text if result.content else ""
    assert result.is_error, text
    assert result.structured_content["error"]["code"] == "signed_out", text
    assert "sign in again from your mcp client" in text.lower(), text
    assert "mcp-nextcloud login" not in text and "NEXTCLOUD_APP_PASSWORD" not in text, text
    return text


def test_a_grep_after_the_app_password_is_deleted_signs_the_person_out_at_once(team: dict[str, Any]) -> None:
    """files_grep answers from the index after a look at Nextcloud (what changed, what is gone): that look is
    refused, so the grep must not answer from the index with the deleted password."""
    result, failed, held, status, password = _revoke_then(team, "alice", "files_grep", {"query": "supplier"},
                                                          warm="supplier")
    text = _says_sign_in_again(result)
    assert "/Projects/Alpha/notes.md" not in text and "hits" not in json.dumps(result.structured_content), text
    assert password not in text
    assert failed <= 1, f"{failed} failed logins in Nextcloud for one deleted app password"
    assert not held, "the sealed app password outlived its refusal"
    assert status == 401, status
    log = team["log"].read_text(errors="replace")
    assert password not in log


def test_a_read_after_the_app_password_is_deleted_costs_one_failed_login(team: dict[str, Any]) -> None:
    """A read reaches Nextcloud at once: it is refused, and the team server must not ask again with the same
    password to learn what the read already learned."""
    result, failed, held, status, _ = _revoke_then(team, "bob", "files_read", {"path": "/Notes/groceries.txt"},
                                                   warm="coffee")
    _says_sign_in_again(result)
    assert failed <= 1, f"{failed} failed logins in Nextcloud for one deleted app password"
    assert not held and status == 401, (held, status)
