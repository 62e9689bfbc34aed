"""Two people on one team server, and a hostile client (issue 39), over plain HTTP on loopback.

alice and bob each sign in through Nextcloud (the emulator) with their own OAuth client; bob's token, session,
paths and ids reach nothing of alice's. Refused: no token, an expired and a revoked token, a token for another
resource, a wrong redirect URI, a replayed code (which also ends the tokens it gave), a request head that never
completes.
"""
from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from tests.server.test_hostile_serve import HEADERS, _result, _rpc, _session
from tests.team.test_team_oauth import REDIRECT, sign_in


def _register(url: str, name: str, method: str = "client_secret_post") -> dict[str, Any]:
    resp = httpx.post(url + "/register", json={"redirect_uris": [REDIRECT], "client_name": name,
                                               "grant_types": ["authorization_code", "refresh_token"],
                                               "response_types": ["code"],
                                               "token_endpoint_auth_method": method}, timeout=10)
    assert resp.status_code == 201, resp.text
    return dict(resp.json())


def _pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def _authorize_url(url: str, client: dict[str, Any], challenge: str, **extra: str) -> str:
    query = {"response_type": "code", "client_id": client["client_id"], "redirect_uri": REDIRECT,
             "code_challenge": challenge, "code_challenge_method": "S256", "state": "st-" + secrets.token_hex(4),
             "resource": url + "/mcp", **extra}
    return url + "/authorize?" + urlencode(query)


def _code(team: dict[str, Any], user: str, choices: dict[str, str] | None = None,
          method: str = "client_secret_post") -> tuple[dict[str, Any], str, str]:
    """(a client registered for `method`, its PKCE verifier, a code for `user`, who chose `choices` on the
    sign-in page)."""
    client = _register(team["url"], f"hostile test of {user}", method)
    verifier, challenge = _pkce()
    landed = sign_in(_authorize_url(team["url"], client, challenge), team["approve"], user, choices)
    assert landed.startswith(REDIRECT)
    return client, verifier, parse_qs(urlsplit(landed).query)["code"][0]


def _exchange(url: str, client: dict[str, Any], code: str, verifier: str) -> httpx.Response:
    method = client.get("token_endpoint_auth_method")
    secret = {"client_secret": client["client_secret"]} if method == "client_secret_post" else {}   # none: public
    basic = (client["client_id"], client["client_secret"]) if method == "client_secret_basic" else None
    return httpx.post(url + "/token", data={"grant_type": "authorization_code", "code": code, "redirect_uri": REDIRECT,
                                            "client_id": client["client_id"], **secret,
                                            "code_verifier": verifier, "resource": url + "/mcp"}, auth=basic,
                      timeout=30)


def _token(team: dict[str, Any], user: str, choices: dict[str, str] | None = None,
           method: str = "client_secret_post") -> tuple[dict[str, Any], dict[str, Any]]:
    client, verifier, code = _code(team, user, choices, method)
    resp = _exchange(team["url"], client, code, verifier)
    assert resp.status_code == 200, resp.text
    return client, dict(resp.json())


def _call(url: str, headers: dict[str, str], name: str, args: dict[str, Any]) -> dict[str, Any]:
    resp = httpx.post(url + "/mcp", json=_rpc("tools/call", {"name": name, "arguments": args}, 7), headers=headers,
                      timeout=120)
    assert resp.status_code == 200, resp.text
    result = _result(resp)["result"]
    text = result["content"][0]["text"]
    return {"isError": True, "text": text} if result.get("isError") else json.loads(text)


def _grep(url: str, headers: dict[str, str], query: str, within: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + within
    while True:
        out = _call(url, headers, "files_grep", {"query": query})
        if out.get("hits") or time.monotonic() > deadline:
            return out
        time.sleep(0.5)


def _status(url: str, token: str) -> int:
    init = _rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}})
    return httpx.post(url + "/mcp", json=init, headers={**HEADERS, "Authorization": f"Bearer {token}"},
                      timeout=10).status_code


@pytest.fixture(scope="module")
def two(team: dict[str, Any]) -> dict[str, Any]:
    """alice and bob signed in, each with an MCP session; both indexes synced."""
    out: dict[str, Any] = {}
    for user in ("alice", "bob"):
        client, tokens = _token(team, user)
        out[user] = {"client": client, "tokens": tokens, "headers": _session(team["url"] + "/mcp",
                                                                              tokens["access_token"])}
    for user, word in (("alice", "supplier"), ("bob", "coffee")):
        found = _grep(team["url"], out[user]["headers"], word, within=120)
        assert found["hits"], found
    return out


def test_the_metadata_and_an_unauthenticated_call(team: dict[str, Any]) -> None:
    url = team["url"]
    resource = httpx.get(url + "/.well-known/oauth-protected-resource/mcp", timeout=10).json()
    server = httpx.get(url + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert server["issuer"].rstrip("/") == url and server["code_challenge_methods_supported"] == ["S256"]
    assert resource["resource"] == url + "/mcp" and resource["authorization_servers"] == [server["issuer"]]
    assert server["registration_endpoint"] == url + "/register" and server["revocation_endpoint"] == url + "/revoke"
    resp = httpx.post(url + "/mcp", json=_rpc("tools/list", {}), headers=HEADERS, timeout=10)
    assert resp.status_code == 401
    assert "/.well-known/oauth-protected-resource/mcp" in resp.headers["www-authenticate"]


def test_bob_reads_nothing_of_alices(team: dict[str, Any], two: dict[str, Any]) -> None:
    url, alice, bob = team["url"], two["alice"]["headers"], two["bob"]["headers"]
    assert _call(url, bob, "files_grep", {"query": "supplier"})["hits"] == []
    assert _call(url, alice, "files_grep", {"query": "coffee"})["hits"] == []
    read = _call(url, bob, "files_read", {"path": "/Projects/Alpha/notes.md"})
    assert read["isError"] and "blue cable" not in json.dumps(read)
    assert "Nothing exists at that path" in read["text"]
    file_id = _grep(url, alice, "supplier")["hits"][0]["fileId"]
    by_id = _call(url, bob, "files_read", {"fileId": file_id})
    assert by_id["isError"] and "blue cable" not in json.dumps(by_id), by_id
    listed = _call(url, bob, "files_search", {"query": "notes"})
    assert "/Projects/Alpha" not in json.dumps(listed)
    # Bob's token on alice's session: the SDK's session ownership refuses it.
    borrowed = {**alice, "Authorization": bob["Authorization"]}
    resp = httpx.post(url + "/mcp", json=_rpc("tools/call", {"name": "files_grep", "arguments": {"query": "supplier"}},
                                              9), headers=borrowed, timeout=30)
    assert resp.status_code in (403, 404) and "blue cable" not in resp.text
    # Each person has their own 0700 folder and index.
    folders = sorted((team["state"] / "people").iterdir())
    assert len(folders) == 2 and all(f.stat().st_mode & 0o777 == 0o700 for f in folders)


def test_a_revoked_and_an_expired_token_are_refused(team: dict[str, Any], two: dict[str, Any]) -> None:
    from mcp_nextcloud.team.store import Store, TokenRow

    url = team["url"]
    client, tokens = _token(team, "alice")
    assert _status(url, tokens["access_token"]) == 200
    resp = httpx.post(url + "/revoke", data={"token": tokens["refresh_token"], "client_id": client["client_id"],
                                             "client_secret": client["client_secret"]}, timeout=10)
    assert resp.status_code == 200, resp.text
    assert _status(url, tokens["access_token"]) == 401      # the whole family ends with its refresh token
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
               "client_id": client["client_id"], "client_secret": client["client_secret"]}
    refreshed = httpx.post(url + "/token", data=refresh, timeout=10)
    assert refreshed.status_code == 400
    store = Store(Path(team["state"]))
    try:
        store.put_token("expired-token-of-alice", TokenRow("access", "f-expired", client["client_id"], "alice", [],
                                                           url + "/mcp", int(time.time()) - 5))
        store.put_token("a-token-for-another-resource", TokenRow("access", "f-other", client["client_id"], "alice", [],
                                                                 "https://other.example/mcp", int(time.time()) + 600))
    finally:
        store.close()
    assert _status(url, "expired-token-of-alice") == 401
    assert _status(url, "a-token-for-another-resource") == 401
    httpx.get(_authorize_url(url, client, _pkce()[1]), timeout=10)     # a sign-in starts: expired rows go
    store = Store(Path(team["state"]))
    try:
        assert store.token("expired-token-of-alice", "access") is None
        assert store.token("a-token-for-another-resource", "access") is not None
    finally:
        store.close()
    assert _status(url, two["alice"]["tokens"]["access_token"]) == 200   # alice's other sign-in is untouched


def test_a_public_client_revokes_without_a_secret(team: dict[str, Any]) -> None:
    """RFC 7009 for a public client (`none`, as every client_id metadata document): client_id and token, no
    secret, end the sign-in's access and refresh tokens. A confidential client still needs its secret, in the
    form or (client_secret_basic) in the Authorization header."""
    url = team["url"]
    server = httpx.get(url + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert "none" in server["revocation_endpoint_auth_methods_supported"]
    client, tokens = _token(team, "alice", method="none")
    assert "client_secret" not in client and _status(url, tokens["access_token"]) == 200
    resp = httpx.post(url + "/revoke", data={"client_id": client["client_id"], "token": tokens["access_token"]},
                      timeout=10)
    assert resp.status_code == 200, resp.text
    assert _status(url, tokens["access_token"]) == 401
    refresh = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"],
               "client_id": client["client_id"]}
    assert httpx.post(url + "/token", data=refresh, timeout=10).status_code == 400
    confidential, kept = _token(team, "alice", method="client_secret_basic")
    bare = {"client_id": confidential["client_id"], "token": kept["refresh_token"]}
    refused = httpx.post(url + "/revoke", data=bare, timeout=10)
    assert refused.status_code == 401 and refused.json()["error"] == "invalid_client", refused.text
    assert _status(url, kept["access_token"]) == 200
    basic = httpx.post(url + "/revoke", data=bare, auth=(confidential["client_id"], confidential["client_secret"]),
                       timeout=10)
    assert basic.status_code == 200, basic.text
    assert _status(url, kept["access_token"]) == 401


def test_a_new_sign_in_deletes_the_app_password_it_replaces(team: dict[str, Any]) -> None:
    """One app password per person: signing in again deletes the one it replaces in Nextcloud (OCS DELETE
    core/apppassword), and each is named for its client, this server and the day it was granted."""
    import datetime

    state = team["emulator"].state
    seeded = list(state.users["admin"].app_passwords)          # the emulator's own, not this server's
    _, first = _token(team, "admin")
    granted = [p for p in state.users["admin"].app_passwords if p not in seeded]
    assert len(granted) == 1
    _, second = _token(team, "admin")
    now = [p for p in state.users["admin"].app_passwords if p not in seeded]
    assert len(now) == 1 and now != granted, "the replaced app password is still in Nextcloud"
    assert not state.check_password("admin", granted[0])
    name = state.users["admin"].app_password_names[now[0]]
    day = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    assert name.startswith("hostile test of admin via mcp-nextcloud team server ") and day in name, name
    assert urlsplit(team["url"]).netloc in name
    assert _status(team["url"], second["access_token"]) == 200
    assert _status(team["url"], first["access_token"]) == 200   # the same person: their first client keeps working


def test_refresh_rotates_the_tokens(team: dict[str, Any]) -> None:
    url = team["url"]
    client, tokens = _token(team, "bob")
    data = {"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": client["client_id"],
            "client_secret": client["client_secret"]}
    fresh = httpx.post(url + "/token", data=data, timeout=10)
    assert fresh.status_code == 200, fresh.text
    assert fresh.json()["refresh_token"] != tokens["refresh_token"]
    assert _status(url, fresh.json()["access_token"]) == 200
    assert httpx.post(url + "/token", data=data, timeout=10).status_code == 400    # the old one worked once


def test_a_hostile_client_is_refused(team: dict[str, Any]) -> None:
    url = team["url"]
    client = _register(url, "hostile")
    _, challenge = _pkce()
    wrong = _authorize_url(url, client, challenge).replace(urlencode({"redirect_uri": REDIRECT}),
                                                           urlencode({"redirect_uri": "https://evil.example/cb"}))
    resp = httpx.get(wrong, timeout=10)
    assert resp.status_code == 400 and "evil.example" not in resp.headers.get("location", "")
    other = httpx.get(_authorize_url(url, client, challenge, resource="https://other.example/mcp"), timeout=10)
    assert other.status_code == 302 and "error=invalid_target" in other.headers["location"]
    assert "/login/" not in other.headers["location"]
    plain = httpx.get(_authorize_url(url, client, challenge, code_challenge_method="plain"), timeout=10)
    assert "/login/" not in plain.headers.get("location", "")
    # No code_challenge_method means plain (RFC 7636 4.3): refused the same way, asked by GET or by a form POST.
    unsaid = _authorize_url(url, client, challenge).replace("&code_challenge_method=S256", "")
    assert "code_challenge_method" not in unsaid
    for resp in (httpx.get(unsaid, timeout=10),
                 httpx.post(url + "/authorize", data=dict(parse_qs(urlsplit(unsaid).query)), timeout=10)):
        assert resp.status_code == 302 and resp.headers["location"].startswith(REDIRECT), resp.text
        assert "error=invalid_request" in resp.headers["location"] and "code_challenge_method" in \
            resp.headers["location"], resp.headers["location"]
    # A code replayed: refused, and the tokens the first exchange gave end too (RFC 6749 section 4.1.2).
    client, verifier, code = _code(team, "alice")
    first = _exchange(url, client, code, verifier)
    assert first.status_code == 200
    assert _status(url, first.json()["access_token"]) == 200
    again = _exchange(url, client, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert _status(url, first.json()["access_token"]) == 401
    # A code for another client, or with a wrong verifier, is refused too.
    client2, verifier2, code2 = _code(team, "alice")
    stranger = _register(url, "stranger")
    assert _exchange(url, stranger, code2, verifier2).status_code == 400
    assert _exchange(url, client2, code2, verifier2 + "x").status_code == 400


def test_the_limits_chosen_at_sign_in_hold_for_that_token(team: dict[str, Any], two: dict[str, Any]) -> None:
    url = team["url"]
    _, tokens = _token(team, "alice", {"read_only": "on", "folders": "/Projects"})
    limited = _session(url + "/mcp", tokens["access_token"])
    assert "blue cable" in json.dumps(_call(url, limited, "files_read", {"path": "/Projects/Alpha/notes.md"}))
    outside = _call(url, limited, "files_read", {"path": "/Projects/../Documents/Résumé final.md"})
    assert outside["isError"]
    outside = _call(url, limited, "files_read", {"path": "/Documents/Résumé final.md"})
    assert outside["isError"] and "Nothing exists" in outside["text"], outside
    write = _call(url, limited, "files_write", {"path": "/Projects/x.txt", "content": "no"})
    assert write["isError"], write
    full = _call(url, two["alice"]["headers"], "files_read", {"path": "/Documents/Résumé final.md"})
    assert not full.get("isError"), full          # alice's other sign-in keeps the whole account
    page = httpx.get(_authorize_url(url, _register(url, "bad folder"), _pkce()[1]), timeout=10).headers["location"]
    bad = httpx.get(page, params={"go": "1", "folders": "../etc", "tool": "files_read"}, timeout=10)
    assert "not a folder path" in bad.text and 'id="nextcloud-login"' not in bad.text


def test_deleting_the_app_password_in_nextcloud_ends_the_access(team: dict[str, Any], two: dict[str, Any]) -> None:
    """Last in this module: bob's app password (the one his latest sign-in granted) is deleted in Nextcloud."""
    url, bob = team["url"], two["bob"]["headers"]
    assert not _call(url, bob, "files_read", {"path": "/Notes/groceries.txt"}).get("isError")
    with team["emulator"].state.lock:
        team["emulator"].state.users["bob"].app_passwords.pop()    # as Settings > Security > Devices does
    refused = _call(url, bob, "files_read", {"path": "/Notes/groceries.txt"})
    assert refused["isError"] and "sign in again from your MCP client" in refused["text"], refused
    assert _status(url, two["bob"]["tokens"]["access_token"]) == 401
    assert _status(url, two["alice"]["tokens"]["access_token"]) == 200
    from mcp_nextcloud.team.store import Store

    store = Store(Path(team["state"]))
    try:
        assert store.person("bob") is None and store.person("alice") is not None
    finally:
        store.close()


def test_a_slow_request_head_is_ended(team: dict[str, Any]) -> None:
    """A client that sends half a request head and waits is answered 408 and disconnected after serve --http's
    head deadline (uvicorn alone keeps it, and the connection slot it holds, forever); the server still answers."""
    import socket

    from mcp_nextcloud.server.http_protocol import HEAD_SECONDS

    where = urlsplit(team["local"])
    slow = [socket.create_connection((where.hostname, where.port), timeout=HEAD_SECONDS + 30) for _ in range(3)]
    try:
        for sock in slow:
            sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answers = []
        for sock in slow:
            answer = b""
            while chunk := sock.recv(4096):       # until the server closes (a timeout fails the test)
                answer += chunk
            answers.append(answer)
    finally:
        for sock in slow:
            sock.close()
    assert all(a.startswith(b"HTTP/1.1 408") and b"request head" in a for a in answers), answers
    assert httpx.get(team["url"] + "/.well-known/oauth-authorization-server", timeout=10).status_code == 200
