"""The team server (`serve --http --public-url --nextcloud-url`, issue 39) under clients nobody here wrote.

A real subprocess on loopback, signing people in to the emulator through Login Flow v2. The SDK's own OAuth
client (mcp.client.auth.OAuthClientProvider) discovers the server (RFC 9728, RFC 8414), registers (RFC 7591),
does PKCE, follows our sign-in page, and calls files_grep as alice; bob, signed in the same way, reads nothing of
alice's by any path, token or session; an expired, a revoked token, a wrong redirect URI, a replayed code and a
token for another resource are refused.
"""
from __future__ import annotations

import html
import json
import re
import stat
import time
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator, Callable
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx

from tests.team.serving import diagnosis

REDIRECT = "http://127.0.0.1:1/callback"      # never reached: the test reads the code from the redirect


# -- a person signing in: our page, Nextcloud's grant (approved on the emulator), back to the client --------
def sign_in(authorization_url: str, approve: Callable[[str, str], Any], user: str,
            choices: dict[str, Any] | None = None, verify: Any = True, slept: list[float] | None = None) -> str:
    """Follow /authorize to our sign-in page, submit its choices (default, as a browser leaves the form: the
    whole account, every tool box ticked), grant access on Nextcloud as `user` (`approve(nextcloud_login_url,
    user)`): the client's redirect URL. `slept` gets the time spent between the page's reloads (the browser's,
    not the server's)."""
    with httpx.Client(follow_redirects=False, timeout=30, verify=verify) as http:
        resp = http.get(authorization_url)
        assert resp.status_code == 302, resp.text
        page = resp.headers["location"]
        consent = http.get(page)
        assert consent.status_code == 200 and 'name="go"' in consent.text, consent.text
        ticked = re.findall(r'name="tool" value="([^"]+)" checked', consent.text)
        resp = http.get(page, params={"go": "1", "tool": ticked, **(choices or {})})
        assert resp.status_code == 200 and 'id="nextcloud-login"' in resp.text, resp.text
        assert resp.headers["cache-control"] == "no-store"
        found = re.search(r'id="nextcloud-login" href="([^"]+)"', resp.text)
        assert found, resp.text
        approve(html.unescape(found.group(1)), user)
        for _ in range(100):
            resp = http.get(page)
            if resp.status_code == 302:
                return str(resp.headers["location"])
            assert resp.status_code == 200, resp.text
            t0 = time.perf_counter()
            time.sleep(0.1)
            if slept is not None:
                slept.append(time.perf_counter() - t0)
    raise AssertionError("the sign-in page never sent the person back")


class Memory:
    """TokenStorage of the SDK's OAuth client, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client

    async def set_client_info(self, client_info: Any) -> None:
        self.client = client_info


@asynccontextmanager
async def connected(team: dict[str, Any], user: str, storage: Memory | None = None,
                    marks: list[float] | None = None, *, choices: dict[str, Any] | None = None,
                    client_metadata_url: str | None = None, slept: list[float] | None = None) -> AsyncIterator[Any]:
    """An MCP client session as `user`, signed in by the SDK's OAuth client (`marks` gets the time the code
    came back; `choices`: what the person chose on the sign-in page; `client_metadata_url`: the client is
    identified by that client_id metadata document instead of registering; `slept`: the sign-in page's reload
    pauses)."""
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    landed: list[str] = []

    async def redirect_handler(authorization_url: str) -> None:
        landed.append(await anyio.to_thread.run_sync(sign_in, authorization_url, team["approve"], user, choices,
                                                     team.get("verify", True), slept))

    async def callback_handler() -> AuthorizationCodeResult:
        query = parse_qs(urlsplit(landed[-1]).query)
        if marks is not None:
            marks.append(time.perf_counter())
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0])

    auth = OAuthClientProvider(
        team["url"] + "/mcp",
        OAuthClientMetadata(client_name=f"test client of {user}", redirect_uris=[REDIRECT],  # type: ignore[list-item]
                            grant_types=["authorization_code", "refresh_token"], response_types=["code"]),
        storage or Memory(), redirect_handler=redirect_handler, callback_handler=callback_handler,
        client_metadata_url=client_metadata_url)
    http = create_mcp_http_client(auth=auth)
    if "verify" in team:         # behind the TLS proxy: its own certificate authority
        import httpx2

        await http.aclose()
        http = httpx2.AsyncClient(auth=auth, verify=team["verify"], timeout=httpx2.Timeout(30, read=300))
    async with http, Client(streamable_http_client(team["url"] + "/mcp", http_client=http), mode="legacy") as c:
        yield c


def _json(result: Any) -> dict[str, Any]:
    return json.loads(result.content[0].text)


async def _grep_until(client: Any, query: str, within: float = 180.0) -> dict[str, Any]:
    """files_grep, asked again while the person's first sync runs (a loaded CI machine took over a minute)."""
    deadline = time.monotonic() + within
    while True:
        out = _json(await client.call_tool("files_grep", {"query": query}))
        if out.get("hits") or time.monotonic() > deadline:
            return out
        await anyio.sleep(0.5)


def _paths(out: dict[str, Any]) -> set[str]:
    return {hit.get("path") for hit in out.get("hits", [])}


def test_the_sdk_oauth_client_signs_in_and_greps_as_alice(team: dict[str, Any]) -> None:
    storage = Memory()

    async def run() -> dict[str, Any]:
        async with connected(team, "alice", storage) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            assert "files_grep" in names
            t0 = time.monotonic()
            first = _json(await client.call_tool("files_grep", {"query": "supplier"}))
            print("first grep", round(time.monotonic() - t0, 2), json.dumps(first)[:300])
            return await _grep_until(client, "supplier")

    out = anyio.run(run)
    assert "/Projects/Alpha/notes.md" in _paths(out), diagnosis(team, out)
    assert storage.tokens is not None and storage.tokens.refresh_token
    state = team["state"]
    assert stat.S_IMODE(state.stat().st_mode) == 0o700
    for name in ("team.sqlite", "secret.key"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
    # Only hashes of tokens, and no app password in clear, in the state file.
    raw = (state / "team.sqlite").read_bytes() + b"".join(p.read_bytes() for p in state.glob("team.sqlite-wal"))
    assert storage.tokens.access_token.encode() not in raw and storage.tokens.refresh_token.encode() not in raw
    people = list((state / "people").iterdir())
    assert len(people) == 1 and stat.S_IMODE(people[0].stat().st_mode) == 0o700
    assert (people[0] / "index.db").exists()
