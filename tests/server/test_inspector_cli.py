"""A real MCP client nobody here wrote: the MCP Inspector CLI against `mcp-nextcloud serve` over stdio.

.ci/run installs @modelcontextprotocol/inspector@2.12.0 and exports
MCP_INSPECTOR (the path of its bin). Without it the test skips locally and
fails in CI (env CI set), so a broken install is never mistaken for a pass.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _inspector() -> str:
    path = os.environ.get("MCP_INSPECTOR") or shutil.which("mcp-inspector")
    if path and Path(path).exists():
        return path
    if os.environ.get("CI"):
        pytest.fail("the MCP Inspector is not installed (MCP_INSPECTOR unset): .ci/run must install "
                    "@modelcontextprotocol/inspector@2.12.0")
    pytest.skip("MCP Inspector not installed; set MCP_INSPECTOR to its mcp-inspector bin to run this test")


def _run(world, tmp_path: Path, *method: str) -> dict:
    env_args = []
    for key, value in {
        "NEXTCLOUD_URL": world.account.url, "NEXTCLOUD_USER": "alice", "NEXTCLOUD_APP_PASSWORD": world.secret,
        "MCP_NEXTCLOUD_INDEX": str(world.index_path), "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
        "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "account.json"), "PYTHONPATH": str(ROOT),
    }.items():
        env_args += ["-e", f"{key}={value}"]
    # The target is the leading run of arguments; `--` ends it because serve takes its own flags.
    cmd = [_inspector(), "--cli", sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0", "--",
           *env_args, "--cwd", str(ROOT), *method, "--format", "json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, f"inspector exit {proc.returncode}: {proc.stderr[-2000:]}"
    return json.loads(proc.stdout)["result"]


def test_inspector_lists_tools_then_greps_and_reads(world, tmp_path):
    listed = _run(world, tmp_path, "--method", "tools/list")
    tools = {t["name"]: t for t in listed["tools"]}
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    registered = {t.name for t in build_server(ServerContext(account=None, index=None))._tool_manager.list_tools()}
    assert set(tools) == registered and {"files_grep", "files_read", "deck_list_cards"} <= registered
    assert tools["files_read"]["annotations"]["readOnlyHint"] is True

    grep = _run(world, tmp_path, "--method", "tools/call", "--tool-name", "files_grep",
                "--tool-args-json", json.dumps({"query": "quota", "limit": 3}))
    assert grep.get("isError") is not True
    hits = json.loads(grep["content"][0]["text"])["hits"]
    assert hits == grep["structuredContent"]["hits"]
    manual = next(h for h in hits if h["path"] == "/Documents/manual.pdf")
    offset = manual["passages"][0]["matches"][0][0]

    read = _run(world, tmp_path, "--method", "tools/call", "--tool-name", "files_read",
                "--tool-args-json", json.dumps({"path": "/Documents/manual.pdf", "find": "quota", "limit": 2,
                                                "offset": offset}))
    found = json.loads(read["content"][0]["text"])
    assert found["path"] == "/Documents/manual.pdf" and found["fileId"] == manual["fileId"]
    assert found["matches"][0]["offset"] == offset, "grep's offset must be one files_read finds"
    assert all(m["text"].lower() == "quota" for m in found["matches"])
    assert found["total"] > 2 and found["matches"][0]["page"] == manual["passages"][0]["page"]


def test_inspector_against_a_serve_without_an_account(tmp_path):
    """A host with no account configured: the Inspector's tools/list is answered (the login tool), not refused."""
    cmd = [_inspector(), "--cli", sys.executable, "-m", "mcp_nextcloud", "serve", "--interval", "0", "--",
           "-e", f"MCP_NEXTCLOUD_CONFIG={tmp_path / 'account.json'}", "-e", f"MCP_NEXTCLOUD_INDEX={tmp_path / 'i.db'}",
           "-e", f"MCP_NEXTCLOUD_TELEMETRY={tmp_path / 'calls.sqlite'}", "-e", f"PYTHONPATH={ROOT}",
           "--cwd", str(ROOT), "--method", "tools/list", "--format", "json"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("NEXTCLOUD_")}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert proc.returncode == 0, f"inspector exit {proc.returncode}: {proc.stderr[-2000:]}"
    tools = json.loads(proc.stdout)["result"]["tools"]
    assert [t["name"] for t in tools] == ["nextcloud_login"]
    assert "url" in tools[0]["inputSchema"]["properties"]
