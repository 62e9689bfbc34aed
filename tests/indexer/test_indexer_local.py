"""The local source: index add / re-add / delete, ignored files, failures, a desktop-client sync folder."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import apsw

from indexer.journal import find_journal, open_journal, parse_file_id
from indexer.local import index_folder, is_ignored


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


def make_journal(root: Path, rows: list[tuple[str, str, str, int, int, int]]) -> Path:
    """A journal shaped like the Nextcloud desktop client's (.sync_<hash>.db, table metadata)."""
    path = root / ".sync_0a1b2c3d4e5f.db"
    con = apsw.Connection(str(path))
    con.execute(
        "CREATE TABLE metadata(phash INTEGER(8), pathlen INTEGER, path VARCHAR(4096), inode INTEGER, uid INTEGER, "
        "gid INTEGER, mode INTEGER, modtime INTEGER(8), type INTEGER, md5 VARCHAR(32), fileid VARCHAR(128), "
        "remotePerm VARCHAR(128), filesize BIGINT, ignoredChildrenRemote INT, contentChecksum TEXT, "
        "contentChecksumTypeId INTEGER, e2eMangledName TEXT, isE2eEncrypted INTEGER, PRIMARY KEY(phash))")
    for i, (p, fileid, etag, modtime, size, typ) in enumerate(rows):
        con.execute("INSERT INTO metadata(phash, pathlen, path, inode, modtime, type, md5, fileid, remotePerm, "
                    "filesize) VALUES(?,?,?,?,?,?,?,?,?,?)",
                    (1000 + i, len(p), p, 50 + i, modtime, typ, etag, fileid, "WDNVCKR", size))
    con.pragma("journal_mode", "wal")
    con.close()
    return path


def test_sync_folder_uses_the_journal_ids(tmp_path, index, counting_pool):
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
