"""The CLI over an index shared by a plain local folder and the account (issue 9, items 3, 5 and 8).

`index status` names where each part comes from and which parts the MCP
server answers from; `index remove` drops one part, `index reset --confirm`
the whole index; grep's readable output counts the matches it shows, marks
loose (words-only) hits, and an empty `--kind` search names the kinds indexed.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS
from mcp_nextcloud.cli import main


@pytest.fixture
def shared_db(tmp_path: Path, emulator, fixture_docs) -> Path:
    """mcp_nextcloud/fixtures/docs added as a plain folder, then the emulator's account synced into the same
    database."""
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    db = tmp_path / "shared.db"
    assert main(["index", "add", str(fixture_docs), "--index", str(db), "--json"]) == 0
    with Index.open(db) as index, NextcloudClient(Account(**emulator.account("alice"))) as client:
        assert sync(client, index, pool=IN_PROCESS).complete
    return db


def test_status_names_the_account_and_each_folder(shared_db, capsys, fixture_docs, emulator):
    capsys.readouterr()
    assert main(["index", "status", "--index", str(shared_db)]) == 0
    out = capsys.readouterr().out
    assert f"from account alice on {emulator.url}" in out and "used by the MCP server" in out
    assert f"from folder {fixture_docs}" in out and "left out of MCP answers" in out
    assert main(["index", "status", "--index", str(shared_db), "--json"]) == 0
    parts = json.loads(capsys.readouterr().out)["parts"]
    assert [p["from"] for p in parts] == ["account", "folder"]
    assert parts[0]["inAnswers"] is True and parts[1]["inAnswers"] is False and parts[1]["files"] > 5


def test_remove_a_folder_then_the_account(shared_db, capsys, fixture_docs):
    from mcp_nextcloud.indexer.index import Index

    capsys.readouterr()
    assert main(["index", "remove", str(fixture_docs), "--index", str(shared_db)]) == 0
    assert "removed" in capsys.readouterr().out
    with Index.open(shared_db) as index:
        assert index.roots() == [] and index.get_file(path="/notes.txt") is None
        assert index.get_file(path="/Documents/notes.txt") is not None
    assert main(["index", "remove", str(fixture_docs), "--index", str(shared_db)]) == 2
    assert "not a folder of this index" in capsys.readouterr().err
    assert main(["index", "remove", "--account", "--index", str(shared_db)]) == 0
    with Index.open(shared_db) as index:
        st = index.status()
        assert st["files"] == 0 and index.get_meta("last_sync_at") is None and st["parts"] == []


def test_reset_needs_confirm(shared_db, capsys):
    capsys.readouterr()
    assert main(["index", "reset", "--index", str(shared_db)]) == 2
    assert "--confirm" in capsys.readouterr().err and shared_db.exists()
    assert main(["index", "reset", "--confirm", "--index", str(shared_db)]) == 0
    assert not shared_db.exists() and "reset" in capsys.readouterr().out


def test_grep_kind_with_no_match_names_the_kinds_indexed(shared_db, capsys):
    capsys.readouterr()
    assert main(["grep", "café", "--kind", "spreadsheet", "--index", str(shared_db)]) == 0
    err = capsys.readouterr().err
    assert "no indexed file is of kind spreadsheet" in err and "xlsx (" in err and "pdf (" in err


def test_grep_lines_count_shown_matches_and_mark_loose_hits(shared_db, capsys):
    capsys.readouterr()
    assert main(["grep", "olive shopping", "--path", "/Documents", "--index", str(shared_db)]) == 0
    out = capsys.readouterr().out
    head = next(line for line in out.splitlines() if line.startswith("/Documents/notes.txt"))
    assert "loose: the words, not the phrase" in head and "2 matches shown" in head
    assert main(["grep", "olive badger", "--path", "/Documents", "--index", str(shared_db)]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("/Documents/notes.txt"))
    assert "loose" not in head and "1 match shown" in head


def test_remove_from_a_missing_index_creates_none(tmp_path, capsys):
    missing = tmp_path / "typo.db"
    assert main(["index", "remove", "--account", "--index", str(missing)]) == 2
    assert "there is no index" in capsys.readouterr().err.lower() and not missing.exists()


def test_status_on_a_fresh_home_says_nothing_is_synced_yet(fresh_home, capsys):
    """Issue 50: not "there is no index" with exit 2: a new machine is not a mistake; nothing is created."""
    assert main(["index", "status"]) == 0
    out = capsys.readouterr().out
    assert "Nothing is synced yet" in out and "mcp-nextcloud index sync" in out
    assert main(["index", "status", "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["exists"] is False and answer["files"] == 0 and "index sync" in answer["hint"]
    assert not list(fresh_home.rglob("*.db"))
    assert main(["index", "status", "--index", str(fresh_home / "typo.db")]) == 2   # a path given: a mistake
