"""Paths are NFC, as Nextcloud stores them (issue 10, item 12): the client normalises, the emulator agrees."""
from __future__ import annotations

import unicodedata
import uuid

from mcp_nextcloud.nextcloud.paths import encode, join, normalize

NFC = "/Documents/Résumé final.md"
NFD = unicodedata.normalize("NFD", NFC)


def test_client_normalises_paths_to_nfc():
    assert NFD != NFC
    assert normalize(NFD) == NFC
    assert encode(NFD) == encode(NFC)
    assert join("/Documents", unicodedata.normalize("NFD", "Résumé final.md")) == NFC


def test_nfd_write_then_nfc_read_is_one_file(nc, emulator):
    name = f"/Résumé {uuid.uuid4().hex[:6]}.md"
    nfd = unicodedata.normalize("NFD", name)
    item = nc.webdav.put(nfd, b"one", create_only=True)
    assert item.path == unicodedata.normalize("NFC", name)
    assert nc.webdav.read(name) == b"one"
    assert [c.path for c in nc.webdav.list("/")[1] if "sum" in c.path] == [item.path]
