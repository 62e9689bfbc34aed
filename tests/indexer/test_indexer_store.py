"""The store: schema and migration, upsert reuse, moves, failures, removal, cached documents."""
from __future__ import annotations

import json
import os

import apsw
import pytest

from mcp_nextcloud.indexer.models import FileMeta
from mcp_nextcloud.indexer.store.schema import SCHEMA_VERSION
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.indexer.store.index import default_index_path
from mcp_nextcloud.reader import find, page
from mcp_nextcloud.reader.document import Document


def meta(path="/a.txt", *, source="local", file_id=None, etag=None, size=10, mtime=100.0, local_path=None):
    return FileMeta(path=path, source=source, file_id=file_id, etag=etag, size=size, mtime=mtime,
                    mime="text/plain", local_path=local_path)


def test_schema_is_versioned_and_reopen_is_idempotent(tmp_path):
    path = tmp_path / "sub" / "x.db"
    Index.open(path).close()
    con = apsw.Connection(str(path))
    assert con.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
    assert con.execute("PRAGMA journal_mode").fetchall()[0][0] == "wal"
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
    assert {"files", "chunks", "chunks_fts", "docs", "folders", "meta"} <= tables
    con.close()
    ix = Index.open(path)  # second open migrates nothing and keeps data
    ix.writer().set_meta("k", "v")
    ix.close()
    assert Index.open(path).get_meta("k") == "v"


def test_newer_schema_is_refused_with_instruction(tmp_path):
    path = tmp_path / "x.db"
    Index.open(path).close()
    con = apsw.Connection(str(path))
    con.execute(f"PRAGMA user_version={SCHEMA_VERSION + 5}")
    con.close()
    with pytest.raises(RuntimeError, match="newer than this program") as too_new:
        Index.open(path)
    assert too_new.value.code.value == "schema_too_new" and "upgrade mcp-nextcloud" in too_new.value.action


def test_default_index_path_env_override(monkeypatch, tmp_path):
    monkeypatch.setenv("MCP_NEXTCLOUD_INDEX", str(tmp_path / "custom.db"))
    assert default_index_path("alice") == tmp_path / "custom.db"
    monkeypatch.delenv("MCP_NEXTCLOUD_INDEX")
    p = default_index_path("alice@cloud.example")
    assert p.name == "alice@cloud.example.db" and "mcp-nextcloud" in str(p)


def test_upsert_unchanged_local_file_needs_no_extraction(index, put_text):
    w = index.writer()
    rec = put_text(w, "/a.txt", "hello world")
    again, needs = w.upsert(meta("/a.txt", size=len("hello world"), mtime=1_700_000_000.0))
    assert not needs and again.id == rec.id and again.status == "indexed"
    changed, needs = w.upsert(meta("/a.txt", size=len("hello world"), mtime=1_700_000_500.0))
    assert needs and changed.status == "pending"
    # The stale text is gone: a pending file is never answered from old content.
    assert index.grep("hello").total == 0
    assert index.cached_document(changed) is None


def test_upsert_remote_same_etag_is_reused_and_new_etag_reextracts(index, put_text):
    w = index.writer()
    put_text(w, "/r.txt", "remote words", source="remote", file_id=7, etag="e1")
    size = len("remote words")
    rec, needs = w.upsert(meta("/r.txt", source="remote", file_id=7, etag="e1", size=size, mtime=5.0))
    assert not needs and rec.status == "indexed"
    rec, needs = w.upsert(meta("/r.txt", source="remote", file_id=7, etag="e2", size=size, mtime=5.0))
    assert needs and rec.status == "pending"


def test_upsert_remote_same_etag_with_another_size_reextracts(index, put_text):
    """Nextcloud 34 can keep an etag across an overwrite within the same second: the size still tells."""
    w = index.writer()
    put_text(w, "/r.txt", "remote words", source="remote", file_id=7, etag="e1")
    rec, needs = w.upsert(meta("/r.txt", source="remote", file_id=7, etag="e1", size=99, mtime=5.0))
    assert needs and rec.status == "pending"


def test_move_by_file_id_keeps_text_without_extraction(index, put_text):
    w = index.writer()
    put_text(w, "/old/name.txt", "the quarterly saffron report", source="remote", file_id=42, etag="e1")
    rec, needs = w.upsert(meta("/new/renamed.txt", source="remote", file_id=42, etag="e1",
                               size=len("the quarterly saffron report")))
    assert not needs
    assert rec.path == "/new/renamed.txt" and rec.status == "indexed"
    assert index.get_file(path="/old/name.txt") is None
    hits = index.grep("saffron").hits
    assert [h.path for h in hits] == ["/new/renamed.txt"] and hits[0].fileId == 42
    assert index.get_file(file_id=42).path == "/new/renamed.txt"


def test_move_onto_existing_path_replaces_it(index, put_text):
    w = index.writer()
    put_text(w, "/a.txt", "alpha text", source="remote", file_id=1, etag="a")
    put_text(w, "/b.txt", "beta text", source="remote", file_id=2, etag="b")
    rec, needs = w.upsert(meta("/b.txt", source="remote", file_id=1, etag="a"))
    assert not needs and rec.path == "/b.txt"
    assert index.grep("beta").total == 0 and index.grep("alpha").hits[0].path == "/b.txt"
    assert len(index.files_under("/", source="remote")) == 1


def test_failure_is_kept_until_the_file_changes(index):
    w = index.writer()
    rec, needs = w.upsert(meta("/bad.pdf", size=3, mtime=1.0))
    assert needs
    w.record_failure(rec.id, "failed", "encrypted PDF: ask the owner")
    rec2, needs = w.upsert(meta("/bad.pdf", size=3, mtime=1.0))
    assert not needs and rec2.status == "failed" and "encrypted" in rec2.reason
    rec3, needs = w.upsert(meta("/bad.pdf", size=4, mtime=2.0))
    assert needs and rec3.status == "pending" and rec3.reason is None
    with pytest.raises(ValueError, match="status must be one of"):
        w.record_failure(rec.id, "indexed", "x")


def test_cached_document_round_trip(index, put_text):
    text = "Première page. Crème brûlée.\n" * 400 + "\fSecond page with the needle.\n" * 300
    second = text.index("\f")
    rec = put_text(index.writer(), "/long.txt", text, kind="pdf", pages=[0, second])
    doc = index.cached_document(rec)
    assert doc.text == text and doc.pages == [0, second] and doc.kind == "pdf"
    res = find(doc, "creme brulee", limit=1)
    assert res.total == 400 and res.matches[0].offset == text.index("Crème")
    assert page(doc, offset=second).page == 2
    con = index.conn()
    chunks = con.execute("SELECT count(*) FROM chunks WHERE id >> 16 = ?", (rec.id,)).fetchall()[0][0]
    assert chunks > 3  # long texts are chunked, so grep reads back only pieces


def test_long_documents_keep_their_normalised_form(index, put_text):
    from mcp_nextcloud.indexer.store.prepare import NORM_MIN_CHARS

    text = "Ligature ﬁnance, Straße, café. " * (NORM_MIN_CHARS // 30 + 10)
    rec = put_text(index.writer(), "/big.txt", text)
    doc = index.cached_document(rec)
    assert doc._normalized is not None and doc._normalized.length == len(text)
    assert find(doc, "strasse", limit=1).matches[0].offset == text.index("Straße")
    small = index.cached_document(put_text(index.writer(), "/small.txt", "Straße"))
    assert small._normalized is None and find(small, "strasse").total == 1  # rebuilt on demand


def test_remove_and_remove_under(index, put_text):
    w = index.writer()
    a = put_text(w, "/Docs/a.txt", "apple")
    put_text(w, "/Docs/sub/b.txt", "apple")
    put_text(w, "/Docs2/c.txt", "apple")
    put_text(w, "/Docs2/r.txt", "apple", source="remote", file_id=9, etag="x")
    w.remove(a.id)
    assert index.get_file(path="/Docs/a.txt") is None
    assert w.remove_under("/Docs") == 1  # /Docs2 is not below /Docs
    assert sorted(f.path for f in index.files_under("/")) == ["/Docs2/c.txt", "/Docs2/r.txt"]
    assert w.remove_under("/Docs2", source="remote") == 1
    assert [h.path for h in index.grep("apple").hits] == ["/Docs2/c.txt"]
    # Integrity of the FTS table after deletions
    assert index.writer().integrity_check() == []


def test_folder_etags_and_meta(index):
    w = index.writer()
    assert index.folder_etag("/Photos") is None
    w.set_folder_etag("/Photos/", "abc")
    assert index.folder_etag("Photos") == "abc"
    w.set_folder_etag("/Photos", None)
    assert index.folder_etag("/Photos") is None
    w.set_meta("last_sync_at", "123.5")
    assert index.get_meta("last_sync_at") == "123.5"


def test_status_counts_failures_and_size(index, put_text):
    w = index.writer()
    put_text(w, "/ok.txt", "fine")
    rec, _ = w.upsert(meta("/bad.docx"))
    w.record_failure(rec.id, "unsupported", "unknown format")
    w.upsert(meta("/later.txt"))
    st = index.status()
    assert st["counts"] == {"indexed": 1, "unsupported": 1, "pending": 1}
    assert st["failures"] == [{"path": "/bad.docx", "status": "unsupported", "reason": "unknown format"}]
    assert st["dbBytes"] > 0 and st["textChars"] == 4
    json.dumps(st)  # JSON-able for --json


def test_two_indexes_on_one_file_each_write_and_close_alone(tmp_path):
    """Each Index owns its writer thread; SQLite serialises two of them, and closing one leaves the other working."""
    a = Index.open(tmp_path / "x.db")
    b = Index.open(tmp_path / "x.db")
    assert a.writer() is a.writer() and a.writer() is not b.writer()
    a.writer().set_meta("from", "a")
    a.close()
    b.writer().set_meta("still", "works")
    assert b.get_meta("still") == "works" and b.get_meta("from") == "a"
    b.close()


def test_close_commits_what_was_queued_and_later_writes_are_refused(tmp_path):
    from mcp_nextcloud.indexer.store.writer import WriterClosed

    ix = Index.open(tmp_path / "x.db")
    w = ix.writer()
    futures = [w.submit(lambda tx, i=i: tx.set_meta(f"k{i}", str(i))) for i in range(200)]
    ix.close()   # drains the queue and joins the writer thread
    assert all(f.done() for f in futures) and not w._thread.is_alive()
    with pytest.raises(WriterClosed):
        w.set_meta("late", "x")
    again = Index.open(tmp_path / "x.db")
    assert again.get_meta("k199") == "199"
    again.close()


def test_a_failing_write_rolls_back_alone(index):
    w = index.writer()

    def half_then_fail(tx):
        tx.set_meta("half", "written")
        raise ValueError("boom")

    ok = w.submit(lambda tx: tx.set_meta("kept", "yes"))
    bad = w.submit(half_then_fail)
    with pytest.raises(ValueError, match="boom"):
        bad.result()
    assert ok.result() is None
    assert index.get_meta("kept") == "yes" and index.get_meta("half") is None


def test_work_submitted_from_the_writer_thread_is_refused(index):
    w = index.writer()
    with pytest.raises(RuntimeError, match="use the WriteTx"):
        w.call(lambda tx: w.set_meta("nested", "x"))


def test_store_after_remove_is_ignored(index):
    w = index.writer()
    rec, _ = w.upsert(meta("/gone.txt"))
    w.remove(rec.id)
    w.store_document(rec.id, Document(text="ghost", kind="text"))
    assert index.grep("ghost").total == 0 and index.get_file(path="/gone.txt") is None


def test_migration_from_version_1_keeps_rows(tmp_path):
    from mcp_nextcloud.indexer.store.schema import MIGRATIONS

    path = tmp_path / "old.db"
    con = apsw.Connection(str(path))
    con.execute(MIGRATIONS[0])
    con.execute("PRAGMA user_version=1")
    con.execute("INSERT INTO files(path, name_fold, source, size, mtime, status) "
                "VALUES('/kept.txt', '/kept.txt', 'local', 1, 1.0, 'pending')")
    con.close()
    ix = Index.open(path)
    assert ix.get_file(path="/kept.txt").status == "pending"
    assert ix.conn().execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION
    names = {r[0] for r in ix.conn().execute("SELECT name FROM sqlite_master WHERE type='index'")}
    assert "files_indexed_at" in names
    ix.close()


def test_v2_database_migrates_and_its_local_files_are_adopted(tmp_path, counting_pool):
    """A database written before roots existed (schema v2) opens, and re-adding its folder extracts nothing."""
    from mcp_nextcloud.indexer.local.folder import index_folder
    from mcp_nextcloud.indexer.store.schema import MIGRATIONS

    root = tmp_path / "folder"
    root.mkdir()
    f = root / "scan.bin"
    f.write_bytes(b"\x00\x01binary")
    os.utime(f, (1000.0, 1000.0))
    db = tmp_path / "old.db"
    con = apsw.Connection(str(db))
    for step in MIGRATIONS[:2]:
        con.execute(step)
    con.execute("PRAGMA user_version=2")
    con.execute("INSERT INTO files(path, name_fold, source, size, mtime, local_path, status, reason) "
                "VALUES('/scan.bin', '/scan.bin', 'local', ?, 1000.0, ?, 'unsupported', 'not a document')",
                (f.stat().st_size, str(f)))
    con.close()
    with Index.open(db) as ix:
        rep = index_folder(ix, root, pool=counting_pool)
        rec = ix.get_file(path="/scan.bin")
        assert (rep.unchanged, rep.extracted, rep.removed) == (1, 0, 0) and counting_pool.count == 0
        assert rec.status == "unsupported" and rec.root_id == ix.roots()[0].id and ix.roots()[0].prefix == ""
    con = apsw.Connection(str(db))
    assert con.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION == 6
    con.close()


def test_move_keeps_text_and_replaces_the_destination(index, put_text):
    w = index.writer()
    a = put_text(w, "/a.txt", "the wandering albatross")
    b = put_text(w, "/b.txt", "the resident booby")
    moved = w.move(a.id, meta("/b.txt", size=a.size, mtime=a.mtime))
    assert moved.id == a.id and moved.path == "/b.txt" and moved.status == "indexed"
    assert index.get_by_id(b.id) is None and index.get_file(path="/a.txt") is None
    assert [h.path for h in index.grep("albatross").hits] == ["/b.txt"] and index.grep("booby").total == 0
    assert w.move(999_999, meta("/c.txt")) is None


def test_v3_database_with_a_namespaced_sync_folder_is_repaired(tmp_path, counting_pool, make_journal):
    """Schema v3 put a second folder under "/<name>" even when it was a sync folder: v4 gives back its real
    Nextcloud paths on the next `index add`, keeping the text."""
    from mcp_nextcloud.indexer.local.folder import index_folder
    from mcp_nextcloud.indexer.store.schema import MIGRATIONS

    plain, nc = tmp_path / "A", tmp_path / "NC"
    (plain).mkdir()
    (nc / "Documents").mkdir(parents=True)
    note = nc / "Documents" / "note.txt"
    note.write_text("the heron note")
    os.utime(note, (1000.0, 1000.0))
    make_journal(nc, [("Documents/note.txt", "00000123ocabc", "e123", 1000, note.stat().st_size, 0)])
    db = tmp_path / "v3.db"
    con = apsw.Connection(str(db))
    for step in MIGRATIONS[:3]:
        con.execute(step)
    con.execute("PRAGMA user_version=3")
    con.execute("INSERT INTO roots(id, folder, prefix, journal, added_at) VALUES(1, ?, '', NULL, 1.0), "
                "(2, ?, '/NC', ?, 2.0)", (str(plain), str(nc), ".sync_0a1b2c3d4e5f.db"))
    con.execute("INSERT INTO files(path, name_fold, source, file_id, etag, size, mtime, local_path, status, reason, "
                "root_id) VALUES('/NC/Documents/note.txt', '/nc/documents/note.txt', 'local', 123, 'e123', ?, "
                "1000.0, ?, 'unsupported', 'kept', 2)", (note.stat().st_size, str(note)))
    con.close()
    with Index.open(db) as ix:
        assert [(r.prefix, r.remote) for r in ix.roots()] == [("", None), ("/NC", None)]
        rep = index_folder(ix, nc, pool=counting_pool)
        assert (rep.path, rep.remote_path, rep.extracted, rep.unchanged) == ("/", "/", 0, 1)
        rec = ix.get_file(file_id=123)
        assert (rec.path, rec.status, rec.reason) == ("/Documents/note.txt", "unsupported", "kept")
        assert ix.get_file(path="/NC/Documents/note.txt") is None and counting_pool.count == 0
