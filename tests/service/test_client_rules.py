"""The client's own rules (it decides without argparse): which commands need the service, which run here."""
from __future__ import annotations

from mcp_nextcloud.cli.root import build_parser
from mcp_nextcloud.service import client


def test_the_client_knows_every_command_of_the_parser() -> None:
    names = {name for name, _, _ in build_parser().commands}
    assert set(client.COMMANDS) | {"help", "manifest", "version"} == names   # those three: NO_INDEX


def test_commands_that_need_no_index_are_not_forwarded(monkeypatch) -> None:
    monkeypatch.setenv(client.SWITCH, "1")
    assert client.forwarded(["grep", "x"]) and client.forwarded(["index", "status"])
    for argv in ([], ["--help"], ["help", "grep"], ["manifest"], ["grep", "--help"], ["files", "-h"], ["grpe", "x"],
                 ["serve"], ["login", "https://x"], ["version"], ["--version"], ["index", "watch", "."]):
        assert not client.forwarded(argv), argv
    assert client.forwarded(["grep", "--", "--help"])   # after --, a word to search for
