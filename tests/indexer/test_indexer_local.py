"""The local source: index add / re-add / delete, ignored files, failures, a desktop-client sync folder."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import apsw

from mcp_nextcloud.indexer.errors import IndexCode, IndexerError
from mcp_nextcloud.indexer.local.journal import find_journal, open_journal, parse_file_id
from mcp_nextcloud.nextcloud.errors import Category
from mcp_nextcloud.indexer.local.folder import index_folder, is_ignored


def write(path: Path, text: str, mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


def test_ignored_names():
    for name in (".sync_abc.db", "._sync_abc.db", ".~lock.report.odt#", "~$report.docx", "movie.mkv.part",
                 ".hidden", "Thumbs.db", "desktop.ini", "draft.txt~"):
        assert is_ignored(name), name
    for name in ("report.docx", "notes.md", "a~b.txt", "part.txt"):
        assert not is_ignored(name), name


def test_add_readd_modify_delete(tmp_path, index, counting_pool):
    root = tmp_path / "folder"
    write(root / "a.md", "# Alpha\n\nThe aardvark sleeps.", 1000.0)
    write(root / "sub" / "b.txt", "Beetles and bees.", 1000.0)
    write(root / ".hidden.txt", "aardvark secret")
    write(root / "~$lock.docx", "aardvark")
    write(root / "dl.pdf.part", "aardvark")
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.scanned, rep.extracted, rep.failed, rep.removed) == (2, 2, 0, 0)
    assert [h.path for h in index.grep("aardvark").hits] == ["/a.md"]
    rec = index.get_file(path="/sub/b.txt")
    assert rec.local_path == str(root / "sub" / "b.txt") and rec.source == "local" and rec.kind == "text"

    # Re-add: nothing changed, nothing extracted.
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.unchanged, rep.extracted) == (2, 0) and counting_pool.count == 2

    # Modify one, delete one, add one.
    write(root / "a.md", "# Alpha\n\nThe anteater wakes.", 2000.0)
    (root / "sub" / "b.txt").unlink()
    write(root / "c.txt", "Cats.", 1000.0)
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.scanned, rep.extracted, rep.unchanged, rep.removed) == (2, 2, 0, 1)
    assert sorted(counting_pool.names) == ["a.md", "a.md", "b.txt", "c.txt"]
    assert index.grep("aardvark").total == 0 and index.grep("anteater").total == 1
    assert index.get_file(path="/sub/b.txt") is None and index.grep("beetles").total == 0


def test_fixture_folder_indexes_and_failures_are_not_retried(tmp_path, index, counting_pool, fixture_docs,
                                                             fixture_bad):
    root = tmp_path / "docs"
    shutil.copytree(fixture_docs, root / "good")
    shutil.copytree(fixture_bad, root / "bad")
    rep = index_folder(index, root, pool=counting_pool)
    assert rep.scanned == rep.extracted + rep.failed > 10
    st = index.status()
    failed = {f["path"]: f for f in st["failures"]}
    assert "/bad/encrypted.pdf" in failed and "encrypted" in failed["/bad/encrypted.pdf"]["reason"].lower()
    assert all(f["reason"] for f in st["failures"])
    for f in st["failures"]:  # reasons are instructions, not tracebacks
        assert "Traceback" not in f["reason"]
    n = counting_pool.count
    rep2 = index_folder(index, root, pool=counting_pool)
    assert counting_pool.count == n and rep2.extracted == 0 and rep2.unchanged == rep.scanned
    # The fixture manual can be found by its words, passages point into its text.
    res = index.grep("manual")
    assert any(h.path.startswith("/good/manual") for h in res.hits)
    hit = res.hits[0]
    doc = index.cached_document(index.get_file(path=hit.path))
    p = hit.passages[0]
    assert doc.text[p.offset:p.offset + p.length].lower() == "manual"


def test_sync_folder_uses_the_journal_ids(tmp_path, index, counting_pool, make_journal):
    root = tmp_path / "Nextcloud"
    a = write(root / "Documents" / "plan.md", "# Plan\n\nShip the walrus feature.", 1_700_000_000.0)
    b = write(root / "Notes" / "todo.txt", "Feed the walrus.", 1_700_000_100.0)
    write(root / "Local only.txt", "walrus not synced yet", 1_700_000_200.0)
    journal = make_journal(root, [
        ("Documents", "00000010ocabc123", "5f1dir", 1_700_000_000, 0, 2),
        ("Documents/plan.md", "00000123ocabc123", "65a1f0e3c2b1d", 1_700_000_000, a.stat().st_size, 0),
        ("Notes/todo.txt", "00000456ocabc123", "65a1f0e3c2b1e", 1_700_000_100, b.stat().st_size, 0),
    ])
    assert find_journal(root) == journal and parse_file_id("00000123ocabc123") == 123
    assert open_journal(root).get("/Documents/plan.md").etag == "65a1f0e3c2b1d"
    ro_before = journal.stat().st_mtime
    rep = index_folder(index, root, pool=counting_pool)
    assert rep.journal == journal.name and rep.scanned == 3  # the journal itself is not indexed
    hits = {h.path: h for h in index.grep("walrus").hits}
    assert hits["/Documents/plan.md"].fileId == 123
    assert hits["/Notes/todo.txt"].fileId == 456
    assert hits["/Local only.txt"].fileId is None
    rec = index.get_file(file_id=123)
    assert rec.etag == "65a1f0e3c2b1d" and rec.path == "/Documents/plan.md"
    assert journal.stat().st_mtime == ro_before  # opened read-only, never written

    # The client renames a file on the server side: new path, same fileId, same etag -> no re-extraction.
    n = counting_pool.count
    (root / "Documents" / "plan.md").rename(root / "Documents" / "roadmap.md")
    con = apsw.Connection(str(journal))
    con.execute("UPDATE metadata SET path='Documents/roadmap.md' WHERE fileid='00000123ocabc123'")
    con.close()
    rep = index_folder(index, root, pool=counting_pool)
    assert counting_pool.count == n and rep.extracted == 0
    assert index.get_file(file_id=123).path == "/Documents/roadmap.md"
    assert index.get_file(path="/Documents/plan.md") is None


def test_missing_folder_is_a_clear_error(tmp_path, index):
    import pytest

    with pytest.raises(FileNotFoundError, match="not a folder"):
        index_folder(index, tmp_path / "nope")


# -- moves between rescans (no journal): size + mtime + content hash --------------------------------------
def test_rescan_recognises_moves_without_extracting(tmp_path, index, counting_pool, fixture_bad):
    root = tmp_path / "plain"
    write(root / "a.md", "# Alpha\n\nThe quokka smiles.", 1000.0)
    write(root / "b.txt", "Bison graze.", 1000.0)
    write(root / "c.txt", "Capybara bathes.", 1000.0)
    write(root / "twin1.txt", "same words", 1000.0)
    (root / "bad").mkdir()
    shutil.copy(fixture_bad / "encrypted.pdf", root / "bad" / "locked.pdf")
    index_folder(index, root, pool=counting_pool)
    assert index.get_file(path="/bad/locked.pdf").status == "failed"
    n = counting_pool.count
    a_id = index.get_file(path="/a.md").id

    (root / "archive").mkdir()
    (root / "a.md").rename(root / "archive" / "alpha.md")      # move into a sub folder, renamed
    (root / "b.txt").rename(root / "c.txt")                     # overwrite: b's text now lives at c.txt
    (root / "bad" / "locked.pdf").rename(root / "locked-too.pdf")  # a failed file keeps its failure, no retry
    # Same size and mtime, different bytes: not a move, this one must be extracted.
    write(root / "twin2.txt", "SAME WORDS", 1000.0)
    (root / "twin1.txt").unlink()
    rep = index_folder(index, root, pool=counting_pool)

    assert counting_pool.names[n:] == ["twin2.txt"]
    assert (rep.moved, rep.extracted, rep.removed) == (3, 1, 1)
    moved = index.get_file(path="/archive/alpha.md")
    assert moved.id == a_id and moved.local_path == str(root / "archive" / "alpha.md")
    assert [h.path for h in index.grep("quokka").hits] == ["/archive/alpha.md"]
    assert [h.path for h in index.grep("bison").hits] == ["/c.txt"] and index.grep("capybara").total == 0
    assert index.get_file(path="/a.md") is None and index.get_file(path="/b.txt") is None
    locked = index.get_file(path="/locked-too.pdf")
    assert locked.status == "failed" and "encrypted" in locked.reason.lower()
    assert index.get_file(path="/twin1.txt") is None and index.grep("same words").hits[0].path == "/twin2.txt"
    # And a rescan with nothing changed does nothing.
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.moved, rep.extracted, rep.removed) == (0, 0, 0) and counting_pool.count == n + 1


def test_edited_then_moved_file_is_extracted_again(tmp_path, index, counting_pool):
    root = tmp_path / "plain"
    write(root / "notes.txt", "The old ocelot.", 1000.0)
    index_folder(index, root, pool=counting_pool)
    (root / "notes.txt").rename(root / "renamed.txt")
    write(root / "renamed.txt", "The new ocelot.", 2000.0)
    rep = index_folder(index, root, pool=counting_pool)
    assert (rep.moved, rep.extracted, rep.removed) == (0, 1, 1) and counting_pool.names == ["notes.txt", "renamed.txt"]
    assert [h.path for h in index.grep("new ocelot").hits] == ["/renamed.txt"] and index.grep("old ocelot").total == 0


# -- several local folders in one database ------------------------------------------------------------------
def test_several_folders_get_their_own_namespace(tmp_path, index, counting_pool):
    a = tmp_path / "home" / "Nextcloud"
    b = tmp_path / "home" / "Notes"
    b2 = tmp_path / "other" / "Notes"
    write(a / "notes.txt", "Nextcloud notes about the heron.", 1000.0)
    write(b / "notes.txt", "Local notes about the heron.", 1000.0)
    write(b / "deep" / "x.txt", "heron feather", 1000.0)
    write(b2 / "notes.txt", "Other notes about the heron.", 1000.0)
    ra = index_folder(index, a, pool=counting_pool)
    rb = index_folder(index, b, pool=counting_pool)
    rb2 = index_folder(index, b2, pool=counting_pool)
    assert (ra.path, rb.path, rb2.path) == ("/", "/Notes", "/Notes-2")
    assert sorted(h.path for h in index.grep("heron").hits) == [
        "/Notes-2/notes.txt", "/Notes/deep/x.txt", "/Notes/notes.txt", "/notes.txt"]
    assert index.get_file(path="/Notes/notes.txt").local_path == str(b / "notes.txt")
    roots = {r["folder"]: r for r in index.status()["roots"]}
    assert {k: (v["path"], v["files"]) for k, v in roots.items()} == {
        str(a): ("/", 1), str(b): ("/Notes", 2), str(b2): ("/Notes-2", 1)}
    assert [r.prefix for r in index.roots()] == ["", "/Notes", "/Notes-2"]
    assert index.root_of(index.get_file(path="/Notes/deep/x.txt")).folder == str(b)

    # Re-indexing one folder never touches another folder's files.
    n = counting_pool.count
    for folder in (a, b, b2, a):
        rep = index_folder(index, folder, pool=counting_pool)
        assert (rep.extracted, rep.removed) == (0, 0)
    assert counting_pool.count == n and index.status()["files"] == 4

    # The first folder grows a top-level "Notes" folder: its paths would collide with the second folder's.
    write(a / "Notes" / "notes.txt", "shadowing heron", 1000.0)
    rep = index_folder(index, a, pool=counting_pool)
    # The warning keeps the cause and the next step; the retry is not a report's to say.
    assert rep.warnings and "another local folder" in rep.warnings[0] and "retry" not in rep.warnings[0].lower()
    assert index.get_file(path="/Notes/notes.txt").local_path == str(b / "notes.txt")
    assert index.grep("shadowing").total == 0 and index.grep("local notes").total == 1


def test_two_sync_folders_with_the_same_file_ids_do_not_steal_records(tmp_path, index, counting_pool,
                                                                      make_journal):
    # Two accounts' sync folders (fileIds are per server: both have 123), mirroring different folders.
    roots = []
    for name, word, remote in (("alice", "albatross", "/Work"), ("bob", "barracuda", "/Home")):
        root = tmp_path / name
        f = write(root / "Documents" / "plan.md", f"# Plan\n\nThe {word}.", 1_700_000_000.0)
        make_journal(root, [("Documents/plan.md", "00000123ocabc", "etag1", 1_700_000_000, f.stat().st_size, 0)])
        roots.append((root, remote))
    for root, remote in roots:
        index_folder(index, root, pool=counting_pool, remote_path=remote)
    for root, _remote in roots:   # the remote paths were remembered
        rep = index_folder(index, root, pool=counting_pool)
        assert (rep.extracted, rep.moved, rep.removed, rep.remote_path_from) == (0, 0, 0, "option")
    assert index.grep("albatross").hits[0].path == "/Work/Documents/plan.md"
    assert index.grep("barracuda").hits[0].path == "/Home/Documents/plan.md"
    assert counting_pool.count == 2


def test_two_sync_folders_mirroring_the_same_nextcloud_folder_are_refused(tmp_path, index, counting_pool,
                                                                          make_journal):
    import pytest

    from mcp_nextcloud.indexer.store.writer import RemotePathConflict

    for name in ("alice", "bob"):
        f = write(tmp_path / name / "Documents" / "plan.md", f"plan of {name}", 1_700_000_000.0)
        make_journal(tmp_path / name, [("Documents/plan.md", "00000123ocabc", "e1", 1_700_000_000,
                                        f.stat().st_size, 0)])
    index_folder(index, tmp_path / "alice", pool=counting_pool)
    for remote in (None, "/Documents"):   # the same folder, or one inside it: paths would collide
        with pytest.raises(RemotePathConflict, match="already mirrors /") as conflict:
            index_folder(index, tmp_path / "bob", pool=counting_pool, remote_path=remote)
        assert conflict.value.code is IndexCode.REMOTE_PATH_CONFLICT and conflict.value.category is Category.MISUSE
        assert "--index" in conflict.value.action and conflict.value.retry is False
        assert str(conflict.value).endswith("call unchanged.")   # the plain voice words the field
    assert [r.folder for r in index.roots()] == [str(tmp_path / "alice")]
    assert index.get_file(path="/Documents/plan.md").local_path == str(tmp_path / "alice" / "Documents" / "plan.md")


def test_cli_names_the_folder_of_each_hit_and_lists_the_folders(tmp_path, capsys):
    import json

    from mcp_nextcloud.cli import main

    db = str(tmp_path / "cli.db")
    a, b = tmp_path / "Work", tmp_path / "Personal"
    write(a / "todo.txt", "call the plumber about the newt", 1000.0)
    write(b / "todo.txt", "feed the newt", 1000.0)
    for folder in (a, b):
        assert main(["index", "add", str(folder), "--index", db]) == 0
    assert "under /Personal" in capsys.readouterr().out
    assert main(["grep", "newt", "--index", db, "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert {(h["path"], h["folder"]) for h in res["items"]} == {("/todo.txt", str(a)), ("/Personal/todo.txt", str(b))}
    assert main(["grep", "plumber", "--index", db]) == 0
    assert f"/todo.txt  (text, 1 match shown)  in {a}" in capsys.readouterr().out
    assert main(["index", "status", "--index", db]) == 0
    out = capsys.readouterr().out
    assert f"folder {a} -> / (1 files)" in out and f"folder {b} -> /Personal (1 files)" in out


def test_folder_inside_an_indexed_folder_is_refused(tmp_path, index, counting_pool):
    import pytest

    from mcp_nextcloud.cli import main

    write(tmp_path / "outer" / "inner" / "x.txt", "nested", 1000.0)
    index_folder(index, tmp_path / "outer", pool=counting_pool)
    with pytest.raises(RuntimeError, match="already holds") as overlap:   # still the builtin it always was
        index_folder(index, tmp_path / "outer" / "inner", pool=counting_pool)
    assert isinstance(overlap.value, IndexerError) and overlap.value.code is IndexCode.FOLDER_OVERLAP
    assert [r.folder for r in index.roots()] == [str(tmp_path / "outer")]
    assert main(["index", "add", str(tmp_path / "outer" / "inner"), "--index", str(index.path)]) == 2
