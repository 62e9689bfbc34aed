"""Where each MCP host keeps its servers, and the entry that starts `mcp-nextcloud serve` in its own format.

One row per host: the config file (per OS, from the host's documentation), the top-level key that holds the
servers, and the shape of one entry. The entry names the command by its absolute path (a GUI host does not
inherit the shell's PATH or virtual environment) and carries no secret: after `mcp-nextcloud login` the app
password is in our own config file, which `serve` reads.

    claude-desktop  claude_desktop_config.json   {"mcpServers": {NAME: {"command", "args", "env"}}}
    claude-code     ~/.claude.json (user scope)  {"mcpServers": {NAME: {"type": "stdio", "command", "args", "env"}}}
    vscode          <user>/Code/User/mcp.json    {"servers": {NAME: {"type": "stdio", "command", "args"}}, "inputs": []}
    cursor          ~/.cursor/mcp.json           {"mcpServers": {NAME: {"command", "args", "env"}}}
    zed             ~/.config/zed/settings.json  {"context_servers": {NAME: {"command", "args", "env"}}}
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from mcp_nextcloud.environment import environ, expand, home

# Variables an entry passes on when this shell sets them: where our account and index are (never a secret).
PASSED_ON = ("MCP_NEXTCLOUD_CONFIG", "MCP_NEXTCLOUD_INDEX")


@dataclass(frozen=True)
class Host:
    name: str
    title: str                          # as the person knows it
    key: str                            # the top-level object holding the servers
    path: Callable[[], Path]            # its config file on this machine
    shape: Callable[[list[str], dict[str, str]], dict[str, Any]]   # (command line, env) -> one entry
    extra: tuple[tuple[str, Any], ...] = ()   # other top-level keys a new file starts with
    after: str = "restart it to load the server"


def _app_support(*parts: str) -> Path:
    """A GUI app's per-user folder: ~/Library/Application Support (macOS), %APPDATA% (Windows), XDG config."""
    if sys.platform == "darwin":
        return home().joinpath("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return Path(environ().get("APPDATA") or home() / "AppData" / "Roaming").joinpath(*parts)
    base = environ().get("XDG_CONFIG_HOME", "").strip()
    return (Path(base) if base else home() / ".config").joinpath(*parts)


def _plain(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {"command": argv[0], "args": argv[1:], "env": env}


def _typed(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    return {"type": "stdio", "command": argv[0], "args": argv[1:], "env": env}


def _vscode(argv: list[str], env: dict[str, str]) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "stdio", "command": argv[0], "args": argv[1:]}
    if env:
        entry["env"] = env
    return entry


def _zed_settings() -> Path:
    if sys.platform == "win32":
        return _app_support("Zed", "settings.json")
    base = environ().get("XDG_CONFIG_HOME", "").strip() if sys.platform != "darwin" else ""
    return (Path(base) if base else home() / ".config") / "zed" / "settings.json"


HOSTS: dict[str, Host] = {h.name: h for h in (
    Host("claude-desktop", "Claude Desktop", "mcpServers",
         lambda: _app_support("Claude", "claude_desktop_config.json"), _plain,
         after="quit and reopen Claude Desktop to load the server"),
    Host("claude-code", "Claude Code", "mcpServers", lambda: home() / ".claude.json", _typed,
         after="start a new `claude` session (`/mcp` lists the server)"),
    Host("vscode", "VS Code", "servers", lambda: _app_support("Code", "User", "mcp.json"), _vscode,
         extra=(("inputs", []),), after="VS Code starts it from the MCP: List Servers view (or on the next chat)"),
    Host("cursor", "Cursor", "mcpServers", lambda: home() / ".cursor" / "mcp.json", _plain,
         after="Cursor picks it up in Settings > MCP (toggle it on if asked)"),
    Host("zed", "Zed", "context_servers", _zed_settings, _plain,
         after="Zed reloads its settings by itself; the Agent Panel's settings list the server"),
)}


def server_command() -> list[str]:
    """The absolute command line that runs this installation's `mcp-nextcloud` (without `serve`).

    The console script beside this interpreter when there is one (a venv, `uv tool`, `pipx`), else this
    interpreter with `-m`. The interpreter path is made absolute but not resolved: a venv's python is a
    symlink whose target runs outside the venv."""
    python = Path(os.path.abspath(sys.executable))
    script = python.parent / ("mcp-nextcloud.exe" if sys.platform == "win32" else "mcp-nextcloud")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(python), "-m", "mcp_nextcloud"]


def entries(host: Host, name: str, mail: bool) -> dict[str, dict[str, Any]]:
    """The entries `connect` writes: NAME (files, calendar...), and NAME-mail (`serve --mail`) on request."""
    base = server_command()
    env = {key: str(expand(environ()[key]).resolve()) for key in PASSED_ON if environ().get(key)}
    out = {name: host.shape([*base, "serve"], dict(env))}
    if mail:
        out[f"{name}-mail"] = host.shape([*base, "serve", "--mail"], dict(env))
    return out


def claude_code_line(entry: dict[str, Any], name: str) -> str:
    """The `claude mcp add` command line that adds the same entry (user scope)."""
    import shlex

    env = [f"--env {shlex.quote(f'{k}={v}')}" for k, v in entry.get("env", {}).items()]
    return " ".join(["claude mcp add --scope user", *env, shlex.quote(name), "--",
                     *(shlex.quote(part) for part in [entry["command"], *entry["args"]])])
