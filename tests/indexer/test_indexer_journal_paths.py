"""A sync folder's files carry their real Nextcloud paths and fileIds, whatever else the index holds.

Real folders in tmp dirs, realistic `.sync_*.db` journals (`make_journal`), a
nextcloud.cfg written as the desktop client writes it (`write_desktop_config`,
found through $MCP_NEXTCLOUD_DESKTOP_CONFIG), and the real HTTP emulator for
the remote side.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mcp_nextcloud.indexer.local.desktop_config import (RemotePathError, find_sync_folder, normalize_remote_path,
                                                        read_sync_folders)
from mcp_nextcloud.indexer.local.folder import index_folder
from mcp_nextcloud.cli import main

MTIME = 1_700_000_000


def write(path: Path, text: str, mtime: float = MTIME) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def sync_folder(root: Path, make_journal, files: dict[str, tuple[str, int]]) -> Path:
    """A desktop-client sync folder: files {relative path: (text, fileId)} and the journal rows for them."""
    rows = []
    for rel, (text, fid) in files.items():
        f = write(root / rel, text)
        rows.append((rel, f"{fid:08d}ocqwerty1234", f"etag{fid}", MTIME, f.stat().st_size, 0))
    dirs = {rel.rsplit("/", 1)[0] for rel in files if "/" in rel}
    rows += [(d, f"{900 + i:08d}ocqwerty1234", f"detag{i}", MTIME, 0, 2) for i, d in enumerate(sorted(dirs))]
    make_journal(root, rows)
    return root


def by_path(index, source: str = "local") -> dict[str, int | None]:
    return {r.path: r.file_id for r in index.files_under("/", source=source)}


# -- the audit's scenario --------------------------------------------------------------------------------------
def test_plain_folder_first_then_sync_folder_keeps_the_nextcloud_path(tmp_path, index, counting_pool, make_journal):
    write(tmp_path / "A" / "todo.txt", "buy a kettle")
    sync_folder(tmp_path / "NC", make_journal, {"Documents/note.txt": ("the heron note", 123)})
    assert index_folder(index, tmp_path / "A", pool=counting_pool).path == "/"
    rep = index_folder(index, tmp_path / "NC", pool=counting_pool)
    assert (rep.path, rep.remote_path, rep.remote_path_from) == ("/", "/", "default")
    assert any("--remote-path" in w for w in rep.warnings)   # "/" was assumed: the report says how to correct it
    hits = index.grep("heron").hits
    assert [(h.path, h.fileId) for h in hits] == [("/Documents/note.txt", 123)]
    assert by_path(index) == {"/todo.txt": None, "/Documents/note.txt": 123}
    assert index.local_folder_of("/Documents/note.txt") == str(tmp_path / "NC")
    assert index.local_folder_of("/todo.txt") == str(tmp_path / "A")
    # Re-running either folder changes nothing and extracts nothing.
    n = counting_pool.count
    for folder in ("A", "NC", "A"):
        r = index_folder(index, tmp_path / folder, pool=counting_pool)
        assert (r.extracted, r.removed, r.moved) == (0, 0, 0)
    assert counting_pool.count == n and by_path(index)["/Documents/note.txt"] == 123


def test_a_plain_folder_yields_a_colliding_path_to_the_sync_folder(tmp_path, index, counting_pool, make_journal):
    write(tmp_path / "A" / "Documents" / "note.txt", "an old copy about the ibis")
    write(tmp_path / "A" / "other.txt", "unrelated ibis")
    sync_folder(tmp_path / "NC", make_journal, {"Documents/note.txt": ("the current heron note", 123)})
    index_folder(index, tmp_path / "A", pool=counting_pool)
    rep = index_folder(index, tmp_path / "NC", pool=counting_pool)
    note = [w for w in rep.warnings if "/Documents/note.txt" in w]
    assert note and str(tmp_path / "A" / "Documents" / "note.txt") in note[0] and "--index" in note[0]
    rec = index.get_file(path="/Documents/note.txt")
    assert (rec.file_id, rec.local_path) == (123, str(tmp_path / "NC" / "Documents" / "note.txt"))
    assert index.grep("old copy").total == 0 and index.grep("heron").total == 1
    # The plain folder again: its colliding file is skipped with a reason, the sync folder's record stays.
    rep = index_folder(index, tmp_path / "A", pool=counting_pool)
    assert len(rep.warnings) == 1 and "sync folder" in rep.warnings[0] and "retry" not in rep.warnings[0].lower()
    assert index.get_file(path="/Documents/note.txt").file_id == 123
    assert by_path(index) == {"/Documents/note.txt": 123, "/other.txt": None}


def test_a_folder_that_becomes_a_sync_folder_gets_its_nextcloud_paths_without_extraction(
        tmp_path, index, counting_pool, make_journal):
    """Also what an index written by the old namespacing code goes through: '/NC/...' becomes the real path."""
    write(tmp_path / "A" / "todo.txt", "buy a kettle")
    write(tmp_path / "NC" / "Documents" / "note.txt", "the heron note")
    index_folder(index, tmp_path / "A", pool=counting_pool)
    assert index_folder(index, tmp_path / "NC", pool=counting_pool).path == "/NC"
    assert "/NC/Documents/note.txt" in by_path(index)
    n = counting_pool.count
    sync_folder(tmp_path / "NC", make_journal, {"Documents/note.txt": ("the heron note", 123)})
    rep = index_folder(index, tmp_path / "NC", pool=counting_pool, remote_path="/Work/")
    assert (rep.path, rep.remote_path, rep.extracted, rep.removed) == ("/Work", "/Work", 0, 0)
    assert counting_pool.count == n   # renamed in place: the text is kept
    assert by_path(index) == {"/todo.txt": None, "/Work/Documents/note.txt": 123}
    assert [(h.path, h.fileId) for h in index.grep("heron").hits] == [("/Work/Documents/note.txt", 123)]


# -- which Nextcloud folder a sync folder mirrors ------------------------------------------------------------
def test_remote_path_option_maps_a_subfolder_sync_and_is_remembered(tmp_path, index, counting_pool, make_journal,
                                                                   write_desktop_config, monkeypatch):
    root = sync_folder(tmp_path / "Work", make_journal, {"Plans/q3.md": ("# Q3\n\nthe saffron plan", 321),
                                                         "readme.txt": ("read me", 322)})
    rep = index_folder(index, root, pool=counting_pool, remote_path="Work")
    assert (rep.path, rep.remote_path, rep.remote_path_from, rep.warnings) == ("/Work", "/Work", "option", [])
    assert by_path(index) == {"/Work/Plans/q3.md": 321, "/Work/readme.txt": 322}
    # A config that says otherwise does not override what the user stated.
    cfg = write_desktop_config(tmp_path / "cfg" / "nextcloud.cfg", [(str(root), "/Elsewhere", ".sync_0a1b2c3d4e5f.db")])
    monkeypatch.setenv("MCP_NEXTCLOUD_DESKTOP_CONFIG", str(cfg))
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.remote_path, rep.remote_path_from, rep.extracted) == ("/Work", "option", 0)
    assert index.status()["roots"][0]["remotePath"] == "/Work"


def test_the_desktop_client_config_maps_a_subfolder_sync(tmp_path, index, counting_pool, make_journal,
                                                        write_desktop_config, monkeypatch):
    root = sync_folder(tmp_path / "Büro Ü1", make_journal, {"Plans/q3.md": ("the saffron plan", 321)})
    other = tmp_path / "Photos"
    cfg = write_desktop_config(tmp_path / "cfg" / "nextcloud.cfg", [
        (str(other), "/Photos", ".sync_ffffffffffff.db"),
        (str(root), "/Work/", ".sync_0a1b2c3d4e5f.db")])
    monkeypatch.setenv("MCP_NEXTCLOUD_DESKTOP_CONFIG", str(cfg))
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.path, rep.remote_path, rep.remote_path_from, rep.warnings) == ("/Work", "/Work", "config", [])
    assert [(h.path, h.fileId) for h in index.grep("saffron").hits] == [("/Work/Plans/q3.md", 321)]
    # --remote-path wins over the config, and moves the records without extracting them again.
    n = counting_pool.count
    rep = index_folder(index, root, pool=counting_pool, remote_path="/Projects/Work")
    assert (rep.remote_path, rep.remote_path_from, rep.extracted) == ("/Projects/Work", "option", 0)
    assert by_path(index) == {"/Projects/Work/Plans/q3.md": 321} and counting_pool.count == n


def test_config_parsing_follows_qt_settings(tmp_path, write_desktop_config):
    cfg = tmp_path / "nextcloud.cfg"
    cfg.write_text(
        "[General]\nclientVersion=3.14.3\n\n[Accounts]\n0\\url=https://cloud.example.org\n"
        "0\\Folders\\1\\localPath=/home/al\\xe9x/Nextcloud/\n0\\Folders\\1\\targetPath=/\n"
        '0\\FoldersWithPlaceholders\\2\\localPath="/home/alex/a, b; c/"\n'
        "0\\FoldersWithPlaceholders\\2\\targetPath=/Shared/Team A\n"
        "0\\FoldersWithPlaceholders\\2\\journalPath=.sync_123456abcdef.db\n"
        "1\\Multifolders\\5\\localPath=/srv/backup/\n1\\Multifolders\\5\\targetPath=Archive/2024/\n"
        "1\\Folders\\6\\localPath=/srv/bad/\n1\\Folders\\6\\targetPath=/../etc\n", encoding="utf-8")
    found = {f.local_path: (f.target_path, f.journal_path) for f in read_sync_folders(cfg)}
    assert found == {"/home/aléx/Nextcloud/": ("/", None),
                     "/home/alex/a, b; c/": ("/Shared/Team A", ".sync_123456abcdef.db"),
                     "/srv/backup/": ("/Archive/2024", None)}   # the '..' entry is ignored, not trusted
    bad = tmp_path / "broken.cfg"
    bad.write_text("no section header here\n")
    with pytest.raises(ValueError):
        read_sync_folders(bad)
    assert normalize_remote_path("Work//Sub/") == "/Work/Sub" and normalize_remote_path("") == "/"
    with pytest.raises(ValueError, match="contains '.' or '..'") as bad_path:   # a ValueError as it always was
        normalize_remote_path("/Work/../etc")
    assert isinstance(bad_path.value, RemotePathError) and bad_path.value.code.value == "bad_remote_path"
    assert "absolute path" in bad_path.value.action and bad_path.value.retry is False


def test_an_unreadable_config_is_reported_and_the_default_used(tmp_path, index, counting_pool, make_journal,
                                                               monkeypatch):
    bad = tmp_path / "cfg" / "nextcloud.cfg"
    bad.parent.mkdir()
    bad.write_text("garbage without sections\n")
    monkeypatch.setenv("MCP_NEXTCLOUD_DESKTOP_CONFIG", str(bad))
    root = sync_folder(tmp_path / "NC", make_journal, {"a.txt": ("alpha", 5)})
    assert find_sync_folder(root)[0] is None
    rep = index_folder(index, root, pool=counting_pool)
    assert rep.remote_path == "/" and any(str(bad) in w and "could not be read" in w for w in rep.warnings)
    assert by_path(index) == {"/a.txt": 5}


# -- the CLI ---------------------------------------------------------------------------------------------------
def test_cli_add_with_remote_path_grep_and_status(tmp_path, capsys, make_journal):
    db = str(tmp_path / "cli.db")
    write(tmp_path / "A" / "todo.txt", "feed the newt")
    root = sync_folder(tmp_path / "NC", make_journal, {"Documents/note.txt": ("the newt note", 123)})
    assert main(["index", "add", str(tmp_path / "A"), "--index", db]) == 0
    assert main(["index", "add", str(root), "--remote-path", "/Work", "--index", db, "--json"]) == 0
    out = capsys.readouterr().out.strip().splitlines()[-1]
    rep = json.loads(out)
    assert (rep["path"], rep["remote_path"], rep["remote_path_from"]) == ("/Work", "/Work", "option")
    assert ", " not in out and ": " not in out   # compact JSON
    assert main(["grep", "newt", "--index", db, "--json"]) == 0
    hits = {(h["path"], h.get("fileId"), h["folder"]) for h in json.loads(capsys.readouterr().out)["items"]}
    assert hits == {("/todo.txt", None, str(tmp_path / "A")), ("/Work/Documents/note.txt", 123, str(root))}
    assert main(["index", "status", "--index", db]) == 0
    assert f"folder {root} -> /Work (Nextcloud paths) (1 files" in capsys.readouterr().out
    assert main(["index", "add", str(root), "--index", db]) == 0
    assert "Nextcloud paths under /Work (--remote-path)" in capsys.readouterr().out


def test_cli_refuses_a_remote_path_it_cannot_use(tmp_path, capsys, make_journal):
    db = str(tmp_path / "cli.db")
    write(tmp_path / "plain" / "x.txt", "x")
    assert main(["index", "add", str(tmp_path / "plain"), "--remote-path", "/Work", "--index", db]) == 2
    err = capsys.readouterr().err
    assert "no Nextcloud sync journal" in err and "without --remote-path" in err and "Traceback" not in err
    root = sync_folder(tmp_path / "NC", make_journal, {"a.txt": ("alpha", 5)})
    assert main(["index", "add", str(root), "--remote-path", "/a/../b", "--index", db]) == 2
    assert "'..'" in capsys.readouterr().err
    for name in ("alice", "bob"):
        sync_folder(tmp_path / name, make_journal, {"a.txt": ("alpha", 5)})
    assert main(["index", "add", str(tmp_path / "alice"), "--index", db]) == 0
    assert main(["index", "add", str(tmp_path / "bob"), "--index", db]) == 2
    assert "--index" in capsys.readouterr().err


# -- the remote source and the local sync folder agree ---------------------------------------------------------
TREE = {"/Work/Plans/q3.md": b"# Q3\n\nthe saffron kettle plan\n", "/Work/readme.txt": b"work readme walrus\n",
        "/Documents/note.txt": b"the heron note\n", "/top.txt": b"top level text\n"}


def _client_sync(client, remote: str, local: Path, make_journal) -> None:
    """Do what the desktop client does: download `remote` into `local` and record each item in the journal."""
    from mcp_nextcloud.fixtures.emulator.state import INSTANCE_ID

    rows, todo = [], [remote]
    while todo:
        folder, children = client.webdav.list(todo.pop())
        for item in children:
            if item.path.rstrip("/") == folder.path.rstrip("/"):
                continue
            rel = item.path.strip("/")[len(remote.strip("/")):].strip("/")
            rows.append((rel, f"{item.file_id:08d}{INSTANCE_ID}", item.etag, int(item.mtime), item.size,
                         2 if item.is_dir else 0))
            if item.is_dir:
                todo.append(item.path)
                continue
            dest = local / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            with open(dest, "wb") as fh:
                client.webdav.download(item.path, fh)
            os.utime(dest, (item.mtime, item.mtime))
    make_journal(local, rows)


@pytest.mark.parametrize("remote, how", [("/", "default"), ("/Work", "config")])
def test_remote_sync_and_a_local_sync_folder_agree_on_path_and_file_id(
        tmp_path, index, counting_pool, make_journal, write_desktop_config, monkeypatch, emulator_factory,
        remote, how):
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    emu = emulator_factory(seed="empty")
    for path, data in TREE.items():
        emu.state.makedirs("alice", path.rsplit("/", 1)[0] or "/")
        emu.state.put_file("alice", path, data)
    local = tmp_path / "Nextcloud"
    with NextcloudClient(Account(**emu.account("alice")), retries=1, backoff=0.01) as client:
        sync(client, index, pool=counting_pool)
        _client_sync(client, remote, local, make_journal)
    if how == "config":
        cfg = write_desktop_config(tmp_path / "cfg" / "nextcloud.cfg", [(str(local), remote, ".sync_0a1b2c3d4e5f.db")])
        monkeypatch.setenv("MCP_NEXTCLOUD_DESKTOP_CONFIG", str(cfg))
    write(tmp_path / "Plain" / "todo.txt", "a plain folder indexed first")
    index_folder(index, tmp_path / "Plain", pool=counting_pool)
    rep = index_folder(index, local, pool=counting_pool)
    assert (rep.remote_path, rep.remote_path_from) == (remote, how)
    remote_ids = by_path(index, "remote")
    local_ids = {p: fid for p, fid in by_path(index).items() if index.local_folder_of(p) == str(local)}
    expected = {p for p in TREE if p.startswith(remote.rstrip("/") + "/")}
    assert set(local_ids) == expected and len(expected) >= 2
    assert all(local_ids[p] == remote_ids[p] and local_ids[p] is not None for p in expected)
    # The same file found by fileId through either source has the same path.
    for p in expected:
        assert {r.path for r in index.files_under(p) if r.file_id == remote_ids[p]} == {p}
