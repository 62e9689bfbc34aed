"""Selective sync (issue 16): only the chosen folders are listed and indexed; a size budget stops indexing."""
from __future__ import annotations

import pytest

from mcp_nextcloud.indexer.remote.sync import sync
from mcp_nextcloud.indexer.store import selection as sel
from mcp_nextcloud.indexer.index import Index
from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account

DAV = "/remote.php/dav/files/alice"
TREE = {
    "/Documents/report.txt": b"the quarterly report names a pelican\n",
    "/Documents/Old/notes.txt": b"old notes about a heron\n",
    "/Projects/Alpha/plan.md": b"# Plan\n\nThe alpha plan mentions a walrus.\n",
    "/Photos/2024/trip.txt": b"a caption about a penguin\n",
    "/Photos/2025/more.txt": b"another caption, an albatross\n",
    "/top.txt": b"top level file with a toucan\n",
}


@pytest.fixture
def tree(emulator_factory):
    emu = emulator_factory(seed="empty")
    for path, data in TREE.items():
        emu.state.makedirs("alice", path.rsplit("/", 1)[0] or "/")
        emu.state.put_file("alice", path, data)
    return emu


@pytest.fixture
def index(tmp_path):
    ix = Index.open(tmp_path / "index.db")
    yield ix
    ix.close()


def _client(emu) -> NextcloudClient:
    return NextcloudClient(Account(**emu.account("alice")), retries=1, backoff=0.01)


def _paths(index: Index) -> set[str]:
    return {r.path for r in index.files_under("/", source="remote")}


def _listed(emu) -> set[str]:
    return {p[len(DAV):].rstrip("/") or "/" for m, p, _ in emu.requests if m == "PROPFIND" and p.startswith(DAV)}


def test_selection_rules() -> None:
    chosen = sel.Selection.of(include=["Documents/", "/Projects"], exclude=["/Documents/Old"])
    assert chosen.include == ("/Documents", "/Projects") and chosen.exclude == ("/Documents/Old",)
    assert chosen.covers("/Documents/report.txt") and not chosen.covers("/Documents/Old/notes.txt")
    assert not chosen.covers("/top.txt") and not chosen.covers("/Documentsx/a.txt")
    assert chosen.walk_into("/") and chosen.walk_into("/Documents") and not chosen.walk_into("/Photos")
    assert not chosen.walk_into("/Documents/Old")
    assert sel.Selection.of(include=["/"]).whole_account
    with pytest.raises(ValueError, match="nothing to index"):
        sel.Selection.of(exclude=["/"])
    assert sel.Selection.from_json(chosen.to_json()) == chosen


def test_only_included_folders_are_listed_and_indexed(tree, index) -> None:
    sel.save(index, sel.Selection.of(include=["/Documents"], exclude=["/Documents/Old"]))
    with _client(tree) as client:
        report = sync(client, index)
    assert report.complete
    assert _paths(index) == {"/Documents/report.txt"}
    assert _listed(tree) == {"/", "/Documents"}        # never /Photos, /Projects or the excluded /Documents/Old
    assert index.status()["selection"] == {"include": ["/Documents"], "exclude": ["/Documents/Old"]}


def test_excluded_folders_are_never_walked(tree, index) -> None:
    sel.save(index, sel.Selection.of(exclude=["/Photos"]))
    with _client(tree) as client:
        sync(client, index)
    assert not any(p.startswith("/Photos") for p in _paths(index))
    assert "/top.txt" in _paths(index) and "/Projects/Alpha/plan.md" in _paths(index)
    assert not any(p.startswith("/Photos") for p in _listed(tree))


def test_a_changed_selection_drops_what_it_no_longer_covers_and_a_resync_stays_one_request(tree, index) -> None:
    with _client(tree) as client:
        sync(client, index)
        assert len(_paths(index)) == len(TREE)
        sel.save(index, sel.Selection.of(include=["/Projects"]))
        narrowed = sync(client, index)
        assert _paths(index) == {"/Projects/Alpha/plan.md"} and narrowed.removed == len(TREE) - 1
        tree.reset_requests()
        again = sync(client, index)
    assert again.complete and tree.request_count() == 1
    # A change in a folder the selection leaves out changes the root etag: the walk stays on the chosen path.
    tree.state.put_file("alice", "/Photos/2024/new.txt", b"a new caption\n")
    tree.reset_requests()
    with _client(tree) as client:
        sync(client, index)
    assert _listed(tree) <= {"/", "/Projects"} and _paths(index) == {"/Projects/Alpha/plan.md"}


def test_widening_the_selection_walks_the_new_part(tree, index) -> None:
    sel.save(index, sel.Selection.of(include=["/Projects"]))
    with _client(tree) as client:
        sync(client, index)
        sel.save(index, sel.Selection.of(include=["/Projects", "/Photos"]))
        sync(client, index)
    assert {p for p in _paths(index) if p.startswith("/Photos")} == {"/Photos/2024/trip.txt", "/Photos/2025/more.txt"}


def test_the_size_budget_stops_indexing_and_names_the_folders_left(tree, index) -> None:
    sel.save(index, sel.Selection.of(max_index_bytes=1))        # already over: nothing new is downloaded
    with _client(tree) as client:
        report = sync(client, index)
        assert report.over_budget == len(TREE) and not report.complete
        assert set(report.budget_folders) == {"/", "/Documents", "/Documents/Old", "/Projects/Alpha",
                                              "/Photos/2024", "/Photos/2025"}
        assert tree.request_count("GET") == 0
        assert all(r.status == "pending" for r in index.files_under("/", source="remote"))
        sel.save(index, sel.Selection.of())                       # budget lifted: the next sync finishes
        done = sync(client, index)
    assert done.complete and done.indexed == len(TREE) and done.over_budget == 0
