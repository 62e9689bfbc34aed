"""Remote sync against the real HTTP emulator: what is walked, what is downloaded, what the index holds.

Requests are counted at the emulator, so "one PROPFIND" means one request on
the wire, not a counter inside our code.
"""
from __future__ import annotations

import threading

import pytest

from mcp_nextcloud.indexer.jobs.pool import IN_PROCESS
from mcp_nextcloud.indexer.jobs.run import run_job
from mcp_nextcloud.indexer.jobs.store import CANCELLED, SUCCEEDED, JobStore, jobs_path_for
from mcp_nextcloud.indexer.models import DOWNLOAD_FAILED
from mcp_nextcloud.indexer.remote.sync import sync
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

DAV = "/remote.php/dav/files/alice"

TREE = {
    "/a/side.txt": b"side file about walruses\n",
    "/a/b/c/deep.txt": b"the deep file mentions a saffron kettle\n",
    "/a/b/c/sibling.md": b"# Sibling\n\nnothing special here\n",
    "/a/b/other/z.txt": b"zebra crossing notes\n",
    "/x/y.txt": b"yellow submarine\n",
    "/top.txt": b"top level text\n",
}


@pytest.fixture
def index(tmp_path):
    """A fresh index of our own (not relying on another module's fixture)."""
    ix = Index.open(tmp_path / "index.db")
    yield ix
    ix.close()


def client_for(emulator, user: str = "alice", **kw) -> NextcloudClient:
    kw.setdefault("retries", 1)
    kw.setdefault("backoff", 0.01)
    return NextcloudClient(Account(**emulator.account(user)), **kw)


@pytest.fixture
def tree_emulator(emulator_factory):
    """An emulator whose alice holds only TREE (small text files: fast, in-process extraction)."""
    emu = emulator_factory(seed="empty")
    for path, data in TREE.items():
        folder = path.rsplit("/", 1)[0]
        if folder:
            emu.state.makedirs("alice", folder)
        emu.state.put_file("alice", path, data)
    return emu


def gets(emu, path: str | None = None) -> int:
    return emu.request_count("GET", DAV + (path or ""))


def paths(index) -> set[str]:
    return {r.path for r in index.files_under("/", source="remote")}


def grep_paths(index, query: str) -> list[str]:
    return [h.path for h in index.grep(query).hits]


def test_initial_sync_indexes_the_seeded_tree_and_grep_finds_text_inside_documents(emulator, index):
    with client_for(emulator) as client:
        report = sync(client, index)      # the real ExtractionPool, as in production
    assert report.complete and not report.cancelled
    records = index.files_under("/", source="remote")
    assert len(records) == report.downloaded == report.indexed + report.failed
    assert report.indexed >= 15
    assert {"/Documents/manual.pdf", "/Documents/budget.xlsx", "/Projects/Alpha/notes.md"} <= paths(index)
    by_path = {r.path: r for r in records}
    assert by_path["/Documents/manual.pdf"].status == "indexed" and by_path["/Documents/manual.pdf"].file_id
    assert grep_paths(index, "aubergine lighthouse") == ["/Documents/manual.pdf"]      # inside the PDF
    assert "/Documents/budget.xlsx" in grep_paths(index, "dépenses de janvier")         # inside the XLSX
    assert "/Documents/Résumé final.md" in grep_paths(index, "elodie muller")
    assert index.folder_etag("/") and index.folder_etag("/Projects/Alpha")
    assert index.get_meta("last_sync_at")
    assert report.propfinds == report.folders_visited == emulator.request_count("PROPFIND")
    assert report.downloaded == gets(emulator)


def test_no_change_resync_costs_exactly_one_propfind_and_no_download(tree_emulator, index):
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        tree_emulator.reset_requests()
        report = sync(client, index, pool=IN_PROCESS)
    assert tree_emulator.request_count() == 1
    assert tree_emulator.request_count("PROPFIND") == 1
    assert gets(tree_emulator) == 0
    assert (report.propfinds, report.downloaded, report.requests) == (1, 0, 1)
    assert paths(index) == set(TREE)


def test_one_change_deep_in_the_tree_walks_only_its_branch(tree_emulator, index):
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        tree_emulator.state.put_file("alice", "/a/b/c/deep.txt", b"now it mentions a cobalt teapot\n")
        tree_emulator.reset_requests()
        report = sync(client, index, pool=IN_PROCESS)
    depth = 3                                          # /a, /a/b, /a/b/c
    assert tree_emulator.request_count("PROPFIND") == depth + 1
    assert gets(tree_emulator) == 1 and gets(tree_emulator, "/a/b/c/deep.txt") == 1
    assert tree_emulator.request_count() == depth + 2
    assert report.indexed == 1 and report.downloaded == 1
    assert grep_paths(index, "cobalt teapot") == ["/a/b/c/deep.txt"]
    assert grep_paths(index, "saffron kettle") == []


def test_a_move_is_recognised_by_file_id_without_download(tree_emulator, index):
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        before = index.get_file(path="/a/b/c/deep.txt")
        tree_emulator.state.move("alice", "/a/b/c/deep.txt", "/x/deep-moved.txt")
        tree_emulator.state.move("alice", "/a/b/other", "/x/other-moved")     # a whole folder
        tree_emulator.reset_requests()
        report = sync(client, index, pool=IN_PROCESS)
    assert gets(tree_emulator) == 0
    assert report.moved == 2 and report.downloaded == 0 and report.removed == 0
    after = index.get_file(path="/x/deep-moved.txt")
    assert after is not None and after.id == before.id and after.file_id == before.file_id
    assert after.status == "indexed"
    assert index.get_file(path="/a/b/c/deep.txt") is None
    assert grep_paths(index, "saffron kettle") == ["/x/deep-moved.txt"]
    assert grep_paths(index, "zebra crossing") == ["/x/other-moved/z.txt"]
    assert index.folder_etag("/a/b/other") is None


def test_a_folder_moved_back_to_its_old_place_is_found_again(tree_emulator, index):
    # A moved folder keeps its etag: a stale remembered etag at the old path would hide its files.
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        tree_emulator.state.move("alice", "/a/b/other", "/x/other")
        sync(client, index, pool=IN_PROCESS)
        tree_emulator.state.move("alice", "/x/other", "/a/b/other")
        sync(client, index, pool=IN_PROCESS)
    assert grep_paths(index, "zebra crossing") == ["/a/b/other/z.txt"]
    assert paths(index) == set(TREE)


def test_deletes_remove_files_and_folders(tree_emulator, index):
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        tree_emulator.state.delete("alice", "/a/side.txt")
        tree_emulator.state.delete("alice", "/x")
        report = sync(client, index, pool=IN_PROCESS)
    assert report.removed == 2
    assert paths(index) == set(TREE) - {"/a/side.txt", "/x/y.txt"}
    assert grep_paths(index, "walruses") == [] and grep_paths(index, "yellow submarine") == []
    assert index.folder_etag("/x") is None


def test_a_file_over_the_cap_is_never_downloaded_and_is_reported_too_large(tree_emulator, index):
    tree_emulator.state.put_file("alice", "/a/big.txt", b"big " * 50_000)     # 200 kB
    with client_for(tree_emulator) as client:
        report = sync(client, index, pool=IN_PROCESS, max_file_bytes=100_000)
        tree_emulator.state.put_file("alice", "/a/new.txt", b"a new small file\n")   # walk /a again
        again = sync(client, index, pool=IN_PROCESS, max_file_bytes=100_000)
    assert gets(tree_emulator, "/a/big.txt") == 0
    assert report.skipped_too_large == 1 and again.skipped_too_large == 0
    rec = index.get_file(path="/a/big.txt")
    assert rec.status == "too_large" and "not downloaded" in rec.reason
    assert again.downloaded == 1


def test_media_files_are_listed_but_never_downloaded(tree_emulator, index):
    tree_emulator.state.put_file("alice", "/a/clip.mp4", b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 5000)
    with client_for(tree_emulator) as client:
        report = sync(client, index, pool=IN_PROCESS)
    assert gets(tree_emulator, "/a/clip.mp4") == 0
    rec = index.get_file(path="/a/clip.mp4")
    assert rec.status == "unsupported" and "not downloaded" in rec.reason and rec.file_id
    assert report.unsupported == 1 and report.complete


def test_a_5xx_on_one_file_does_not_abort_the_sync_and_is_retried_next_time(tree_emulator, index):
    tree_emulator.faults.add(method="GET", path_prefix=DAV + "/a/side.txt", status=500, times=5)
    with client_for(tree_emulator) as client:
        report = sync(client, index, pool=IN_PROCESS)
        assert report.failed == 1 and report.indexed == len(TREE) - 1
        assert report.failures[0]["path"] == "/a/side.txt"
        rec = index.get_file(path="/a/side.txt")
        assert rec.status == "failed" and rec.reason.startswith(DOWNLOAD_FAILED)
        # The index keeps the cause and the next step; a retry word stored now would outlive its moment.
        assert "internal error" in rec.reason.lower() and "retry" not in rec.reason.lower()
        assert "retry" not in report.failures[0]["reason"].lower()
        assert index.folder_etag("/a") is None and index.folder_etag("/") is None   # revisited next time
        assert index.folder_etag("/a/b/c") is not None                              # finished branch kept
        tree_emulator.faults.clear()
        tree_emulator.reset_requests()
        again = sync(client, index, pool=IN_PROCESS)
    assert gets(tree_emulator) == 1 and gets(tree_emulator, "/a/side.txt") == 1
    assert again.indexed == 1 and again.failed == 0
    assert index.get_file(path="/a/side.txt").status == "indexed"
    assert index.folder_etag("/") is not None


def test_a_dropped_connection_and_a_timeout_are_reported_per_file(tree_emulator, index):
    tree_emulator.faults.add(method="GET", path_prefix=DAV + "/x/y.txt", drop=True, times=5)
    tree_emulator.faults.add(method="GET", path_prefix=DAV + "/top.txt", delay=2.0, times=5)
    with client_for(tree_emulator, timeout=0.4, total_timeout=1.5) as client:
        report = sync(client, index, pool=IN_PROCESS)
    reasons = {f["path"]: f["reason"] for f in report.failures}
    assert set(reasons) == {"/x/y.txt", "/top.txt"}
    assert "connection" in reasons["/x/y.txt"].lower()
    assert "in time" in reasons["/top.txt"].lower()
    assert report.indexed == len(TREE) - 2
    assert "127.0.0.1" not in str(reasons) and "remote.php" not in str(reasons)


def test_wrong_credentials_fail_the_sync_with_the_login_instruction(tree_emulator, index):
    acct = Account(url=tree_emulator.url, user="alice", app_password="s3cret-Not-Valid-xyz")
    with NextcloudClient(acct, retries=0) as client, pytest.raises(NextcloudError) as err:
        sync(client, index, pool=IN_PROCESS)
    assert err.value.code is ErrorCode.AUTH and "mcp-nextcloud login" in str(err.value)
    assert "s3cret-Not-Valid-xyz" not in str(err.value)
    assert paths(index) == set()


def test_an_unreachable_server_fails_the_sync_with_an_instruction_and_keeps_the_index(tree_emulator, index):
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
    tree_emulator.stop()
    with client_for(tree_emulator, connect_timeout=0.5) as client, pytest.raises(NextcloudError) as err:
        sync(client, index, pool=IN_PROCESS)
    assert err.value.code is ErrorCode.NETWORK and err.value.retry is True
    assert "127.0.0.1" not in str(err.value) and "retry" in str(err.value).lower()
    assert paths(index) == set(TREE)                      # nothing lost


def test_cancel_stops_between_files_and_the_next_sync_finishes_the_rest(tree_emulator, index, tmp_path):
    store = JobStore(jobs_path_for(index.path))
    job = store.create_or_join("sync", "alice")
    seen: list[str] = []

    def progress(done: int, total: int, path: str) -> None:
        seen.append(path)
        if len(seen) == 2:
            store.request_cancel(job.id)       # as `jobs cancel` from another process would

    with client_for(tree_emulator) as client:
        final = run_job(store, job.id,
                        lambda h: sync(client, index, pool=IN_PROCESS, job=h, progress=progress).to_dict())
        assert final.state == CANCELLED
        assert final.result["cancelled"] is True and final.result["indexed"] < len(TREE)
        assert index.folder_etag("/") is None                 # the walk is not recorded as finished
        done_before = {r.path for r in index.files_under("/") if r.status == "indexed"}
        assert all(r.status == "indexed" for r in index.files_under("/"))   # consistent: no half-stored file
        tree_emulator.reset_requests()
        report = sync(client, index, pool=IN_PROCESS)
    assert report.complete and paths(index) == set(TREE)
    assert gets(tree_emulator) == len(TREE) - len(done_before)
    for p in done_before:
        assert gets(tree_emulator, p) == 0


def test_progress_is_reported_on_the_job(tree_emulator, index):
    store = JobStore(jobs_path_for(index.path))
    job = store.create_or_join("sync", "alice")
    with client_for(tree_emulator) as client:
        final = run_job(store, job.id, lambda h: sync(client, index, pool=IN_PROCESS, job=h).to_dict())
    assert final.state == SUCCEEDED
    assert final.done == final.total == len(TREE)
    assert final.result["indexed"] == len(TREE) and final.result["propfinds"] == 6


def test_concurrent_syncs_through_the_job_store_join_one_job(tree_emulator, index):
    store = JobStore(jobs_path_for(index.path))
    first = store.create_or_join("sync", "alice")
    started, release = threading.Event(), threading.Event()

    def body(handle):
        started.set()
        release.wait(10)
        with client_for(tree_emulator) as client:
            return sync(client, index, pool=IN_PROCESS, job=handle).to_dict()

    t = threading.Thread(target=run_job, args=(store, first.id, body))
    t.start()
    assert started.wait(10)
    second = store.create_or_join("sync", "alice")
    release.set()
    t.join(30)
    assert second.id == first.id
    assert store.get(first.id).state == SUCCEEDED
    assert len(store.list()) == 1


def _meta_ts(index, key: str) -> float | None:
    import datetime as dt

    value = index.get_meta(key)
    return dt.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() if value else None


def test_changes_since_mark_is_the_sync_start_minus_a_margin(tree_emulator, index):
    import time

    from mcp_nextcloud.indexer.remote.marks import CHANGES_SINCE_MARGIN_S

    during: list[float] = []

    def edit_while_walking(done: int, total: int, path: str) -> None:
        if not during:   # a file changed after the root was listed: this sync cannot see it
            during.append(time.time())
            tree_emulator.state.put_file("alice", "/late.txt", b"written during the sync", mtime=during[0])
            time.sleep(1.1)  # the sync finishes in a later second than the change

    started = time.time()
    with client_for(tree_emulator) as client:
        report = sync(client, index, pool=IN_PROCESS, progress=edit_while_walking)
    assert report.complete and "/late.txt" not in paths(index)
    mark, finished = _meta_ts(index, "changes_since"), _meta_ts(index, "last_sync_at")
    # The sync's start (after `started`, before the first progress call) minus the margin, floored.
    assert int(started - CHANGES_SINCE_MARGIN_S) <= mark <= during[0] - CHANGES_SINCE_MARGIN_S
    assert mark < during[0] <= finished + 1 and finished >= int(during[0]) + 1
    assert _meta_ts(index, "last_full_sync_at") == finished
    # What files_grep will ask the server: the late file is among the changes since the mark.
    with client_for(tree_emulator) as client:
        assert "/late.txt" in {i.path for i in client.webdav.search(modified_after=mark)}


def test_partial_or_subtree_syncs_do_not_move_the_mark(tree_emulator, index):
    old = "2000-01-01T00:00:00Z"   # a sentinel: a sync in the same second would write an equal mark
    with client_for(tree_emulator) as client:
        sync(client, index, pool=IN_PROCESS)
        assert index.get_meta("changes_since") != old
        index.writer().set_meta("changes_since", old)
        tree_emulator.state.put_file("alice", "/x/new.txt", b"new")
        tree_emulator.faults.add(method="PROPFIND", path_prefix=DAV + "/x", status=500, times=10)
        report = sync(client, index, pool=IN_PROCESS)
        assert not report.complete and index.get_meta("changes_since") == old
        tree_emulator.faults.clear()
        assert sync(client, index, pool=IN_PROCESS, root="/a").complete
        assert index.get_meta("changes_since") == old
        assert sync(client, index, pool=IN_PROCESS).complete and index.get_meta("changes_since") != old


def test_ctrl_c_during_a_sync_does_not_wait_for_the_extraction_in_hand(tree_emulator, index):
    """Ctrl-C while a worker extracts a big file: the sync ends without waiting for it (the worker is killed),
    and the file stays pending, not failed, for the next sync. Clock-free: a sync that waited would have
    finished the extraction and stored the file as indexed."""
    from tests.indexer.test_worker_memory import large_text

    tree_emulator.state.put_file("alice", "/a-large.txt", large_text(300_000))   # seconds of CPU in a worker

    def progress(done: int, total: int, path: str) -> None:
        if path == "/a-large.txt":     # downloaded and handed to a worker: now the user presses Ctrl-C
            raise KeyboardInterrupt

    with client_for(tree_emulator) as client:
        with pytest.raises(KeyboardInterrupt):
            sync(client, index, progress=progress)            # its own pool: the one it may stop
        large = next(r for r in index.files_under("/") if r.path == "/a-large.txt")
        assert large.status == "pending", (large.status, large.reason)
        report = sync(client, index)
    assert report.complete and paths(index) == {*TREE, "/a-large.txt"}
