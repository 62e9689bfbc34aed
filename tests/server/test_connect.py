"""`mcp-nextcloud connect HOST` writes each host's own config into a temporary HOME, read back against the shape
the host documents; idempotent, with a backup, comments kept, and an unreadable file left untouched."""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

import anyio
import jsonschema
import pytest

from mcp_nextcloud.cli import main
from mcp_nextcloud.cli import jsonc
from mcp_nextcloud.nextcloud.config import Account, save_account

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sEcReT-app-password-12345"

_STRINGS = {"type": "object", "additionalProperties": {"type": "string"}}
_ARGS = {"type": "array", "items": {"type": "string"}}


def _servers(key: str, entry: dict) -> dict:
    return {"type": "object", "required": [key], "properties": {
        key: {"type": "object", "minProperties": 1, "additionalProperties": entry}}}


# The documented shapes (Claude Desktop's and Cursor's mcpServers, Claude Code's ~/.claude.json user scope,
# VS Code's mcp.json `servers` + `inputs`, Zed's `context_servers` custom server).
_PLAIN = {"type": "object", "required": ["command", "args"], "additionalProperties": False,
          "properties": {"command": {"type": "string"}, "args": _ARGS, "env": _STRINGS}}
_TYPED = {**_PLAIN, "required": ["type", "command"],
          "properties": {**_PLAIN["properties"], "type": {"const": "stdio"}}}
SHAPES = {
    "claude-desktop": (_servers("mcpServers", _PLAIN), "Library/Application Support/Claude/claude_desktop_config.json"
                       if sys.platform == "darwin" else ".config/Claude/claude_desktop_config.json"),
    "claude-code": (_servers("mcpServers", _TYPED), ".claude.json"),
    "vscode": ({**_servers("servers", _TYPED), "properties": {**_servers("servers", _TYPED)["properties"],
                                                              "inputs": {"type": "array"}}},
               "Library/Application Support/Code/User/mcp.json" if sys.platform == "darwin"
               else ".config/Code/User/mcp.json"),
    "cursor": (_servers("mcpServers", _PLAIN), ".cursor/mcp.json"),
    "zed": (_servers("context_servers", _PLAIN), ".config/zed/settings.json"),
}


@pytest.fixture
def home(fresh_home):
    """A temporary HOME with a stored login (mcp-nextcloud login's file)."""
    save_account(Account(url="https://cloud.example.org", user="alice", app_password=SECRET))
    return fresh_home


def _connect(*argv: str, capsys) -> tuple[int, dict]:
    code = main(["connect", *argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


@pytest.mark.parametrize("host", sorted(SHAPES))
def test_connect_writes_the_hosts_documented_shape(home, host, capsys):
    schema, where = SHAPES[host]
    code, answer = _connect(host, "--mail", capsys=capsys)
    path = home / where
    assert code == 0 and answer["changed"] is True and Path(answer["file"]) == path
    text = path.read_text()
    data = jsonc.parse(text)
    jsonschema.validate(data, schema)
    key = next(iter(schema["properties"]))
    files, mail = data[key]["nextcloud"], data[key]["nextcloud-mail"]
    assert os.path.isabs(files["command"]) and os.access(files["command"], os.X_OK)
    assert files["args"][-1] == "serve" and mail["args"][-2:] == ["serve", "--mail"]
    assert SECRET not in text and "NEXTCLOUD_APP_PASSWORD" not in text
    # idempotent: a second run changes nothing and makes no backup
    code, again = _connect(host, "--mail", capsys=capsys)
    assert code == 0 and again["changed"] is False and path.read_text() == text
    assert not path.with_name(path.name + ".bak").exists()


def test_other_servers_and_settings_are_kept_and_the_previous_file_backed_up(home, capsys):
    path = home / SHAPES["cursor"][1]
    path.parent.mkdir(parents=True)
    before = {"mcpServers": {"github": {"command": "npx", "args": ["-y", "gh"]}}, "other": [1, 2]}
    path.write_text(json.dumps(before))
    code, answer = _connect("cursor", capsys=capsys)
    assert code == 0 and answer["changed"] and answer["backup"] == str(path) + ".bak"
    after = json.loads(path.read_text())
    assert after["other"] == [1, 2] and after["mcpServers"]["github"] == before["mcpServers"]["github"]
    assert "nextcloud" in after["mcpServers"] and json.loads(Path(answer["backup"]).read_text()) == before


ZED_SETTINGS = """// Zed settings
//
// For information on how to configure Zed, see the Zed documentation.
{
  "theme": "One Dark", // my theme
  /* fonts */
  "buffer_font_size": 15,
  "context_servers": {
    "other": {"command": "/bin/other", "args": [], "env": {}},
  },
}
"""


def test_zed_settings_with_comments_keep_every_comment(home, capsys):
    path = home / SHAPES["zed"][1]
    path.parent.mkdir(parents=True)
    path.write_text(ZED_SETTINGS)
    code, answer = _connect("zed", capsys=capsys)
    text = path.read_text()
    assert code == 0 and answer["changed"]
    for line in ZED_SETTINGS.splitlines():     # every original line, comments included, is still there
        assert line in text
    data = jsonc.parse(text)
    assert data["theme"] == "One Dark" and data["context_servers"]["other"]["command"] == "/bin/other"
    jsonschema.validate(data, SHAPES["zed"][0])
    assert _connect("zed", capsys=capsys)[1]["changed"] is False
    # no context_servers yet: the object is added at the top, comments kept
    path.write_text('// hello\n{\n  "theme": "Ayu" // dark\n}\n')
    assert _connect("zed", "--mail", capsys=capsys)[0] == 0
    data = jsonc.parse(path.read_text())
    assert "// hello" in path.read_text() and "// dark" in path.read_text()
    assert data["theme"] == "Ayu" and set(data["context_servers"]) == {"nextcloud", "nextcloud-mail"}


def test_a_commented_file_with_a_different_entry_or_a_broken_file_is_left_untouched(home, capsys):
    path = home / SHAPES["zed"][1]
    path.parent.mkdir(parents=True)
    clash = '// mine\n{"context_servers": {"nextcloud": {"command": "/old/path", "args": ["serve"]}}}\n'
    for text in (clash, '{"context_servers": {', "[1, 2]", '{"context_servers": []}'):
        path.write_text(text)
        code = main(["connect", "zed"])
        err = capsys.readouterr().err
        assert code != 0 and "untouched" in err and path.read_text() == text, text
        assert not path.with_name(path.name + ".bak").exists()


def test_print_shows_the_entry_and_writes_nothing(home, capsys):
    assert main(["connect", "claude-code", "--print"]) == 0
    out = capsys.readouterr().out
    assert "claude mcp add --scope user nextcloud -- " in out and '"mcpServers"' in out
    assert not (home / ".claude.json").exists() and SECRET not in out


def test_connect_logs_in_first_when_no_login_is_stored(emulator, home, capsys):
    (home / ".config" / "mcp-nextcloud" / "account.json").unlink()

    def approve():
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                emulator.approve_login("alice")
                return
            except LookupError:
                time.sleep(0.05)

    threading.Thread(target=approve, daemon=True).start()
    code = main(["connect", "cursor", "--url", emulator.url])
    out, err = capsys.readouterr()
    assert code == 0 and "/login/v2/flow/" in err and "Added nextcloud" in out
    stored = json.loads((home / ".config" / "mcp-nextcloud" / "account.json").read_text())
    assert stored["user"] == "alice"
    assert stored["app_password"] not in (home / ".cursor" / "mcp.json").read_text()


def test_without_a_login_or_an_address_connect_says_what_to_give(home, capsys):
    (home / ".config" / "mcp-nextcloud" / "account.json").unlink()
    code = main(["connect", "vscode"])
    err = capsys.readouterr().err
    assert code == 2 and "--url" in err and not (home / SHAPES["vscode"][1]).exists()


def test_the_written_entry_starts_a_server_a_real_client_lists(world, home, capsys):
    """Claude Desktop's entry, run as the host would (its command and args, a HOME and nothing else of ours)."""
    from mcp import Client, StdioServerParameters

    save_account(Account(url=world.account.url, user="alice", app_password=world.secret))
    assert main(["connect", "claude-desktop"]) == 0
    entry = json.loads((home / SHAPES["claude-desktop"][1]).read_text())["mcpServers"]["nextcloud"]
    env = {"HOME": str(home), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "MCP_NEXTCLOUD_SERVICE": "0",
           "MCP_NEXTCLOUD_INDEX": str(world.index_path), **entry["env"]}
    params = StdioServerParameters(command=entry["command"], args=[*entry["args"], "--interval", "0"], env=env)

    from mcp.client.stdio import stdio_client

    async def go():
        with open(home / "serve.log", "w") as errlog:     # the server's stderr, as a host keeps it
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                return {t.name for t in (await c.list_tools()).tools}, await c.call_tool("nextcloud_whoami", {})

    tools, whoami = anyio.run(go)
    assert {"files_grep", "files_read"} <= tools and not whoami.is_error


def test_jsonc_reads_comment_markers_inside_strings_as_text():
    text = '{\n  "url": "https://x.example/a//b", // a comment with a "quote"\n  "glob": "/* not a comment */",\n}\n'
    assert jsonc.parse(text) == {"url": "https://x.example/a//b", "glob": "/* not a comment */"}
    assert jsonc.has_comments(text) and not jsonc.has_comments('{"a": "//"}')
    added = jsonc.add_members(text, (), {"servers": {"n": {"command": "/x"}}}, has_others=True)
    assert jsonc.parse(added)["servers"] == {"n": {"command": "/x"}} and "// a comment" in added
    with pytest.raises(ValueError):
        jsonc.parse('{"a": 1 /* open')
