"""watch: real watchdog (inotify) events on a temporary folder keep the index current."""
from __future__ import annotations

import os
import time

import pytest

from mcp_nextcloud.indexer.local.folder import index_folder
from mcp_nextcloud.indexer.local.watch import FolderWatcher
from tests.helpers import wait_for


@pytest.fixture
def watched(tmp_path, index, counting_pool):
    root = tmp_path / "w"
    root.mkdir()
    (root / "keep.txt").write_text("the steady lighthouse")
    index_folder(index, root, pool=counting_pool)
    watcher = FolderWatcher(index, str(root), pool=counting_pool, debounce=0.2).start()
    time.sleep(0.2)  # let inotify register the watches
    yield root, index, watcher
    watcher.stop()


def found(index, q):
    return sorted(h.path for h in index.grep(q).hits)


def settle(root, index, name: str = "barrier.txt") -> None:
    """Wait until the watcher applied every event that came before now, instead of sleeping and hoping.

    inotify delivers events in order and the debounce keeps that order, so once
    a file written now is indexed, whatever the earlier events were to cause
    (a re-extraction, a journal re-read) has happened.
    """
    import uuid

    token = "barrier" + uuid.uuid4().hex[:10]
    (root / name).write_text(f"a {token} file")
    wait_for(lambda: found(index, token), what="the barrier file to be indexed")


def test_create_modify_delete(watched):
    root, index, _ = watched
    (root / "new.txt").write_text("a fresh pineapple")
    assert wait_for(lambda: found(index, "pineapple") == ["/new.txt"])
    (root / "new.txt").write_text("a fresh mango")
    assert wait_for(lambda: found(index, "mango") == ["/new.txt"] and not found(index, "pineapple"))
    (root / "new.txt").unlink()
    assert wait_for(lambda: index.get_file(path="/new.txt") is None)
    assert found(index, "lighthouse") == ["/keep.txt"]


def test_atomic_save_via_replace(watched, counting_pool):
    root, index, _ = watched
    tmp = root / ".keep.txt.swp-tmp"
    tmp.write_text("the renovated lighthouse")
    os.replace(tmp, root / "keep.txt")
    assert wait_for(lambda: found(index, "renovated") == ["/keep.txt"])
    assert index.get_file(path="/.keep.txt.swp-tmp") is None


def test_move_and_folder_events(watched):
    root, index, _ = watched
    (root / "keep.txt").rename(root / "moved.txt")
    assert wait_for(lambda: found(index, "lighthouse") == ["/moved.txt"])
    # A file written into a directory created a moment ago (inotify may miss it: the dir is rescanned).
    d = root / "fresh" / "deeper"
    d.mkdir(parents=True)
    (d / "inside.md").write_text("# Inside\n\nthe hidden walnut")
    assert wait_for(lambda: found(index, "walnut") == ["/fresh/deeper/inside.md"])
    # Moving and then deleting a whole folder updates every file below it.
    (root / "fresh").rename(root / "renamed")
    assert wait_for(lambda: found(index, "walnut") == ["/renamed/deeper/inside.md"])
    import shutil

    shutil.rmtree(root / "renamed")
    assert wait_for(lambda: found(index, "walnut") == [] and index.files_under("/renamed") == [])


def test_ignored_files_are_not_indexed(watched):
    root, index, watcher = watched
    (root / "~$draft.docx").write_text("pumpkin")
    (root / "big.iso.part").write_text("pumpkin")
    (root / "visible.txt").write_text("pumpkin")
    assert wait_for(lambda: found(index, "pumpkin") == ["/visible.txt"])
    settle(root, index)
    assert found(index, "pumpkin") == ["/visible.txt"]


def test_sync_folder_journal_update_attaches_file_ids_without_reextraction(tmp_path, index, counting_pool):
    import apsw

    root = tmp_path / "Nextcloud"
    root.mkdir()
    journal = root / ".sync_77aa.db"
    con = apsw.Connection(str(journal))
    con.execute("CREATE TABLE metadata(phash INTEGER(8), pathlen INTEGER, path VARCHAR(4096), inode INTEGER, "
                "uid INTEGER, gid INTEGER, mode INTEGER, modtime INTEGER(8), type INTEGER, md5 VARCHAR(32), "
                "fileid VARCHAR(128), remotePerm VARCHAR(128), filesize BIGINT, PRIMARY KEY(phash))")
    con.close()
    index_folder(index, root, pool=counting_pool)
    with FolderWatcher(index, str(root), pool=counting_pool, debounce=0.2):
        time.sleep(0.2)
        (root / "new.txt").write_text("a synced otter")
        assert wait_for(lambda: found(index, "otter") == ["/new.txt"])
        assert index.get_file(path="/new.txt").file_id is None
        n = counting_pool.count
        st = (root / "new.txt").stat()
        # The desktop client uploads the file and records its server identity in the journal.
        con = apsw.Connection(str(journal))
        con.execute("INSERT INTO metadata(phash, pathlen, path, modtime, type, md5, fileid, filesize) "
                    "VALUES(1, 7, 'new.txt', ?, 0, '6620e1f0a2b3c', '00000789ocxyz', ?)",
                    (int(st.st_mtime), st.st_size))
        con.close()
        assert wait_for(lambda: (index.get_file(path="/new.txt").file_id == 789))
        assert index.get_file(path="/new.txt").etag == "6620e1f0a2b3c"
        assert counting_pool.count == n  # identity attached, text kept
        assert index.grep("otter").hits[0].fileId == 789


def test_renames_and_folder_moves_keep_the_text(watched, counting_pool):
    root, index, watcher = watched
    d = root / "projects" / "kiwi"
    d.mkdir(parents=True)
    (d / "one.txt").write_text("the first gannet")
    (d / "two.md").write_text("# Two\n\nthe second gannet")
    assert wait_for(lambda: found(index, "gannet") == ["/projects/kiwi/one.txt", "/projects/kiwi/two.md"])
    assert wait_for(watcher.idle)
    n, ids = counting_pool.count, {index.get_file(path="/keep.txt").id}

    (root / "keep.txt").rename(root / "projects" / "beacon.txt")   # a file rename across folders
    assert wait_for(lambda: found(index, "lighthouse") == ["/projects/beacon.txt"])
    assert index.get_file(path="/projects/beacon.txt").id in ids and index.get_file(path="/keep.txt") is None
    (root / "projects").rename(root / "archive")                    # a folder move: every file below it
    assert wait_for(lambda: found(index, "gannet") == ["/archive/kiwi/one.txt", "/archive/kiwi/two.md"])
    assert wait_for(lambda: found(index, "lighthouse") == ["/archive/beacon.txt"])
    assert index.files_under("/projects") == []
    assert index.get_file(path="/archive/kiwi/one.txt").local_path == str(root / "archive" / "kiwi" / "one.txt")
    # An indexed file renamed over another one: the destination now holds the moved file's text.
    os.replace(root / "archive" / "kiwi" / "one.txt", root / "archive" / "kiwi" / "two.md")
    assert wait_for(lambda: found(index, "gannet") == ["/archive/kiwi/two.md"] and not found(index, "second"))
    assert index.get_file(path="/archive/kiwi/one.txt") is None
    settle(root, index)  # the debounced re-checks of the destination ran: they must not extract
    assert counting_pool.names[n:] == ["barrier.txt"] and watcher.moves >= 5


def test_atomic_save_extracts_once_and_moving_out_of_sight_removes(watched, counting_pool):
    root, index, watcher = watched
    n = counting_pool.count
    tmp = root / "keep.txt.tmp"                      # not indexed (ignored): the move is "keep.txt modified"
    tmp.write_text("the rebuilt lighthouse")
    os.replace(tmp, root / "keep.txt")
    assert wait_for(lambda: found(index, "rebuilt") == ["/keep.txt"])
    assert wait_for(watcher.idle)
    assert counting_pool.names[n:] == ["keep.txt"] and watcher.moves == 0
    (root / "keep.txt").rename(root / ".keep.txt.hidden")   # renamed to a hidden name: gone from the index
    assert wait_for(lambda: index.get_file(path="/keep.txt") is None and not found(index, "rebuilt"))
    assert counting_pool.count == n + 1


def test_journal_change_looks_only_at_changed_rows(tmp_path, index, counting_pool, make_journal):
    import apsw

    root = tmp_path / "Nextcloud"
    rows = []
    for i in range(25):
        f = root / "Docs" / f"memo{i:02d}.txt"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(f"memo {i} about the puffin")
        os.utime(f, (1_700_000_000, 1_700_000_000))
        rows.append((f"Docs/memo{i:02d}.txt", f"{100 + i:08d}ocxyz", f"etag{i}", 1_700_000_000, f.stat().st_size, 0))
    journal = make_journal(root, rows)
    index_folder(index, root, pool=counting_pool)
    (root / "Docs" / "late.txt").write_text("a late puffin")      # synced before the watcher started
    n = counting_pool.count
    errors: list[str] = []
    def on_change(what: str, rec) -> None:
        if what.startswith("error"):
            errors.append(what)

    with FolderWatcher(index, str(root), pool=counting_pool, debounce=0.2, on_change=on_change) as watcher:
        time.sleep(0.2)
        # The client renames memo03 on the server and records the new path and the late file's identity.
        (root / "Docs" / "memo03.txt").rename(root / "Docs" / "renamed03.txt")
        assert wait_for(lambda: index.get_file(path="/Docs/renamed03.txt") is not None)
        st = (root / "Docs" / "late.txt").stat()
        con = apsw.Connection(str(journal))
        con.execute("UPDATE metadata SET path='Docs/renamed03.txt' WHERE path='Docs/memo03.txt'")
        con.execute("INSERT INTO metadata(phash, pathlen, path, modtime, type, md5, fileid, filesize) "
                    "VALUES(900, 13, 'Docs/late.txt', ?, 0, 'etag-late', '00000999ocxyz', ?)",
                    (int(st.st_mtime), st.st_size))
        con.close()
        assert wait_for(lambda: getattr(index.get_file(path="/Docs/late.txt"), "file_id", None) == 999)
        assert wait_for(watcher.idle)
        # Only the late file differed from the index (the rename was already applied from its event).
        assert watcher.journal_checked == 1
        assert index.get_file(path="/Docs/renamed03.txt").file_id == 103
        assert index.get_file(path="/Docs/late.txt").etag == "etag-late"
        # Reading a WAL journal touches its -wal/-shm files: those events must not re-trigger a read.
        reads = watcher.journal_reads
        settle(root, index)
        settle(root, index, "barrier2.txt")
        assert watcher.journal_reads == reads
    # The late file was extracted once (by the catch-up of its own file); nothing else but the barriers.
    assert counting_pool.names[n:] == ["late.txt", "barrier.txt", "barrier2.txt"] and errors == []
    assert index.grep("puffin").total == 26


def test_watching_a_subfolder_sync_keeps_its_nextcloud_paths(tmp_path, index, counting_pool, make_journal):
    root = tmp_path / "Work"
    (root / "Plans").mkdir(parents=True)
    make_journal(root, [("Plans", "00000900ocabc", "d1", 1_700_000_000, 0, 2)])
    index_folder(index, root, pool=counting_pool, remote_path="/Work")
    with FolderWatcher(index, str(root), pool=counting_pool, debounce=0.2):
        time.sleep(0.2)
        (root / "Plans" / "q4.md").write_text("the quokka plan")
        assert wait_for(lambda: found(index, "quokka") == ["/Work/Plans/q4.md"])
