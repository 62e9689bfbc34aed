"""The sync against a real Nextcloud (skipped unless NEXTCLOUD_URL/USER/APP_PASSWORD are set).

The first test indexes the whole account (read-only) and counts the requests
of a quiet resync in the client. The others work in a scratch folder and count
what our code asked in the server's own access log (only lines naming that
folder and sent with our User-Agent: the server is shared): first sync,
incremental, deletion, rename by fileId, and the CLI's selective sync.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.remote.sync import sync
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.nextcloud.client import NextcloudClient

pytestmark = pytest.mark.live


def test_live_sync_then_a_no_change_resync_costs_one_propfind(live_account, tmp_path):
    index = Index.open(tmp_path / "live.db")
    try:
        with NextcloudClient(live_account) as client:
            # A modest cap keeps a first sync of a big account bounded; big files are listed, not fetched.
            first = sync(client, index, max_file_bytes=5 * 1024 * 1024)
            assert first.complete, first.failures
            assert index.folder_etag("/")
            records = index.files_under("/", source="remote")
            assert len(records) >= first.downloaded + first.skipped_too_large
            before = client.request_count
            again = sync(client, index)
            assert client.request_count - before == 1
            assert again.propfinds == 1 and again.downloaded == 0
    finally:
        index.close()


# --- one scratch folder, its requests counted in the server's access log ----------------------------------

def _methods(lines: list[str]) -> list[str]:
    return [line.split(" ", 1)[0] for line in lines]


def _paths(lines: list[str], method: str) -> list[str]:
    from urllib.parse import unquote

    return [unquote(line.split(" ")[1]) for line in lines if line.startswith(method + " ")]


@pytest.fixture
def synced(live_account, tmp_path, live_dav, scratch_folder):
    """A scratch folder with a/x.md and b/y.txt, and sync() of it into a fresh index: (run, index, folder)."""
    live_dav.mkcol(f"{scratch_folder}/a")
    live_dav.mkcol(f"{scratch_folder}/b")
    live_dav.put(f"{scratch_folder}/a/x.md", b"# X\n\nThe axolotl note.\n")
    live_dav.put(f"{scratch_folder}/b/y.txt", b"The yak note.\n")
    index = Index.open(tmp_path / "sync.db")
    client = NextcloudClient(live_account)

    def run():
        return sync(client, index, root=scratch_folder)
    try:
        yield run, index, scratch_folder
    finally:
        client.close()
        index.close()


def test_live_first_sync_indexes_every_file_with_the_servers_file_ids(synced, live_dav, server_admin):
    run, index, folder = synced
    mark = server_admin.log_mark()
    report = run()
    assert report.complete and report.failed == 0
    records = {r.path: r for r in index.files_under(folder, source="remote")}
    assert set(records) == {f"{folder}/a/x.md", f"{folder}/b/y.txt"}
    for path, rec in records.items():
        assert str(rec.file_id) == live_dav.props(path)["fileId"]
    fetched = sorted(_paths(server_admin.requests_since(mark, ours=True, containing=folder), "GET"))
    assert fetched == [live_dav.url(f"{folder}/a/x.md"), live_dav.url(f"{folder}/b/y.txt")]


def test_live_incremental_sync_refetches_only_the_changed_file_and_a_quiet_one_costs_one_propfind(
        synced, live_dav, server_admin):
    run, index, folder = synced
    run()
    live_dav.put(f"{folder}/a/x.md", b"# X\n\nThe axolotl note, now longer and changed.\n")
    mark = server_admin.log_mark()
    changed = run()
    got = server_admin.requests_since(mark, ours=True, containing=folder)
    assert _paths(got, "GET") == [live_dav.url(f"{folder}/a/x.md")]
    assert changed.downloaded == 1
    assert not [p for p in _paths(got, "PROPFIND") if p.rstrip("/").endswith("/b")]   # b's etag did not change
    mark = server_admin.log_mark()
    quiet = run()
    assert _methods(server_admin.requests_since(mark, ours=True, containing=folder)) == ["PROPFIND"]
    assert quiet.downloaded == 0


def test_live_sync_forgets_a_deleted_file(synced, live_dav):
    run, index, folder = synced
    run()
    live_dav.delete(f"{folder}/b/y.txt")
    run()
    assert [r.path for r in index.files_under(folder, source="remote")] == [f"{folder}/a/x.md"]
    assert index.get_file(path=f"{folder}/b/y.txt") is None


def test_live_sync_follows_a_rename_by_file_id_without_downloading_again(synced, live_dav, server_admin):
    run, index, folder = synced
    run()
    before = index.get_file(path=f"{folder}/a/x.md")
    live_dav.move(f"{folder}/a/x.md", f"{folder}/b/renamed.md")
    mark = server_admin.log_mark()
    report = run()
    after = index.get_file(path=f"{folder}/b/renamed.md")
    assert after is not None and before is not None and after.file_id == before.file_id
    assert index.get_file(path=f"{folder}/a/x.md") is None
    assert report.moved == 1 and report.downloaded == 0
    assert _paths(server_admin.requests_since(mark, ours=True, containing=folder), "GET") == []


def test_live_cli_selective_sync_never_lists_an_excluded_folder(live_cli, live_dav, scratch_folder, server_admin):
    import json

    for sub in ("a", "a/private", "b"):
        live_dav.mkcol(f"{scratch_folder}/{sub}")
    live_dav.put(f"{scratch_folder}/a/keep.md", b"kept ocelot\n")
    live_dav.put(f"{scratch_folder}/a/private/secret.md", b"secret ocelot\n")
    live_dav.put(f"{scratch_folder}/b/other.md", b"other ocelot\n")
    mark = server_admin.log_mark()
    done = live_cli("index", "sync", "--wait", "240", "--json", "--include", f"{scratch_folder}/a",
                    "--exclude", f"{scratch_folder}/a/private")
    assert done.returncode == 0, done.stderr[-2000:]
    job = json.loads(done.stdout)
    assert job.get("state", job.get("status")) in ("done", "complete", "completed", "succeeded"), job
    logged = server_admin.requests_since(mark, ours=True, containing=scratch_folder)
    asked = [p.rstrip("/") for p in _paths(logged, "PROPFIND") + _paths(logged, "GET")]
    user_root = live_dav.url(scratch_folder)
    assert f"{user_root}/a" in asked
    assert not [p for p in asked if p.startswith((f"{user_root}/b", f"{user_root}/a/private"))], asked
    hits = live_cli("grep", "ocelot", "--json")
    assert hits.returncode == 0, hits.stderr[-2000:]
    paths = {h["path"] for h in json.loads(hits.stdout)["items"]}
    assert paths == {f"{scratch_folder}/a/keep.md"}
