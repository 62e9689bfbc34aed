"""files_write never destroys what it cannot write back (issue 10, items 1 and 2).

A document stored under a name that hides its format is read (the reader knows it by its bytes) and
then a write with the etag it handed out must be refused; If-Match carries exactly one entity tag, and
the emulator follows Sabre in treating only a bare `*` as a wildcard.
"""
from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

ALICE = "alice"
DOCS = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "fixtures" / "docs"


def _hidden(world, source: str, name: str) -> str:
    path = f"/Documents/{uuid.uuid4().hex[:6]}-{name}"
    world.emulator.state.put_file(ALICE, path, (DOCS / source).read_bytes())
    return path


@pytest.mark.parametrize("source,name", [
    ("manual.pdf", "contract"), ("budget.xlsx", "budget.xlsx.bak"), ("manual.pdf", "manual.pdf~"),
    ("photo.png", "scan.txt"), ("notes.odt", "notes.md"),
])
def test_read_then_write_of_a_disguised_document_is_refused(world, call, ok, err, source, name):
    path = _hidden(world, source, name)
    before = world.emulator.state.find(ALICE, path).data
    read = call("files_read", {"path": path})
    etag = ok(read)["etag"] if not read.is_error else world.emulator.state.find(ALICE, path).etag
    text = err(call("files_write", {"path": path, "content": "oops", "etag": etag}))
    assert "not text" in text and "Do not retry" in text
    assert world.emulator.state.find(ALICE, path).data == before


def test_unknown_kind_is_judged_by_the_first_bytes(world, call, err):
    path = _hidden(world, "manual.pdf", "scan-without-extension")
    etag = world.emulator.state.find(ALICE, path).etag
    text = err(call("files_write", {"path": path, "content": "oops", "etag": etag}))
    assert "holds PDF content" in text
    assert world.emulator.state.find(ALICE, path).data.startswith(b"%PDF-")


def test_text_without_extension_can_still_be_replaced(world, call, ok):
    path = f"/Documents/README-{uuid.uuid4().hex[:6]}"
    world.emulator.state.put_file(ALICE, path, b"plain words\n")
    etag = ok(call("files_read", {"path": path}))["etag"]   # a replacement needs a read of what it replaces
    out = ok(call("files_write", {"path": path, "content": "new words\n", "etag": etag}))
    assert out["created"] is False
    assert world.emulator.state.find(ALICE, path).data == b"new words\n"


def test_etag_list_with_wildcard_never_overwrites_an_unread_file(world, call, err):
    path = f"/Documents/unread-{uuid.uuid4().hex[:6]}.md"
    world.emulator.state.put_file(ALICE, path, b"precious")
    text = err(call("files_write", {"path": path, "content": "gone", "etag": '"x", *'}))
    assert "etag" in text and "one entity tag" in text
    assert world.emulator.state.find(ALICE, path).data == b"precious"


def _put(world, path: str, headers: dict[str, str], body: bytes = b"new") -> httpx.Response:
    creds = world.emulator.account(ALICE)
    return httpx.put(f"{creds['url']}/remote.php/dav/files/{ALICE}{path}", content=body, headers=headers,
                     auth=(creds["user"], creds["app_password"]))


def test_emulator_if_match_follows_sabre(world):
    path = f"/Documents/sabre-{uuid.uuid4().hex[:6]}.md"
    world.emulator.state.put_file(ALICE, path, b"old")
    etag = f'"{world.emulator.state.find(ALICE, path).etag}"'
    assert _put(world, path, {"If-Match": '"x", *'}).status_code == 412      # '*' inside a list is a string
    assert world.emulator.state.find(ALICE, path).data == b"old"
    assert _put(world, path, {"If-Match": f'"x", {etag}'}).status_code == 204  # a listed tag that matches
    assert _put(world, path, {"If-Match": "*"}, b"any").status_code == 204    # a bare '*': any version
    missing = _put(world, f"/Documents/none-{uuid.uuid4().hex}.md", {"If-Match": "*"})
    assert missing.status_code == 412 and b"did not exist" in missing.content


def test_nfd_spelling_reaches_the_same_file(world, call, ok):
    import unicodedata

    stem = f"Résumé final {uuid.uuid4().hex[:6]}.md"
    nfc = "/Documents/" + unicodedata.normalize("NFC", stem)
    nfd = "/Documents/" + unicodedata.normalize("NFD", stem)
    assert nfc != nfd
    created = ok(call("files_write", {"path": nfc, "content": "one"}))
    again = call("files_write", {"path": nfd, "content": "two"})
    assert again.is_error and "exists" in again.content[0].text.lower()
    replaced = ok(call("files_write", {"path": nfd, "content": "two", "etag": created["etag"]}))
    assert replaced["path"] == nfc and replaced["fileId"] == created["fileId"]
    children = world.emulator.state.find(ALICE, "/Documents").children
    same = [n for n in children if unicodedata.normalize("NFC", n) == unicodedata.normalize("NFC", stem)]
    assert same == [unicodedata.normalize("NFC", stem)]


def test_emulator_stores_an_nfd_upload_under_its_nfc_name(world):
    import unicodedata

    stem = f"Café-{uuid.uuid4().hex[:6]}.md"
    assert _put(world, "/Documents/" + unicodedata.normalize("NFD", stem), {}).status_code == 201
    assert world.emulator.state.find(ALICE, "/Documents/" + unicodedata.normalize("NFC", stem)) is not None
    assert unicodedata.normalize("NFD", stem) not in world.emulator.state.find(ALICE, "/Documents").children
