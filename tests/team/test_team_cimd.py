"""Client ID Metadata Documents on the team server (issue 39): a client_id that is an https URL is described by
the JSON document there (draft-ietf-oauth-client-id-metadata-document).

The documents are published by a real https server on 127.0.0.1 with a certificate of its own (the team server
trusts it through SSL_CERT_FILE; its --public-url is loopback, so loopback documents are allowed). The SDK's own
OAuth client, given a client_metadata_url, signs in with it instead of registering; documents that lie about
their URL, name another redirect URI, are too big, are not JSON, redirect, answer too late, or cannot be reached,
and non-https URLs, are each refused with their cause, and nothing is stored or kept.
"""
from __future__ import annotations

import sqlite3
from typing import Any, Iterator
from urllib.parse import urlencode

import anyio
import httpx
import pytest

from mcp_nextcloud.fixtures.emulator.server import Emulator
from mcp_nextcloud.team.cimd import (DEFAULT_TTL_S, MAX_BYTES, MAX_TTL_S, MIN_TTL_S, ClientDocumentError,
                                     ClientDocuments, address_problem, max_age, url_problem)
from tests.team.docserver import DocServer
from tests.team.serving import _free_port, diagnosis, running_team
from tests.team.test_team_hostile import _pkce
from tests.team.test_team_oauth import REDIRECT, Memory, _grep_until, _paths, connected


@pytest.fixture(scope="module")
def docs() -> Iterator[DocServer]:
    with DocServer() as server:
        yield server


@pytest.fixture(scope="module")
def team(docs: DocServer) -> Iterator[dict[str, Any]]:
    """The team server (loopback public URL) trusting the document server's certificate."""
    with Emulator() as emulator, running_team(emulator.url, env={"SSL_CERT_FILE": str(docs.cert)}) as team:
        yield {**team, "emulator": emulator, "approve": lambda login_url, user: emulator.approve_login(user, login_url)}


def _document(url: str, name: str = "CIMD test client", **extra: Any) -> dict[str, Any]:
    return {"client_id": url, "client_name": name, "redirect_uris": [REDIRECT],
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
            "token_endpoint_auth_method": "none", **extra}


def _authorize(team: dict[str, Any], client_id: str, redirect_uri: str = REDIRECT) -> httpx.Response:
    query = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
             "code_challenge": _pkce()[1], "code_challenge_method": "S256", "state": "st",
             "resource": team["url"] + "/mcp"}
    return httpx.get(team["url"] + "/authorize?" + urlencode(query), timeout=30)


def _registered(team: dict[str, Any]) -> int:
    with sqlite3.connect(f"file:{team['state'] / 'team.sqlite'}?mode=ro", uri=True) as db:
        return int(db.execute("SELECT count(*) FROM clients").fetchone()[0])


def test_the_metadata_says_documents_are_supported(team: dict[str, Any]) -> None:
    meta = httpx.get(team["url"] + "/.well-known/oauth-authorization-server", timeout=10).json()
    assert meta["client_id_metadata_document_supported"] is True
    assert "none" in meta["token_endpoint_auth_methods_supported"]
    assert meta["registration_endpoint"] == team["url"] + "/register"     # dynamic registration stays


def test_the_sdk_client_signs_in_with_its_client_id_document(team: dict[str, Any], docs: DocServer) -> None:
    url = docs.put("/clients/sdk.json", _document(docs.url + "/clients/sdk.json"),
                   headers={"Cache-Control": "max-age=600"})
    storage = Memory()

    async def run() -> tuple[set[str], dict[str, Any]]:
        async with connected(team, "alice", storage, client_metadata_url=url) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            return names, await _grep_until(client, "supplier")

    names, out = anyio.run(run)
    assert "files_grep" in names and "/Projects/Alpha/notes.md" in _paths(out), diagnosis(team, out)
    assert storage.client.client_id == url and storage.client.client_secret is None   # no registration
    assert _registered(team) == 0                   # the document is not stored in team.sqlite
    assert docs.hits["/clients/sdk.json"] == 1      # fetched at /authorize, kept for /token
    # A public client revokes with its client_id alone (RFC 7009): the sign-in's tokens end.
    from tests.team.test_team_hostile import _status

    assert _status(team["url"], storage.tokens.access_token) == 200
    revoked = httpx.post(team["url"] + "/revoke", data={"client_id": url, "token": storage.tokens.refresh_token,
                                                        "token_type_hint": "refresh_token"}, timeout=10)
    assert revoked.status_code == 200, revoked.text
    assert _status(team["url"], storage.tokens.access_token) == 401


def test_the_sign_in_page_names_the_document_and_the_return_host(team: dict[str, Any], docs: DocServer) -> None:
    url = docs.put("/clients/page.json", _document(docs.url + "/clients/page.json", "Écho <b>Desk</b>"))
    resp = _authorize(team, url)
    assert resp.status_code == 302 and "/login/" in resp.headers["location"], resp.text
    page = httpx.get(resp.headers["location"], timeout=10).text
    assert "Écho &lt;b&gt;Desk&lt;/b&gt;" in page                        # its name, escaped
    assert f"described by <b>{docs.url.removeprefix('https://')}</b>" in page
    assert "sent back to <b>127.0.0.1:1</b>" in page                     # REDIRECT's host


HOSTILE: dict[str, tuple[Any, dict[str, Any], str]] = {
    # case: (what the document server answers: a function of the URL; put()'s options; the cause expected)
    "other client_id": (lambda url: _document(url.rsplit("/", 1)[0] + "/sdk.json"), {}, "not its own URL"),
    "oversized": (lambda url: _document(url, padding="x" * MAX_BYTES), {}, f"larger than {MAX_BYTES} bytes"),
    "not JSON": (lambda url: b"<html>client</html>", {}, "not JSON"),
    "a list": (lambda url: [_document(url)], {}, "not a JSON object"),
    "a secret": (lambda url: _document(url, client_secret="s3cret"), {}, "client secret"),
    "secret method": (lambda url: _document(url, token_endpoint_auth_method="client_secret_basic"), {}, "'none'"),
    "no redirect_uris": (lambda url: _document(url, redirect_uris=[]), {}, "no redirect_uris"),
    "redirect": (lambda url: b"", {"status": 302, "headers": {"Location": "/clients/sdk.json"}}, "redirect"),
    "slow": (lambda url: _document(url), {"delay": 7}, "did not answer within 5 s"),
    "404": (None, {}, "HTTP 404"),
}


@pytest.mark.parametrize("case", [*HOSTILE, "not listed", "unreachable", "plain http"])
def test_a_hostile_document_is_refused_with_its_cause(team: dict[str, Any], docs: DocServer, case: str) -> None:
    path = "/hostile/" + case.replace(" ", "-") + ".json"
    url, redirect = docs.url + path, REDIRECT
    if case in HOSTILE:
        body, options, expect = HOSTILE[case]
        if body is not None:
            docs.put(path, body(url), **options)
    elif case == "not listed":         # a good document, asked for a redirect URI it does not list
        docs.put(path, _document(url))
        redirect, expect = "https://evil.example/cb", "not registered"
    elif case == "unreachable":
        url, expect = f"https://127.0.0.1:{_free_port()}/client.json", "could not be fetched"
    else:                              # plain http, with a document that would be fine over https
        url, expect = url.replace("https://", "http://"), "must be served over https"
        docs.put(path, _document(url))
    resp = _authorize(team, url, redirect)
    assert resp.status_code == 400 and "location" not in resp.headers, (resp.status_code, resp.headers)
    error = resp.json()
    assert error["error"] in ("invalid_client", "invalid_request") and expect in error["error_description"], error
    assert _registered(team) == 0


def test_a_refused_document_is_not_kept(team: dict[str, Any], docs: DocServer) -> None:
    url = docs.url + "/clients/fixed.json"
    docs.put("/clients/fixed.json", _document(docs.url + "/clients/other.json"))
    assert _authorize(team, url).status_code == 400
    docs.put("/clients/fixed.json", _document(url))        # the publisher fixes it: it works at once
    resp = _authorize(team, url)
    assert resp.status_code == 302 and "/login/" in resp.headers["location"], resp.text
    assert docs.hits["/clients/fixed.json"] == 2
    # The same through POST /authorize (a form): the document is checked before the SDK's handler reads it.
    form = {"response_type": "code", "client_id": docs.url + "/clients/posted.json", "redirect_uri": REDIRECT,
            "code_challenge": _pkce()[1], "code_challenge_method": "S256", "resource": team["url"] + "/mcp"}
    docs.put("/clients/posted.json", b"not json")
    posted = httpx.post(team["url"] + "/authorize", data=form, timeout=30)
    assert posted.status_code == 400 and "not JSON" in posted.json()["error_description"], posted.text
    docs.put("/clients/posted.json", _document(form["client_id"]))
    posted = httpx.post(team["url"] + "/authorize", data=form, timeout=30)
    assert posted.status_code == 302 and "/login/" in posted.headers["location"], posted.text


def test_the_fences_before_any_request(docs: DocServer) -> None:
    """In process: what this server will not fetch, decided before connecting (the document server sees no
    request), and how long a document is kept."""
    url = docs.put("/clients/fence.json", _document(docs.url + "/clients/fence.json"))
    strict = ClientDocuments(allow_loopback=False)       # a server whose --public-url is not loopback
    with pytest.raises(ClientDocumentError, match="loopback"):
        anyio.run(strict.client, url)
    assert docs.hits.get("/clients/fence.json") is None
    for address in ("10.1.2.3", "192.168.0.5", "172.16.0.1", "169.254.169.254", "100.64.0.1", "fd00::1",
                    "::ffff:10.0.0.1", "0.0.0.0", "224.0.0.1"):
        assert address_problem(address, allow_loopback=True) is not None, address
        with pytest.raises(ClientDocumentError, match="private or reserved"):
            host = f"[{address}]" if ":" in address else address
            anyio.run(ClientDocuments(allow_loopback=True).client, f"https://{host}/client.json")
    assert address_problem("127.0.0.1", allow_loopback=False) and address_problem("::1", allow_loopback=False)
    assert address_problem("93.184.215.14", allow_loopback=False) is None
    for bad in ("http://example.org/c.json", "https://example.org/", "https://example.org", "https://u:p@example.org/c",
                "https://example.org/a/../c.json", "https://example.org/c.json#x", "https:///c.json"):
        assert url_problem(bad) is not None, bad
    assert url_problem("https://example.org/c.json?v=1") is None
    assert (max_age("max-age=600"), max_age(None), max_age("public, max-age=5"), max_age("max-age=99999999"),
            max_age("no-store")) == (600, DEFAULT_TTL_S, MIN_TTL_S, MAX_TTL_S, MIN_TTL_S)
