"""The tools a person allows on the sign-in page (issue 39, with issue 27's profiles): stored with that sign-in's
tokens next to its folders and read-only choice; tools/list on that token's session lists only those tools, and
a call of any other is refused by the profile's own answer. Another sign-in of the same person keeps its own list.
"""
from __future__ import annotations

import json
from typing import Any

import anyio
import httpx

from tests.server.test_hostile_serve import _result, _rpc, _session
from tests.team.test_team_hostile import _authorize_url, _call, _pkce, _register, _token
from tests.team.serving import diagnosis
from tests.team.test_team_oauth import _grep_until, _paths, connected

ALLOWED = ["files_grep", "nextcloud_whoami"]


def _listed(url: str, headers: dict[str, str]) -> dict[str, Any]:
    """{name: readOnlyHint} of tools/list on this session."""
    resp = httpx.post(url + "/mcp", json=_rpc("tools/list", {}, 3), headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    return {t["name"]: (t.get("annotations") or {}).get("readOnlyHint") for t in _result(resp)["result"]["tools"]}


def test_the_sdk_client_sees_and_calls_only_the_tools_allowed(team: dict[str, Any]) -> None:
    async def run() -> tuple[set[str], dict[str, Any], Any, dict[str, Any]]:
        async with connected(team, "alice", choices={"tool": ALLOWED}) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            found = await _grep_until(client, "supplier")
            refused = await client.call_tool("files_read", {"path": "/Projects/Alpha/notes.md"})
            who = json.loads((await client.call_tool("nextcloud_whoami", {})).content[0].text)
            return names, found, refused, who

    names, found, refused, who = anyio.run(run)
    assert names == set(ALLOWED)
    assert "/Projects/Alpha/notes.md" in _paths(found), diagnosis(team, found)
    assert refused.is_error and "files_read is not available to this agent" in refused.content[0].text
    assert "blue cable" not in refused.content[0].text
    assert (refused.structured_content or {}).get("error", {}).get("code") == "not_in_profile", \
        refused.structured_content
    assert who["profile"]["tools"] == ALLOWED and who["profile"]["offered"] == ALLOWED, who


def test_each_token_lists_its_own_tools(team: dict[str, Any]) -> None:
    url = team["url"]
    _, full = _token(team, "bob")
    _, read_only = _token(team, "bob", {"read_only": "on"})
    _, jailed = _token(team, "bob", {"folders": "/Notes"})
    _, picked = _token(team, "bob", {"folders": "/Notes", "tool": ["files_read", "deck_list_cards"]})
    everything = _listed(url, _session(url + "/mcp", full["access_token"]))
    assert "files_write" in everything and len(everything) > 10
    reads = _listed(url, _session(url + "/mcp", read_only["access_token"]))
    assert "files_grep" in reads and "files_write" not in reads and all(reads.values()), reads
    assert set(reads) == {name for name, hint in everything.items() if hint}
    files = _listed(url, _session(url + "/mcp", jailed["access_token"]))   # a folder: the file tools and whoami
    assert set(files) == {n for n in everything if n.startswith("files_") or n == "nextcloud_whoami"}
    assert set(_listed(url, _session(url + "/mcp", picked["access_token"]))) == {"files_read", "deck_list_cards"}
    headers = _session(url + "/mcp", picked["access_token"])
    refused = _call(url, headers, "files_grep", {"query": "coffee"})
    assert refused["isError"] and "not available to this agent" in refused["text"], refused
    whole = _session(url + "/mcp", full["access_token"])
    assert not _call(url, whole, "files_grep", {"query": "coffee"}).get("isError")


def test_the_page_refuses_an_unknown_tool_and_an_empty_choice(team: dict[str, Any]) -> None:
    url = team["url"]
    page = httpx.get(_authorize_url(url, _register(url, "tool choice"), _pkce()[1]), timeout=10).headers["location"]
    consent = httpx.get(page, timeout=10).text
    assert 'name="tool" value="files_grep" checked' in consent and "files_write (changes things)" in consent
    unknown = httpx.get(page, params={"go": "1", "tool": ["files_grep", "evil_tool"]}, timeout=10)
    assert unknown.status_code == 200 and "unknown tool name(s) evil_tool" in unknown.text
    assert 'id="nextcloud-login"' not in unknown.text
    empty = httpx.get(page, params={"go": "1"}, timeout=10)
    assert "Choose at least one tool" in empty.text and 'id="nextcloud-login"' not in empty.text
