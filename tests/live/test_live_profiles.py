"""Profiles on a real Nextcloud 34 (issue 27): a jail of one folder, read-only, read back with a plain client.

A scratch folder holds `Projects/` (the jail), and beside it `Projects-old/`, a look-alike `Prоjects/`
(Cyrillic о) and `projects/`, each with a file containing a word found nowhere else. The index is synced
from the whole scratch folder (the one index serves the jailed server); every tool runs under the jail.
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

import pytest

from tests.helpers import list_and_call

WORD = "quokkafile"
SIBLINGS = ("Projects-old", "Prоjects", "projects")


@pytest.fixture
def jailed(live_account: Any, scratch_folder: str, tmp_path: Any) -> Iterator[dict[str, Any]]:
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.server.context import ServerContext, Settings

    client = NextcloudClient(live_account)
    client.webdav.mkcol(f"{scratch_folder}/Projects")
    client.webdav.put(f"{scratch_folder}/Projects/inside.md", b"# Inside\n\nThe inside plan.\n", create_only=True)
    for name in SIBLINGS:
        client.webdav.mkcol(f"{scratch_folder}/{name}")
        client.webdav.put(f"{scratch_folder}/{name}/outside.md", f"# Out\n\nThe {WORD} plan.\n".encode(),
                          create_only=True)
    index = Index.open(tmp_path / "index.db")
    sync(client, index, root=scratch_folder)
    ctx = ServerContext(account=live_account, index=index, settings=Settings(freshness_interval_s=0),
                        client_factory=lambda: client)
    try:
        yield {"ctx": ctx, "folder": scratch_folder, "jail": f"{scratch_folder}/Projects"}
    finally:
        ctx.close()


def _run(ctx: Any, as_profile: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    from mcp_nextcloud.server.app import build_server

    return list_and_call(build_server(ctx), calls, as_profile)


def _fileid(live_http: Any, user: str, path: str) -> int:
    body = ('<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
            '<oc:fileid/></d:prop></d:propfind>')
    resp = live_http.request("PROPFIND", f"/remote.php/dav/files/{user}{path}", content=body,
                             headers={"Depth": "0", "Content-Type": "application/xml"})
    assert resp.status_code == 207, resp.text
    return int(re.search(r"<oc:fileid>(\d+)</oc:fileid>", resp.text).group(1))


def test_live_nothing_outside_the_jail_is_read_found_written_or_shared(jailed, live_http, live_account,
                                                                       live_member):
    from mcp_nextcloud.server.profile import build

    folder, jail = jailed["folder"], jailed["jail"]
    outside = [f"{folder}/{name}/outside.md" for name in SIBLINGS]
    outside_id = _fileid(live_http, live_account.user, outside[0])
    p = build("live-jail", folders=[jail])
    _, results = _run(jailed["ctx"], p, [
        *[("files_read", {"path": path}) for path in outside],
        ("files_read", {"path": f"{folder}/nothing-here.md"}),                   # 5: a path outside that is missing
        ("files_read", {"fileId": outside_id}),
        ("files_read", {"fileId": 2_000_000_000}),                                 # 7: an id that does not exist
        ("files_grep", {"query": WORD}),
        ("files_search", {"name": "outside"}),
        ("files_write", {"path": outside[0], "content": "overwritten"}),
        ("files_share_internal", {"path": outside[0], "shareWith": live_member.user}),
        ("files_share_internal", {"fileId": outside_id, "shareWith": live_member.user}),
        ("files_read", {"path": f"{jail}/inside.md"}),
        ("files_grep", {"query": WORD, "path": f"{folder}/Projects-old"}),
    ])
    reads, missing, by_id, unknown_id, grep, search, write, share, share_id, inside, grep_out = \
        results[:3], results[3], results[4], results[5], *results[6:]
    for path, result in zip(outside, reads, strict=True):
        assert result.is_error and result.content[0].text == missing.content[0].text.replace(
            f"{folder}/nothing-here.md", path)
    assert by_id.is_error and by_id.content[0].text == unknown_id.content[0].text.replace(
        "2000000000", str(outside_id))
    assert share_id.is_error and share_id.content[0].text == by_id.content[0].text
    grep_data = json.loads(grep.content[0].text)
    assert grep_data["hits"] == [] and grep_data["total"] == 0
    assert all(f["path"].startswith(jail + "/") for f in json.loads(search.content[0].text)["files"])
    assert write.is_error and share.is_error and grep_out.is_error
    assert "inside plan" in json.loads(inside.content[0].text)["content"]
    # read back with a plain client: the outside file unchanged, no share made
    got = live_http.get(f"/remote.php/dav/files/{live_account.user}{outside[0]}")
    assert got.status_code == 200 and WORD in got.text
    shares = live_http.get("/ocs/v2.php/apps/files_sharing/api/v1/shares",
                           params={"path": outside[0], "format": "json"})
    assert shares.status_code == 200 and shares.json()["ocs"]["data"] == []


def test_live_read_only_lists_only_read_only_tools_and_refuses_a_write(jailed, live_http, live_account):
    from mcp_nextcloud.cli import toolspec
    from mcp_nextcloud.server.profile import build

    specs = toolspec.load()
    target = f"{jailed['jail']}/should-not-exist.md"
    names, (write, whoami) = _run(jailed["ctx"], build("live-reader", read_only=True), [
        ("files_write", {"path": target, "content": "x"}), ("nextcloud_whoami", {})])
    assert names and all(specs[n]["annotations"].get("readOnlyHint") is True for n in names)
    assert write.is_error and "not available to this agent" in write.content[0].text
    assert json.loads(whoami.content[0].text)["profile"]["readOnly"] is True
    gone = live_http.request("PROPFIND", f"/remote.php/dav/files/{live_account.user}{target}",
                             headers={"Depth": "0"})
    assert gone.status_code == 404


def _cli_env(live_account: Any, tmp_path: Any) -> tuple[Any, dict[str, str]]:
    """(this tree's root, the environment of a `python -m mcp_nextcloud` on the live account, data under tmp_path)."""
    import os
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"NEXTCLOUD_URL": live_account.url, "NEXTCLOUD_USER": live_account.user,
                "NEXTCLOUD_APP_PASSWORD": live_account.app_password, "PYTHONPATH": str(root),
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"), "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "c.db"),
                "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "config" / "account.json")})
    return root, env


def test_live_per_token_profiles_hold_over_http(jailed, live_account, live_http, tmp_path):
    """serve --http --read-only on the real server, plus a token jailed in the scratch Projects folder."""
    import subprocess
    import sys

    import httpx

    from tests.server.test_hostile_serve import _result, _rpc, _session
    from tests.server.test_profiles_serve import serve_http

    root, env = _cli_env(live_account, tmp_path)
    jail, folder = jailed["jail"], jailed["folder"]
    added = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "token", "add", "--name", "live-scans", "--folder",
                            jail,
                            "--json"], env=env, cwd=str(root), capture_output=True, text=True, timeout=120)
    assert added.returncode == 0, added.stderr
    scans = json.loads(added.stdout)["token"]
    with serve_http(env, "--read-only") as (url, _proc):
        main = (tmp_path / "config" / "http-token").read_text().strip()

        def call(headers, name, args, rid):
            resp = httpx.post(url, json=_rpc("tools/call", {"name": name, "arguments": args}, rid), headers=headers,
                              timeout=120)
            assert resp.status_code == 200, resp.text
            return _result(resp)["result"]

        scanner, reader = _session(url, scans), _session(url, main)
        outside = f"{folder}/Projects-old/outside.md"
        assert call(scanner, "files_read", {"path": outside}, 2)["isError"]
        assert not call(scanner, "files_read", {"path": f"{jail}/inside.md"}, 3)["isError"]
        made = call(scanner, "files_write", {"path": f"{jail}/from-token.md", "content": "filed by the token"}, 4)
        assert not made["isError"], made["content"][0]["text"]
        assert call(scanner, "files_write", {"path": f"{folder}/escaped.md", "content": "x"}, 5)["isError"]
        assert WORD in json.loads(call(reader, "files_read", {"path": outside}, 6)["content"][0]["text"])["content"]
        refused = call(reader, "files_write", {"path": f"{jail}/from-main.md", "content": "x"}, 7)
        assert refused["isError"] and "not available to this agent" in refused["content"][0]["text"]
    dav = f"/remote.php/dav/files/{live_account.user}"
    assert live_http.get(f"{dav}{jail}/from-token.md").text == "filed by the token"
    for never in (f"{folder}/escaped.md", f"{jail}/from-main.md"):
        assert live_http.request("PROPFIND", dav + never, headers={"Depth": "0"}).status_code == 404


def test_live_a_folder_scoped_token_lists_only_file_tools_and_whoami_says_so(jailed, live_account, live_http,
                                                                           tmp_path):
    """`token add --folder X --read-only` (a scanner agent): no Talk, calendar, Deck, contacts or tasks tool is
    listed or callable over HTTP; token add, token list and whoami say exactly what it allows."""
    import subprocess
    import sys

    from tests.server.test_hostile_serve import _session
    from tests.server.test_profiles_serve import _call, _tools, serve_http

    root, env = _cli_env(live_account, tmp_path)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *args], env=env, cwd=str(root),
                              capture_output=True, text=True, timeout=120)

    added = cli("token", "add", "--name", "live-scanner", "--folder", jailed["jail"], "--read-only")
    assert added.returncode == 0, added.stderr
    files_ro = ["files_grep", "files_history", "files_read", "files_search", "nextcloud_whoami"]
    said = f"Profile 'live-scanner': only {jailed['jail']}, read-only; tools: {', '.join(files_ro)}."
    assert said in added.stderr and "file tools only" in added.stderr
    assert said in cli("token", "list").stdout
    with serve_http(env) as (url, _proc):
        scanner = _session(url, added.stdout.strip())
        assert sorted(_tools(url, scanner)) == files_ro
        for tool, args in (("talk_rooms", {}), ("calendar_list_events", {"start": "2030-01-01", "end": "2030-01-02"}),
                           ("tasks_list", {}), ("contacts_search", {"query": "a"}), ("deck_list_cards", {})):
            refused = _call(url, scanner, tool, args, 2)
            assert refused["isError"] and "not available to this agent" in refused["content"][0]["text"], tool
        who = json.loads(_call(url, scanner, "nextcloud_whoami", {}, 3)["content"][0]["text"])
    assert who["profile"]["offered"] == files_ro and said in who["hint"]
