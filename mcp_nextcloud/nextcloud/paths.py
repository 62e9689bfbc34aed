"""User-relative paths <-> percent-encoded DAV URLs.

Every segment is quoted as UTF-8 with no safe characters, so accents, spaces,
'#', '%', '?', '+' and '&' all round-trip; hrefs coming back are decoded with
either hex case (Nextcloud sends lower-case, clients often send upper-case).
Traversal ('..'), NUL and lone surrogates (not encodable in a URL) are refused
before any request is made. Paths are normalised to NFC, as Nextcloud stores
names: the NFD spelling of "Résumé.md" (what macOS file systems hand out) is
the same file, not a second one that looks identical.
"""
from __future__ import annotations

import re
import unicodedata
from urllib.parse import quote, unquote, urlsplit

from .errors import error_for

_SURROGATE = re.compile("[\ud800-\udfff]")


def normalize(path: str | None) -> str:
    """'/a//b/' -> '/a/b'; '' and None -> '/'. Raises NextcloudError kind bad_path on '..' or NUL."""
    if path is None:
        return "/"
    if not isinstance(path, str):
        raise error_for("webdav", None, condition="bad_path", path=repr(path))
    if "\x00" in path:
        raise error_for("webdav", None, condition="bad_path", path=path.replace("\x00", "\\0"))
    if _SURROGATE.search(path):
        raise error_for("webdav", None, condition="bad_path", path=_SURROGATE.sub("\ufffd", path))
    path = unicodedata.normalize("NFC", path)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if any(p == ".." for p in parts):
        raise error_for("webdav", None, condition="bad_path", path=path)
    return "/" + "/".join(parts)


def encode(path: str) -> str:
    """The normalized path with every segment percent-encoded ('/' kept between segments)."""
    norm = normalize(path)
    if norm == "/":
        return "/"
    return "/" + "/".join(quote(seg, safe="") for seg in norm[1:].split("/"))


def join(parent: str, name: str) -> str:
    """Child path of `parent` called `name` (validated)."""
    if "/" in name:
        raise error_for("webdav", None, condition="bad_path", path=name)
    return normalize(normalize(parent).rstrip("/") + "/" + name)


def parent_of(path: str) -> str:
    """'/a/b/c' -> '/a/b'; '/a' -> '/'."""
    norm = normalize(path)
    return norm.rsplit("/", 1)[0] or "/"


def name_of(path: str) -> str:
    """The last segment ('' for the root)."""
    return normalize(path).rsplit("/", 1)[-1]


def href_to_path(href: str, prefix: str) -> str | None:
    """Decode a DAV href under `prefix` (e.g. '/remote.php/dav/files/alice') to '/a/b c'.

    Accepts absolute URLs, either hex case and a trailing slash; returns None
    when the href is not under the prefix (it belongs to someone else).
    """
    raw = urlsplit(href).path if "://" in href else href
    decoded = unquote(raw)
    base = unquote(prefix).rstrip("/")
    if decoded.rstrip("/") == base:
        return "/"
    if not decoded.startswith(base + "/"):
        return None
    rest = decoded[len(base):]
    return "/" + "/".join(p for p in rest.split("/") if p)
