"""watch: real watchdog (inotify) events on a temporary folder keep the index current."""
from __future__ import annotations

import os
import time

import pytest

from indexer.local import index_folder
from indexer.watch import FolderWatcher


def wait_for(cond, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


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
    time.sleep(0.4)
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
