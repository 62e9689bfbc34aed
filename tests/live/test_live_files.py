"""The files tools against a real Nextcloud: every effect read back with a plain HTTP client.

Each test works in its own scratch folder (a unique name, deleted at the end).
Reads are checked against what the server itself holds: the bytes a plain
GET returns (extracted here with the reader) and the fileId a plain PROPFIND
names. Writes and shares are read back over WebDAV and OCS, never from the
tool's own answer.
"""
from __future__ import annotations

from pathlib import Path


DOCS = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "fixtures" / "docs"


def test_live_files_read_pdf_find_outline_paging_and_by_file_id(live_tools, live_dav, scratch_folder):
    from mcp_nextcloud import reader

    path = f"{scratch_folder}/manual.pdf"
    live_dav.put(path, (DOCS / "manual.pdf").read_bytes())
    server_bytes = live_dav.get(path)
    text = reader.extract(server_bytes, "manual.pdf").text
    file_id = int(live_dav.props(path)["fileId"])

    found = live_tools.ok("files_read", {"path": path, "find": "Installation", "limit": 5})
    assert found["fileId"] == file_id and found["matches"]
    for m in found["matches"]:
        assert text[m["offset"]: m["offset"] + m["length"]].casefold() == "installation"

    outline = live_tools.ok("files_read", {"path": path, "format": "outline"})
    titles = [e["title"] for e in outline["entries"]]
    assert "2. Installation" in titles
    for entry in outline["entries"]:
        assert text[entry["offset"]:].lstrip().startswith(entry["title"][:10])

    first = live_tools.ok("files_read", {"path": path, "limit": 300})
    assert first["truncated"] and first["total"] == len(text)
    second = live_tools.ok("files_read", {"fileId": file_id, "offset": first["nextOffset"], "limit": 300})
    assert second["path"] == path and second["offset"] == first["nextOffset"]
    assert first["content"] + second["content"] == text[: second["offset"] + second["returned"]]


def test_live_files_search_matches_the_servers_listing(live_tools, live_dav, scratch_folder):
    for name in ("a-report.pdf", "b-notes.md", "c-report.pdf"):
        live_dav.put(f"{scratch_folder}/{name}", (DOCS / ("manual.pdf" if name.endswith("pdf")
                                                                         else "manual.md")).read_bytes())
    found = live_tools.ok("files_search", {"name": "*.pdf", "path": scratch_folder})
    assert sorted(f["path"] for f in found["files"]) == [f"{scratch_folder}/a-report.pdf",
                                                          f"{scratch_folder}/c-report.pdf"]
    for hit in found["files"]:
        assert str(hit["fileId"]) == live_dav.props(hit["path"])["fileId"]
    by_type = live_tools.ok("files_search", {"mime": "text/markdown", "path": scratch_folder})
    assert [f["path"] for f in by_type["files"]] == [f"{scratch_folder}/b-notes.md"]


def test_live_files_grep_passages_are_in_the_servers_bytes(tools_factory, live_dav, scratch_folder):
    live_dav.put(f"{scratch_folder}/zoo.md", "# Zoo\n\nThe pangolin sleeps.\n".encode())
    live_dav.put(f"{scratch_folder}/other.txt", b"Nothing about that animal.\n")
    tools = tools_factory(root=scratch_folder)
    hits = tools.ok("files_grep", {"query": "pangolin", "path": scratch_folder})["hits"]
    assert [h["path"] for h in hits] == [f"{scratch_folder}/zoo.md"]
    text = live_dav.get(hits[0]["path"]).decode()
    passage = hits[0]["passages"][0]
    assert text[passage["passageOffset"]:].startswith(passage["passage"])
    assert str(hits[0]["fileId"]) == live_dav.props(hits[0]["path"])["fileId"]


def test_live_files_write_create_replace_with_etag_and_create_folders(live_tools, live_dav, scratch_folder):
    path = f"{scratch_folder}/deep/er/todo.md"
    made = live_tools.ok("files_write", {"path": path, "content": "milk\n", "createFolders": True})
    assert live_dav.get(path).decode() == "milk\n"
    assert live_dav.props(f"{scratch_folder}/deep/er")["type"] == "folder"
    on_server = live_dav.props(path)
    assert on_server["fileId"] == str(made["fileId"])

    replaced = live_tools.ok("files_write", {"path": path, "content": "milk\neggs\n", "etag": on_server["etag"]})
    assert live_dav.get(path).decode() == "milk\neggs\n"
    assert live_dav.props(path)["fileId"] == on_server["fileId"] == str(replaced["fileId"])

    again = live_tools.error("files_write", {"path": path, "content": "overwrite without etag\n"})
    assert "etag" in again.lower()
    assert live_dav.get(path).decode() == "milk\neggs\n"
    by_id = live_tools.ok("files_write", {"fileId": made["fileId"], "content": "bread\n",
                                          "etag": live_dav.props(path)["etag"]})
    assert by_id["path"] == path and live_dav.get(path).decode() == "bread\n"


def test_live_files_write_without_create_folders_makes_nothing(live_tools, live_dav, scratch_folder):
    text = live_tools.error("files_write", {"path": f"{scratch_folder}/missing/x.md", "content": "x"})
    assert "createFolders" in text
    assert live_dav.props(f"{scratch_folder}/missing") == {}


def test_live_files_share_internal_with_the_colleague(live_tools, live_http, live_dav, live_member,
                                                      member_http, scratch_folder):
    path = f"{scratch_folder}/for-elodie.md"
    live_dav.put(path, b"Shared with Elodie.\n")
    shared = live_tools.ok("files_share_internal", {"path": path, "shareWith": live_member.user})
    assert shared["shareWith"] == live_member.user
    resp = live_http.get("/ocs/v2.php/apps/files_sharing/api/v1/shares", params={"path": path, "format": "json"})
    shares = resp.json()["ocs"]["data"]
    assert [(s["share_with"], s["share_type"], s["permissions"] & 2) for s in shares] == [(live_member.user, 0, 0)]
    theirs = member_http.get("/ocs/v2.php/apps/files_sharing/api/v1/shares",
                             params={"shared_with_me": "true", "format": "json"}).json()["ocs"]["data"]
    assert str(shared["fileId"]) in {str(s["item_source"]) for s in theirs}


def test_live_whoami_is_the_servers_own_account(live_tools, live_http):
    me = live_tools.ok("nextcloud_whoami")
    user = live_http.get("/ocs/v2.php/cloud/user", params={"format": "json"}).json()["ocs"]["data"]
    assert (me["userId"], me["displayName"]) == (user["id"], user["display-name"])
    version = live_http.get("/status.php").json()["versionstring"]
    assert me["serverVersion"] == version
    apps = live_http.get("/ocs/v2.php/cloud/capabilities", params={"format": "json"}).json()["ocs"]["data"]
    assert me["apps"]["deck"] == ("deck" in apps["capabilities"])
    assert me["apps"]["talk"] == ("spreed" in apps["capabilities"])
    mail = live_http.get("/ocs/v2.php/apps/mail/account/list", params={"format": "json"}).status_code != 404
    assert me["apps"]["mail"] == mail and (mail or "mail" in me["hint"])
