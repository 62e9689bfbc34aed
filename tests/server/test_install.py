"""Installed as users install it: the wheel, built once, into clean environments with `uv tool install`, `uvx`
and `pipx install`, then `mcp-nextcloud serve` from that install under the SDK's stdio client.

uv and pipx come from the test extra (pyproject.toml). Each tool gets its own home and bin folders under a
temporary directory; the user's caches are kept (as on a user's machine) so a rerun downloads nothing. The
commands run from a folder outside the checkout, without PYTHONPATH: only the installed code can answer.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(tmp: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_", "PYTHON", "VIRTUAL_ENV", "UV_", "PIPX_"))}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The project's wheel, built once from a copy of the tracked files (the checkout gets no build/ folder)."""
    tmp = tmp_path_factory.mktemp("wheel")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    source = tmp / "src"
    for name in filter(None, files.decode().split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                    str(tmp / "dist"), str(source)], check=True, capture_output=True, timeout=300)
    (built,) = (tmp / "dist").glob("mcp_nextcloud-*.whl")
    return built


def _serve_answers(command: str, world, tmp: Path) -> tuple[set[str], dict, str]:
    """tools/list and a files_grep from `command serve`, started as a host starts it; and its module's path."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = _clean_env(tmp, NEXTCLOUD_URL=world.account.url, NEXTCLOUD_USER="alice",
                     NEXTCLOUD_APP_PASSWORD=world.secret, MCP_NEXTCLOUD_INDEX=str(world.index_path),
                     MCP_NEXTCLOUD_CONFIG=str(tmp / "account.json"), MCP_NEXTCLOUD_SERVICE="0",
                     MCP_NEXTCLOUD_TELEMETRY=str(tmp / "calls.sqlite"), HOME=str(tmp))
    params = StdioServerParameters(command=command, args=["serve", "--interval", "0"], env=env, cwd=str(tmp))

    async def go():
        with open(tmp / "serve.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                tools = {t.name for t in (await c.list_tools()).tools}
                grep = await c.call_tool("files_grep", {"query": "quota", "limit": 2})
                return tools, json.loads(grep.content[0].text)

    tools, grep = anyio.run(go)
    return tools, grep, (tmp / "serve.log").read_text()


def _module_path(python: Path, tmp: Path) -> str:
    return subprocess.run([str(python), "-c", "import mcp_nextcloud; print(mcp_nextcloud.__file__)"],
                          env=_clean_env(tmp), cwd=str(tmp), capture_output=True, text=True, check=True).stdout


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    proc = subprocess.run(argv, env=env, cwd=str(cwd), capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{argv[:4]} exit {proc.returncode}: {proc.stderr[-3000:]}"
    return proc


def test_uv_tool_install_then_serve_under_a_real_client(wheel, world, tmp_path):
    env = _clean_env(tmp_path, UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"),
                     UV_PYTHON=sys.executable, UV_PYTHON_DOWNLOADS="never")
    _run([sys.executable, "-m", "uv", "tool", "install", str(wheel)], env, tmp_path)
    command = tmp_path / "bin" / "mcp-nextcloud"
    assert command.exists(), "uv tool install put no mcp-nextcloud on its bin folder"
    assert str(tmp_path / "tools") in _module_path(tmp_path / "tools" / "mcp-nextcloud" / "bin" / "python", tmp_path)
    tools, grep, log = _serve_answers(str(command), world, tmp_path)
    assert {"files_grep", "files_read", "nextcloud_whoami"} <= tools
    assert any(h["path"] == "/Documents/manual.pdf" for h in grep["hits"]), log[-2000:]
    # uvx (uv tool run) with the same wheel: the command a host entry can hold without an install
    uvx = _run([sys.executable, "-m", "uv", "tool", "run", "--from", str(wheel), "mcp-nextcloud", "--help"],
               env, tmp_path)
    assert "connect" in uvx.stdout and "serve" in uvx.stdout


def test_pipx_install_then_serve_under_a_real_client(wheel, world, tmp_path):
    env = _clean_env(tmp_path, PIPX_HOME=str(tmp_path / "pipx"), PIPX_BIN_DIR=str(tmp_path / "bin"),
                     PIPX_MAN_DIR=str(tmp_path / "man"))
    _run([sys.executable, "-m", "pipx", "install", "--python", sys.executable, str(wheel)], env, tmp_path)
    command = tmp_path / "bin" / "mcp-nextcloud"
    assert command.exists(), "pipx install put no mcp-nextcloud on its bin folder"
    python = tmp_path / "pipx" / "venvs" / "mcp-nextcloud" / "bin" / "python"
    assert str(tmp_path / "pipx") in _module_path(python, tmp_path)
    tools, grep, log = _serve_answers(str(command), world, tmp_path)
    assert {"files_grep", "files_read", "nextcloud_whoami"} <= tools
    assert any(h["path"] == "/Documents/manual.pdf" for h in grep["hits"]), log[-2000:]
