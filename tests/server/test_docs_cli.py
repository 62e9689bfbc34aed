"""docs/cli.md runs: every `$ mcp-nextcloud ...` line of its console blocks, in order, against the emulator.

A command with no output shown must succeed (exit 0); a command shown with its output must print each line
shown (a failure shown so exits 2). The doc syncs its own index first, as a new user does.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from mcp_nextcloud.cli import main
from tests.helpers import cli_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
BLOCK = re.compile(r"```console\n(.*?)```", re.DOTALL)


def examples() -> list[tuple[str, list[str]]]:
    """(command line, the output lines shown under it) for every `$ ` line of the doc's console blocks."""
    found: list[tuple[str, list[str]]] = []
    for block in BLOCK.findall(DOC.read_text(encoding="utf-8")):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            elif line.strip():
                found[-1][1].append(line)
    return found


def test_the_doc_shows_commands() -> None:
    commands = examples()
    assert len(commands) >= 25 and all(c.startswith("mcp-nextcloud ") for c, _ in commands)


def test_every_command_in_the_doc_runs(world: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    for key, value in cli_env(world, tmp_path, tmp_path / "index.db").items():   # the doc syncs its own
        monkeypatch.setenv(key, value)
    world.emulator.faults.clear()
    seen = len(list(world.emulator.requests))
    for line, shown in examples():
        capsys.readouterr()
        try:
            code = main(shlex.split(line)[1:])
        except SystemExit as stop:    # --help, and argparse's usage errors
            code = int(stop.code or 0)
        out, err = capsys.readouterr()
        said = out + err
        if shown:
            for expected in shown:
                assert expected in said, f"{line}: {expected!r} not in {said!r}"
            assert code in (0, 2), (line, code, said)
        else:
            assert code == 0, f"{line} exited {code}: {said}"
            assert said.strip(), f"{line} printed nothing"
    # Mail's refresh of its copy of a mailbox (POST .../sync, before a search) is a read
    writes = [(m, p) for m, p, _ in list(world.emulator.requests)[seen:]
              if m in ("PUT", "POST", "DELETE", "MOVE", "COPY") and not p.endswith("/sync")]
    assert writes == []   # the doc's writes are dry runs
