"""Files over WebDAV: PROPFIND, SEARCH, streamed/ranged GET, conditional PUT, MKCOL, MOVE, COPY, DELETE.

Callers speak user-relative paths ("/Documents/a.pdf"); DAV hrefs, the user id
in the URL and percent-encoding stay inside this module.
"""
from __future__ import annotations

import builtins
import io

import mimetypes
import re
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO, Callable, Iterable

import httpx

from . import paths
from .davxml import DAV, NC, OC, DavResponse, escape, parse_multistatus, q
from .errors import ErrorCode, NextcloudError, error_for
from .http import Transport

SOURCE = "webdav"
_PROPS = ("<d:getetag/><oc:fileid/><oc:size/><d:getcontentlength/><d:getcontenttype/>"
          "<d:getlastmodified/><d:displayname/><d:resourcetype/><oc:permissions/><oc:favorite/>")
_NS = 'xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"'
PROPFIND_BODY = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_NS}><d:prop>{_PROPS}</d:prop>'
                 "</d:propfind>").encode()
MAX_SEARCH_LIMIT = 1000
# RFC 9110 8.8.3: entity-tag = [ "W/" ] DQUOTE *etagc DQUOTE, etagc = %x21 / %x23-7E (obs-text is left
# out: header values are ASCII here, and Nextcloud's etags are hex).
_ETAGC = r"[\x21\x23-\x7e]"
_QUOTED_TAG = re.compile(rf'(?:W/)?"{_ETAGC}*"')
_BARE_TAG = re.compile(rf"{_ETAGC}+")
# What Nextcloud's SEARCH accepts for a content type: "type/subtype" or a "type/%" prefix.
_MIME_QUERY = re.compile(r"[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/(?:[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*|%)")


def entity_tag(etag: str) -> str | None:
    """Exactly one entity tag as If-Match takes it, or None.

    Accepts what files_read hands out (the bare opaque tag, quoted here), a
    quoted tag and a weak one. A list, `*` (If-Match's wildcard would match any
    version), whitespace, non-ASCII or control characters are not one tag.
    """
    text = etag.strip()
    if _QUOTED_TAG.fullmatch(text):
        return text
    if text != "*" and _BARE_TAG.fullmatch(text):
        return f'"{text}"'
    return None


@dataclass(frozen=True)
class RemoteItem:
    """A file or folder as Nextcloud reports it (user-relative, decoded path)."""
    path: str
    name: str
    file_id: int | None
    etag: str
    size: int
    mtime: float
    mime: str | None
    is_dir: bool
    permissions: str = ""
    favorite: bool = False


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text not in (None, "") else None
    except ValueError:
        return None


def parse_fileid(value: str | None) -> int | None:
    """OC-FileId '00000123ocnctest0000' or oc:fileid '123' -> 123."""
    if not value:
        return None
    digits = value[:8] if len(value) > 8 and not value.isdigit() else value
    return _int(digits.lstrip("0") or "0")


def _mtime(text: str | None) -> float:
    if not text:
        return 0.0
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError):
        return 0.0


def item_from_response(resp: DavResponse, prefix: str) -> RemoteItem | None:
    """A RemoteItem from one multistatus response; None when the href is outside `prefix`."""
    path = paths.href_to_path(resp.href, prefix)
    if path is None:
        return None
    rtype = resp.props.get(q(DAV, "resourcetype"))
    is_dir = rtype is not None and rtype.find(q(DAV, "collection")) is not None
    size = _int(resp.text(OC, "size"))
    if size is None:
        size = _int(resp.text(DAV, "getcontentlength")) or 0
    name = path.rsplit("/", 1)[-1] if path != "/" else ""
    return RemoteItem(
        path=path, name=name,
        file_id=_int(resp.text(OC, "fileid")),
        etag=(resp.text(DAV, "getetag") or "").strip('"'),
        size=size, mtime=_mtime(resp.text(DAV, "getlastmodified")),
        mime=None if is_dir else (resp.text(DAV, "getcontenttype") or None),
        is_dir=is_dir, permissions=resp.text(OC, "permissions") or "",
        favorite=(resp.text(OC, "favorite") or "0").strip() in ("1", "true"),
    )


def iso(value: datetime | float) -> str:
    """An ISO-8601 literal Nextcloud's SEARCH understands (an RFC-1123 date would silently be 0)."""
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    else:
        dt = datetime.fromtimestamp(float(value), tz=timezone.utc)
    return dt.astimezone(timezone.utc).isoformat(timespec="seconds")


class WebDAV:
    """The files API of one account."""

    def __init__(self, transport: Transport, user_id: Callable[[], str],
                 recheck_user: Callable[[], bool] | None = None) -> None:
        self._t = transport
        self._user_id = user_id
        # Called on a 404: confirms the guessed user id with the server once; True when it changed.
        self._recheck_user = recheck_user

    def _dav(self, method: str, path: str, **kw: Any) -> httpx.Response:
        """One DAV request on the user's `path`; a 404 caused by a wrong user id is retried once."""
        try:
            return self._t.request(method, self.url(path), source=SOURCE, path=path, dav=True, **kw)
        except NextcloudError as err:
            if err.status in (404, 409) and self._recheck_user is not None and self._recheck_user():
                return self._t.request(method, self.url(path), source=SOURCE, path=path, dav=True, **kw)
            raise

    # -- URLs ----------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """'/remote.php/dav/files/<user id>' (the user id percent-encoded)."""
        return "/remote.php/dav/files" + paths.encode(self._user_id())

    def url(self, path: str) -> str:
        return self.prefix + paths.encode(path)

    def _items(self, body: bytes, path: str) -> list[RemoteItem]:
        out = []
        for resp in parse_multistatus(body, path=path):
            item = item_from_response(resp, self.prefix)
            if item is not None:
                out.append(item)
        return out

    # -- reading -------------------------------------------------------------------------
    def _propfind(self, path: str, depth: str) -> list[RemoteItem]:
        norm = paths.normalize(path)
        resp = self._dav("PROPFIND", norm,
                               headers={"Depth": depth, "Content-Type": "application/xml; charset=utf-8"},
                               content=PROPFIND_BODY, ok=(207,))
        items = self._items(resp.content, norm)
        if not items:
            raise error_for(SOURCE, 207, condition="invalid_response", path=norm, detail="empty multistatus")
        if items[0].file_id is None and not items[0].etag:
            # e.g. another user's home: the server shows it exists but hides every property.
            raise error_for(SOURCE, 403, path=norm)
        return items

    def stat(self, path: str) -> RemoteItem:
        """PROPFIND Depth 0: the item at `path`."""
        return self._propfind(path, "0")[0]

    def list(self, path: str) -> tuple[RemoteItem, list[RemoteItem]]:
        """PROPFIND Depth 1: the folder and its direct children."""
        items = self._propfind(path, "1")
        folder = items[0]
        return folder, [i for i in items[1:] if i.path != folder.path]

    def search(self, *, name: str | None = None, mime: str | None = None,
               modified_after: datetime | float | None = None, path: str = "/", limit: int = 100,
               offset: int = 0, include_folders: bool = False) -> builtins.list[RemoteItem]:
        """DASL SEARCH at the DAV root, newest first. `name` is a substring; `mime` exact or 'image/%'."""
        norm = paths.normalize(path)
        conds = []
        if name:
            conds.append(f"<d:like><d:prop><d:displayname/></d:prop><d:literal>%{escape(name)}%</d:literal></d:like>")
        if mime:
            m = mime.strip().replace("*", "%")
            if not _MIME_QUERY.fullmatch(m):   # Nextcloud answers anything else with a 500
                raise error_for(SOURCE, 400, path=norm, detail="mime must be 'type/subtype' or a prefix like 'image/%'")
            op = "like" if m.endswith("%") else "eq"
            conds.append(f"<d:{op}><d:prop><d:getcontenttype/></d:prop><d:literal>{escape(m)}</d:literal></d:{op}>")
        if modified_after is not None:
            conds.append("<d:gt><d:prop><d:getlastmodified/></d:prop>"
                         f"<d:literal>{iso(modified_after)}</d:literal></d:gt>")
        if not include_folders:
            conds.append("<d:not><d:is-collection/></d:not>")
        return self._search(conds, norm, limit=limit, offset=offset,
                            order="<d:orderby><d:order><d:prop><d:getlastmodified/></d:prop>"
                                  "<d:descending/></d:order></d:orderby>")

    def present(self, file_ids: Iterable[int]) -> builtins.list[RemoteItem]:
        """Which of these files the account still has (one SEARCH on oc:fileid): the items found.

        A fileId missing from the answer was deleted (or unshared) since it was seen."""
        ids = sorted({int(i) for i in file_ids})
        if not ids:
            return []
        eqs = [f"<d:eq><d:prop><oc:fileid/></d:prop><d:literal>{i}</d:literal></d:eq>" for i in ids]
        cond = eqs[0] if len(eqs) == 1 else f"<d:or>{''.join(eqs)}</d:or>"
        return self._search([cond], "/", limit=len(ids), offset=0, order="")

    def _search(self, conds: builtins.list[str], scope: str, *, limit: int, offset: int,
                order: str) -> builtins.list[RemoteItem]:
        limit = max(1, min(int(limit), MAX_SEARCH_LIMIT))
        offset = max(0, int(offset))
        if not conds:
            where = "<d:where><d:like><d:prop><d:displayname/></d:prop><d:literal>%</d:literal></d:like></d:where>"
        elif len(conds) == 1:
            where = f"<d:where>{conds[0]}</d:where>"
        else:
            where = f"<d:where><d:and>{''.join(conds)}</d:and></d:where>"
        first = (f'<sd:firstresult xmlns:sd="https://github.com/icewind1991/SearchDAV/ns">{offset}</sd:firstresult>'
                 if offset else "")
        href = "/files" + paths.encode(self._user_id()) + (paths.encode(scope) if scope != "/" else "")
        body = (f'<?xml version="1.0" encoding="UTF-8"?><d:searchrequest {_NS}><d:basicsearch>'
                f"<d:select><d:prop>{_PROPS}</d:prop></d:select>"
                f"<d:from><d:scope><d:href>{escape(href)}</d:href><d:depth>infinity</d:depth></d:scope></d:from>"
                f"{where}{order}<d:limit><d:nresults>{limit}</d:nresults>{first}</d:limit>"
                "</d:basicsearch></d:searchrequest>")
        try:
            # Nextcloud rejects impossible queries with a 500 (recordings #51, #59): not worth retrying.
            resp = self._t.request("SEARCH", "/remote.php/dav/", source=SOURCE, path=scope, dav=True,
                                   headers={"Content-Type": "text/xml; charset=utf-8"},
                                   content=body.encode(), ok=(207,), no_retry=(500,))
        except NextcloudError as err:
            if err.status in (404, 500) and "only supported on directories" in (err.detail or ""):
                raise NextcloudError(
                    ErrorCode.NOT_FOUND, f"The search folder (path {scope}) does not exist or is not a folder. "
                    "Search from '/' or confirm the folder with files_search; do not guess variants.",
                    status=err.status, path=scope) from None
            raise
        return self._items(resp.content, scope)[:limit]

    def find_by_id(self, file_id: int) -> RemoteItem:
        """The item with this fileId (SEARCH oc:fileid eq); NextcloudError not_found when absent."""
        cond = f"<d:eq><d:prop><oc:fileid/></d:prop><d:literal>{int(file_id)}</d:literal></d:eq>"
        found = self._search([cond], "/", limit=1, offset=0, order="<d:orderby/>")
        if not found:
            raise NextcloudError(
                ErrorCode.NOT_FOUND, f"No file or folder has fileId {int(file_id)} in this account. "
                "Find it with files_search; do not guess ids.", status=404)
        return found[0]

    def download(self, path: str, dest: BinaryIO, *, max_bytes: int | None = None) -> int:
        """Streamed GET into `dest`; returns the byte count. Over max_bytes -> kind "too_large", rest unread."""
        norm = paths.normalize(path)
        written = 0
        deadline = time.monotonic() + self._t.total_timeout   # the body counts against the call's deadline
        resp = self._dav("GET", norm, stream=True)
        try:
            length = resp.headers.get("content-length")
            if max_bytes is not None and length and length.isdigit() and int(length) > max_bytes:
                raise error_for(SOURCE, None, condition="too_large", path=norm)
            for chunk in resp.iter_bytes(65536):
                written += len(chunk)
                if max_bytes is not None and written > max_bytes:
                    raise error_for(SOURCE, None, condition="too_large", path=norm)
                if time.monotonic() > deadline:
                    raise error_for(SOURCE, None, condition="timeout", path=norm)
                dest.write(chunk)
        except httpx.TimeoutException:
            raise error_for(SOURCE, None, condition="timeout", path=norm) from None
        except httpx.HTTPError:   # the connection broke mid-body
            raise error_for(SOURCE, None, condition="network", path=norm) from None
        finally:
            resp.close()
        return written

    def read(self, path: str, *, max_bytes: int | None = None,
             byte_range: tuple[int, int | None] | None = None) -> bytes:
        """GET the bytes (optionally a byte range, inclusive end like HTTP) into memory."""
        norm = paths.normalize(path)
        if byte_range is None:
            buf = io.BytesIO()
            self.download(norm, buf, max_bytes=max_bytes)
            return buf.getvalue()
        start, end = byte_range
        if start < 0 or (end is not None and end < start):
            raise error_for(SOURCE, None, condition="range", path=norm)
        if max_bytes is not None:
            cap = start + max_bytes - 1
            end = cap if end is None else min(end, cap)
        rng = f"bytes={start}-{'' if end is None else end}"
        resp = self._dav("GET", norm, headers={"Range": rng}, ok=(200, 206))
        data = resp.content
        if resp.status_code == 200:   # the server ignored the range: cut it here
            data = data[start:None if end is None else end + 1]
        return data

    # -- writing -------------------------------------------------------------------------
    def put(self, path: str, data: bytes, *, etag: str | None = None, create_only: bool = False,
            mtime: float | None = None) -> RemoteItem:
        """Upload `data`. etag -> If-Match (412 when stale); create_only -> If-None-Match: * ."""
        norm = paths.normalize(path)
        if norm == "/":
            raise error_for(SOURCE, None, condition="is_folder", path=norm)
        headers = {"Content-Type": "application/octet-stream"}
        if etag:
            tag = entity_tag(etag)
            if tag is None:   # never copy a list or '*' into If-Match: it could overwrite any version
                raise NextcloudError(ErrorCode.BAD_REQUEST, "The etag is not one entity tag (a list, '*' or characters "
                                     "an etag cannot hold). Re-read the file for its etag.",
                                     path=norm)
            headers["If-Match"] = tag
        if create_only:
            headers["If-None-Match"] = "*"
        if mtime is not None:
            headers["X-OC-Mtime"] = str(int(mtime))
        try:
            resp = self._dav("PUT", norm, headers=headers, content=data,
                                   conditions={404: "missing_parent", 409: "missing_parent"})
        except NextcloudError as err:
            if err.status == 409 and "non-files" in (err.detail or ""):
                raise error_for(SOURCE, 409, condition="is_folder", path=norm) from None
            if err.status == 412 and create_only and not etag:
                raise error_for(SOURCE, 412, condition="exists", path=norm) from None
            raise
        new_etag = (resp.headers.get("oc-etag") or resp.headers.get("etag") or "").strip('"')
        file_id = parse_fileid(resp.headers.get("oc-fileid"))
        if not new_etag or file_id is None:
            return self.stat(norm)
        return RemoteItem(path=norm, name=paths.name_of(norm), file_id=file_id, etag=new_etag,
                          size=len(data), mtime=float(int(mtime)) if mtime is not None else float(int(time.time())),
                          mime=mimetypes.guess_type(norm)[0] or "application/octet-stream", is_dir=False,
                          permissions=resp.headers.get("x-nc-permissions", ""))

    def mkcol(self, path: str) -> None:
        """Create a folder (its parent must exist)."""
        norm = paths.normalize(path)
        self._dav("MKCOL", norm, conditions={409: "missing_parent", 405: "exists"})

    def _transfer(self, method: str, src: str, dst: str, overwrite: bool) -> None:
        s, d = paths.normalize(src), paths.normalize(dst)
        if s == "/" or d == "/":
            raise error_for(SOURCE, None, condition="bad_path", path="/")
        def send() -> None:   # the Destination is rebuilt if the user id had to be corrected
            self._t.request(method, self.url(s), source=SOURCE, path=s, dav=True,
                            headers={"Destination": self._t.base_url + self.url(d),
                                     "Overwrite": "T" if overwrite else "F"},
                            conditions={409: "missing_parent", 412: "exists"})
        try:
            try:
                send()
            except NextcloudError as err:
                if err.status in (404, 409) and self._recheck_user is not None and self._recheck_user():
                    send()
                else:
                    raise
        except NextcloudError as err:
            if err.code is ErrorCode.MISSING_PARENT:   # the destination's folder is missing, not the source
                raise error_for(SOURCE, err.status, condition="missing_parent",
                                path=d.rsplit("/", 1)[0] or "/") from None
            raise

    def move(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Rename or move; the fileId is kept. Without overwrite an existing destination is an error."""
        self._transfer("MOVE", src, dst, overwrite)

    def copy(self, src: str, dst: str, *, overwrite: bool = False) -> None:
        """Copy a file or a whole folder."""
        self._transfer("COPY", src, dst, overwrite)

    def delete(self, path: str) -> None:
        """Delete (to the trash bin); folders recursively."""
        norm = paths.normalize(path)
        if norm == "/":
            raise error_for(SOURCE, None, condition="bad_path", path="/")
        self._dav("DELETE", norm)

    # -- the trash bin and versions (the Deleted files and Versions apps) ----------------
    def _dav_root(self, area: str) -> str:
        """'/remote.php/dav/trashbin/<user>' or '/remote.php/dav/versions/<user>'."""
        return f"/remote.php/dav/{area}" + paths.encode(self._user_id())

    def trash(self, *, depth: str = "1") -> builtins.list["TrashItem"]:
        """The trash bin (PROPFIND on trashbin/<user>/trash), newest deletion first; depth "0" only checks it exists."""
        base = self._dav_root("trashbin") + "/trash/"
        resp = self._t.request("PROPFIND", base, source=SOURCE, path="trash bin", dav=True,
                               headers={"Depth": depth, "Content-Type": "application/xml; charset=utf-8"},
                               content=_TRASH_BODY, ok=(207,))
        out = []
        for r in parse_multistatus(resp.content, path="trash bin"):
            entry = paths.href_to_path(r.href, base.rstrip("/"))
            if not entry or entry == "/":
                continue
            rtype = r.props.get(q(DAV, "resourcetype"))
            out.append(TrashItem(entry=entry.lstrip("/"), name=r.text(NC, "trashbin-filename") or "",
                                 original_path="/" + (r.text(NC, "trashbin-original-location") or "").lstrip("/"),
                                 deleted_at=_int(r.text(NC, "trashbin-deletion-time")) or 0,
                                 file_id=_int(r.text(OC, "fileid")), size=_int(r.text(DAV, "getcontentlength")) or 0,
                                 is_dir=rtype is not None and rtype.find(q(DAV, "collection")) is not None))
        return sorted(out, key=lambda t: -t.deleted_at)

    def restore_trash(self, item: "TrashItem") -> None:
        """MOVE the entry to trashbin/<user>/restore/: Nextcloud puts it back where it was deleted from."""
        root = self._dav_root("trashbin")
        src = root + "/trash" + paths.encode("/" + item.entry)
        dst = root + "/restore" + paths.encode("/" + item.entry)
        # No "Overwrite: F": Nextcloud 34 answers it with 412 here (restore/<entry> counts as existing).
        self._t.request("MOVE", src, source=SOURCE, path=item.original_path, dav=True,
                        headers={"Destination": self._t.base_url + dst})

    def versions(self, file_id: int) -> builtins.list["Version"]:
        """The file's versions, newest first (PROPFIND Depth 1 on versions/<user>/versions/<fileid>)."""
        base = self._dav_root("versions") + f"/versions/{int(file_id)}"
        resp = self._t.request("PROPFIND", base + "/", source=SOURCE, path=f"versions of {int(file_id)}", dav=True,
                               headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                               content=_VERSIONS_BODY, ok=(207,))
        out = []
        for r in parse_multistatus(resp.content, path="versions"):
            vid = paths.href_to_path(r.href, base)
            if not vid or vid == "/":
                continue
            out.append(Version(id=vid.lstrip("/"), size=_int(r.text(DAV, "getcontentlength")) or 0,
                               mtime=_mtime(r.text(DAV, "getlastmodified")), author=r.text(NC, "version-author") or "",
                               label=r.text(NC, "version-label") or ""))
        return sorted(out, key=lambda v: -v.mtime)

    def restore_version(self, file_id: int, version_id: str) -> None:
        """MOVE the version to versions/<user>/restore/target: it becomes the file's content (the current one is kept
        as a version)."""
        root = self._dav_root("versions")
        src = root + f"/versions/{int(file_id)}" + paths.encode("/" + version_id)
        self._t.request("MOVE", src, source=SOURCE, path=f"version {version_id}", dav=True,
                        headers={"Destination": self._t.base_url + root + "/restore/target"})


# -- what the trash bin and versions methods of WebDAV read and return ---------------------------------------
_TRASH_BODY = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_NS}><d:prop><nc:trashbin-filename/>'
               "<nc:trashbin-original-location/><nc:trashbin-deletion-time/><oc:fileid/><d:getcontentlength/>"
               "<d:resourcetype/></d:prop></d:propfind>").encode()
_VERSIONS_BODY = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_NS}><d:prop><d:getcontentlength/>'
                  "<d:getlastmodified/><nc:version-label/><nc:version-author/></d:prop></d:propfind>").encode()


@dataclass(frozen=True)
class TrashItem:
    """A deleted file or folder: `entry` is its name in the trash ('a.txt.d1796000220'), path where it was."""
    entry: str
    name: str
    original_path: str
    deleted_at: int
    file_id: int | None
    size: int
    is_dir: bool


@dataclass(frozen=True)
class Version:
    """An earlier (or the current) version of a file: `id` is what restore_version takes."""
    id: str
    size: int
    mtime: float
    author: str = ""
    label: str = ""
