"""Profiles as a person sets them: `serve --folder/--read-only/--tools`, `token add`, per-token HTTP (issue 27).

Real subprocesses on the session's emulator and index: the serve token runs under serve's options, an
added token under its own profile, a session cannot be borrowed by another token, and `report` counts
the refusals of each profile.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from tests.server.test_hostile_serve import HEADERS, _result, _rpc, _session
from tests.server.test_server_transports import ROOT, _env, _free_port
from tests.helpers import stop


def _cli(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], env=env, cwd=str(ROOT), capture_output=True,
                          text=True, timeout=120)


@contextmanager
def serve_http(env: dict[str, str], *options: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """`serve --http` with `options` as a subprocess, ready: (its URL, the process); stopped on leaving."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "serve", "--http", "--port", str(port),
                             "--interval", "0", *options], env=env, cwd=str(ROOT), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        try:
            httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/mcp", proc
    finally:
        stop(proc)


@pytest.fixture
def served(world: Any, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """serve --http --folder /Projects with one added token: research (read-only, whole account)."""
    env = _env(world, tmp_path)
    added = _cli(env, "token", "add", "--name", "research", "--read-only", "--json")
    assert added.returncode == 0, added.stdout + added.stderr
    research = json.loads(added.stdout)["token"]
    with serve_http(env, "--folder", "/Projects") as (url, proc):
        main = (tmp_path / "config" / "http-token").read_text().strip()
        yield {"url": url, "proc": proc, "main": main, "research": research, "env": env, "tmp": tmp_path}


def _call(url: str, headers: dict[str, str], name: str, args: dict[str, Any], rid: int) -> dict[str, Any]:
    resp = httpx.post(url, json=_rpc("tools/call", {"name": name, "arguments": args}, rid), headers=headers,
                      timeout=60)
    assert resp.status_code == 200, resp.text
    return _result(resp)["result"]


def _tools(url: str, headers: dict[str, str]) -> list[str]:
    resp = httpx.post(url, json=_rpc("tools/list", {}, 50), headers=headers, timeout=60)
    return [t["name"] for t in _result(resp)["result"]["tools"]]


def test_each_token_runs_under_its_own_profile(served: dict[str, Any]) -> None:
    url = served["url"]
    jailed, research = _session(url, served["main"]), _session(url, served["research"])
    assert "files_write" in _tools(url, jailed)
    research_tools = _tools(url, research)
    assert "files_grep" in research_tools and "files_write" not in research_tools
    outside = _call(url, jailed, "files_read", {"path": "/Documents/manual.pdf", "limit": 100}, 2)
    assert outside["isError"] and "/Documents/manual.pdf" in outside["content"][0]["text"]
    inside = _call(url, jailed, "files_read", {"path": "/Projects/Alpha/notes.md"}, 3)
    assert not inside["isError"]
    everywhere = _call(url, research, "files_read", {"path": "/Documents/manual.pdf", "limit": 100}, 4)
    assert not everywhere["isError"]
    refused = _call(url, research, "files_write", {"path": "/Projects/Alpha/x.md", "content": "x"}, 5)
    assert refused["isError"] and "not available to this agent" in refused["content"][0]["text"]
    who = json.loads(_call(url, research, "nextcloud_whoami", {}, 6)["content"][0]["text"])
    assert who["profile"] == {"name": "research", "folders": None, "readOnly": True, "tools": None,
                              "offered": sorted(research_tools)}
    who_main = json.loads(_call(url, jailed, "nextcloud_whoami", {}, 7)["content"][0]["text"])
    assert who_main["profile"]["name"] == "serve" and who_main["profile"]["folders"] == ["/Projects"]


def test_a_session_cannot_be_borrowed_by_another_token(served: dict[str, Any]) -> None:
    url = served["url"]
    research = _session(url, served["research"])
    borrowed = {**research, "Authorization": f"Bearer {served['main']}"}
    resp = httpx.post(url, json=_rpc("tools/list", {}, 9), headers=borrowed, timeout=30)
    assert resp.status_code == 404 and "session" in resp.json()["message"]
    wrong = {**HEADERS, "Authorization": f"Bearer {served['research']}x"}
    assert httpx.post(url, json=_rpc("tools/list", {}, 10), headers=wrong, timeout=30).status_code == 401


def test_report_counts_refusals_by_profile(served: dict[str, Any]) -> None:
    url = served["url"]
    research = _session(url, served["research"])
    _call(url, research, "files_write", {"path": "/x.md", "content": "x"}, 2)
    jailed = _session(url, served["main"])
    _call(url, jailed, "files_read", {"path": "/Documents/notes.txt"}, 3)
    _call(url, jailed, "files_read", {"path": "/Projects/Alpha/notes.md"}, 4)
    served["proc"].terminate()
    served["proc"].wait(timeout=10)
    report = _cli(served["env"], "report", "--json")
    by_profile = {row["profile"]: row for row in json.loads(report.stdout)["profiles"]}
    assert by_profile["research"]["toolNotOffered"] == 1 and by_profile["research"]["refusals"] == 1
    assert by_profile["serve"]["outsideFolders"] == 1 and by_profile["serve"]["calls"] == 2


def test_token_add_prints_once_and_stores_only_a_digest(world: Any, tmp_path: Path) -> None:
    env = _env(world, tmp_path)
    added = _cli(env, "token", "add", "--name", "scanner", "--folder", "/Scans", "--tools",
                 "files_write,files_search")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    stored = (tmp_path / "config" / "http-tokens.json")
    assert stored.stat().st_mode & 0o777 == 0o600
    assert token not in stored.read_text() and len(token) >= 40
    listed = json.loads(_cli(env, "token", "list", "--json").stdout)["tokens"]
    summary = ("Profile 'scanner': only /Scans, reads and writes; tools: files_search, files_write. Only tools "
               "named by --tools.")
    assert listed == [{"name": "scanner", "profile": {"name": "scanner", "folders": ["/Scans"], "readOnly": False,
                                                      "tools": ["files_search", "files_write"],
                                                      "offered": ["files_search", "files_write"],
                                                      "summary": summary}}]
    assert summary in added.stderr
    plain = _cli(env, "token", "list").stdout
    assert token not in plain and summary in plain
    scans = _cli(env, "token", "add", "--name", "scans", "--folder", "/Scans", "--read-only", "--json")
    assert json.loads(scans.stdout)["profile"]["offered"] == ["files_grep", "files_history", "files_read",
                                                               "files_search", "nextcloud_whoami"]
    assert "file tools only" in json.loads(scans.stdout)["profile"]["summary"]
    assert _cli(env, "token", "remove", "--name", "scans").returncode == 0
    bad = _cli(env, "token", "add", "--name", "x", "--tools", "files_shred", "--json")
    assert bad.returncode == 2 and "unknown tool name" in json.loads(bad.stdout)["error"]["message"]
    none = _cli(env, "token", "add", "--name", "x", "--json")
    assert none.returncode == 2 and "no limits" in json.loads(none.stdout)["error"]["message"]
    assert _cli(env, "token", "remove", "--name", "scanner").returncode == 0
    assert json.loads(_cli(env, "token", "list", "--json").stdout)["tokens"] == []


@pytest.mark.parametrize("options, needle", [
    (["--tools", "files_read,files_shred"], "unknown tool name(s) files_shred"),
    (["--folder", "/Projects/../Documents"], "not a folder path"),
])
def test_serve_refuses_a_bad_profile_at_start(world: Any, tmp_path: Path, options: list[str], needle: str) -> None:
    done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0", *options],
                          env=_env(world, tmp_path), cwd=str(ROOT), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr
