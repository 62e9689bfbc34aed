"""Every shell command in README.md and docs/ is run, as written, against the Nextcloud emulator.

A fenced block marked `sh`, `console` or `bash` is a list of commands (a `console` block's commands start with
`$ `; a line ending in a backslash continues on the next). Each runs with `bash -c` in the checkout, with
`mcp-nextcloud` on PATH (this checkout's code), an account on a fresh emulator in the environment, a temporary
HOME holding `~/Nextcloud` (a copy of the sample documents) and no standard input, and must exit 0.

A block that cannot run here says so on the line before it, with the reason:
`<!-- doc-test: skip: why -->` (a real server, a person in a browser, a command that runs until Ctrl-C).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# docs/cli.md shows failures on purpose (a typo, a missing argument): tests/server/test_docs_cli.py runs its
# commands in order with the exit code each should have, so it is not run here as well.
OWN_RUNNER = {ROOT / "docs" / "cli.md"}
DOCS = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p not in OWN_RUNNER)]
_FENCE = re.compile(r"^```(\w*)\s*$")
_SKIP = re.compile(r"<!--\s*doc-test:\s*skip:\s*(.+?)\s*-->")


@dataclass
class Block:
    file: str
    line: int
    commands: list[str]
    skip: str | None


def blocks(path: Path) -> list[Block]:
    """The shell blocks of a Markdown file, each with its commands and its skip reason (if marked)."""
    out: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        fence = _FENCE.match(lines[i])
        if not fence:
            i += 1
            continue
        lang, start, body = fence.group(1), i, []
        i += 1
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        if lang not in ("sh", "console", "bash"):
            continue
        previous = next((lines[j] for j in range(start - 1, -1, -1) if lines[j].strip()), "")
        mark = _SKIP.search(previous)
        out.append(Block(path.name, start + 1, _commands(body, console=lang == "console"),
                         mark.group(1) if mark else None))
    return out


def _commands(body: list[str], console: bool) -> list[str]:
    commands: list[str] = []
    pending = ""
    for raw in body:
        line = raw.rstrip()
        if console and not pending:
            if not line.startswith("$ "):
                continue                       # output shown in a console block
            line = line[2:]
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        command = (pending + line).strip()
        pending = ""
        if command and not command.startswith("#"):
            commands.append(command)
    return commands


def test_the_harness_reads_blocks_marks_and_continuations(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n\n```sh\nmcp-nextcloud a \\\n  --b   # note\n# a comment\n```\n\n"
                   "<!-- doc-test: skip: a person approves -->\n```console\n$ mcp-nextcloud login X\noutput\n```\n"
                   "```json\n{}\n```\n")
    found = blocks(doc)
    assert [b.commands for b in found] == [["mcp-nextcloud a    --b   # note"], ["mcp-nextcloud login X"]]
    assert [b.skip for b in found] == [None, "a person approves"]


def test_every_doc_has_its_commands_run_or_marked():
    """No block is silently left out: each either runs below or says why it cannot."""
    for path in DOCS:
        for block in blocks(path):
            assert block.commands, f"{block.file}:{block.line}: an empty shell block"
            assert block.skip is None or len(block.skip) > 10, f"{block.file}:{block.line}: say why it is skipped"


@pytest.fixture
def shell(emulator, tmp_path):
    """The environment a reader's shell has: the command on PATH, an account, a HOME with a sync folder."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "mcp-nextcloud"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mcp_nextcloud "$@"\n')
    shim.chmod(0o755)
    home = tmp_path / "home"
    shutil.copytree(ROOT / "mcp_nextcloud" / "fixtures" / "docs", home / "Nextcloud")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    creds = emulator.account("alice")
    env.update({"PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", "HOME": str(home),
                "PYTHONPATH": str(ROOT), "NEXTCLOUD_URL": creds["url"], "NEXTCLOUD_USER": creds["user"],
                "NEXTCLOUD_APP_PASSWORD": creds["app_password"],
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "index.db"), "MCP_NEXTCLOUD_SERVICE": "0",
                "MCP_NEXTCLOUD_TELEMETRY": str(tmp_path / "calls.sqlite"),
                "MCP_NEXTCLOUD_CONFIG": str(tmp_path / "account.json")})
    env.pop("XDG_CONFIG_HOME", None)
    return env


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_the_commands_of_a_doc_run(path, shell):
    ran = 0
    for block in blocks(path):
        if block.skip:
            continue
        for command in block.commands:
            done = subprocess.run(["bash", "-c", command], env=shell, cwd=str(ROOT), stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, (f"{block.file}:{block.line}: `{command}` exit {done.returncode}\n"
                                          f"{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
            assert "Traceback" not in done.stderr, f"{block.file}:{block.line}: `{command}`\n{done.stderr[-1500:]}"
            ran += 1
    marked = [b for b in blocks(path) if b.skip]
    assert ran or marked or not blocks(path)
