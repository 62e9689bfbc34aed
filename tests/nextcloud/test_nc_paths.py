"""Path encoding: every segment quoted on the way out, decoded (either hex case) on the way in."""
from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings, strategies as st

from mcp_nextcloud.nextcloud import paths
from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

PREFIX = "/remote.php/dav/files/alice"


@pytest.mark.parametrize("name", ["Résumé final.md", "a b.txt", "odd #1 100% sure?.txt", "a+b&c=d.txt",
                                  "日本語.pdf", "semi;colon,comma'quote\".txt", "~tilde"])
def test_round_trip_special_names(name):
    encoded = paths.encode("/Docs/" + name)
    assert " " not in encoded and "#" not in encoded and "?" not in encoded
    assert encoded.count("/") == 2
    assert paths.href_to_path(PREFIX + encoded, PREFIX) == "/Docs/" + name


def test_lower_and_upper_hex_both_decode():
    assert paths.href_to_path(PREFIX + "/R%c3%a9sum%c3%a9%20final.md", PREFIX) == "/Résumé final.md"
    assert paths.href_to_path(PREFIX + "/R%C3%A9sum%C3%A9%20final.md", PREFIX) == "/Résumé final.md"


def test_href_forms():
    assert paths.href_to_path(PREFIX + "/", PREFIX) == "/"
    assert paths.href_to_path(PREFIX + "/Projects/", PREFIX) == "/Projects"
    assert paths.href_to_path("http://h:1" + PREFIX + "/a", PREFIX) == "/a"
    assert paths.href_to_path("/remote.php/dav/files/bob/a", PREFIX) is None
    assert paths.href_to_path("/remote.php/dav/files/alice2/a", PREFIX) is None


def test_normalize():
    assert paths.normalize("") == "/" and paths.normalize(None) == "/"
    assert paths.normalize("a//b/./c/") == "/a/b/c"
    assert paths.parent_of("/a/b") == "/a" and paths.parent_of("/a") == "/"
    assert paths.name_of("/a/b c") == "b c"


@pytest.mark.parametrize("bad", ["/../etc/passwd", "/a/../../b", "..", "/a\x00b"])
def test_traversal_and_nul_refused(bad):
    with pytest.raises(NextcloudError) as exc:
        paths.normalize(bad)
    assert exc.value.code is ErrorCode.BAD_PATH and "do not repeat this call unchanged" in str(exc.value).lower()


segment = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="/\x00"), min_size=1,
                  max_size=12).filter(lambda s: s not in (".", ".."))


@settings(max_examples=150, deadline=None, database=None)
@given(st.lists(segment, min_size=1, max_size=4))
def test_round_trip_property(segments):
    # Paths are NFC, as Nextcloud stores them: the round trip gives the NFC spelling back.
    path = unicodedata.normalize("NFC", "/" + "/".join(segments))
    encoded = paths.encode(path)
    assert encoded.isascii()
    upper = PREFIX + encoded
    lower = PREFIX + "".join(c.lower() if (i > 0 and encoded[i - 1] == "%") or (i > 1 and encoded[i - 2] == "%")
                             else c for i, c in enumerate(encoded))
    assert paths.href_to_path(upper, PREFIX) == path
    assert paths.href_to_path(lower, PREFIX) == path
