"""Turning a tool's (path | fileId) into the remote item, and a remote item into the handles tools return.

Every tool that takes a file accepts either handle; every result that names a
file carries both (`path` and `fileId`), so identifiers circulate.
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.nextcloud.errors import NextcloudError, NotFoundError
from mcp_nextcloud.server.errors import from_nextcloud, misuse, unknown_file_id


def check_path(path: str) -> str:
    """A user-relative absolute path, normalised; a malformed one is a misuse error naming the fix."""
    from mcp_nextcloud.nextcloud.paths import normalize

    if not path.strip():
        raise misuse("path is empty. Give an absolute path such as /Documents/notes.md, "
                     "or call files_search to find it.")
    try:
        return normalize(path.strip())
    except NextcloudError as exc:  # code bad_path: the table's instruction
        raise from_nextcloud(exc) from None


def resolve(ctx: ServerContext, path: str | None, file_id: int | None) -> Any:
    """Stat the file (PROPFIND Depth 0) by path or fileId and return its RemoteItem.

    Both given and disagreeing is a misuse; an unknown fileId says to call
    files_search (never a guessed variant).
    """
    if not path and file_id is None:
        raise misuse("Give either path or fileId (from files_search or files_grep).",
                     status=ToolStatus.MISSING_FILE)
    from mcp_nextcloud.server import profile

    webdav = ctx.client().webdav
    if path:
        norm = profile.require(check_path(path))   # outside the profile's folders: a missing file's answer
        try:
            item = webdav.stat(norm)
        except NotFoundError:
            if forget(ctx, path=norm):
                raise misuse(f"{norm} no longer exists on the server (deleted or moved since the index saw "
                             "it; it is dropped from search results now). Find it again with files_search "
                             "or files_grep.", status=ToolStatus.DELETED) from None
            raise
        if file_id is not None and item.file_id is not None and int(item.file_id) != int(file_id):
            raise misuse(f"path {norm} has fileId {item.file_id}, not {file_id}. Give only one of them "
                         "(the one files_search returned).", status=ToolStatus.ID_MISMATCH)
        return item
    assert file_id is not None   # checked above: no path means a fileId
    try:
        item = webdav.find_by_id(int(file_id))
    except NotFoundError:
        forget(ctx, file_id=int(file_id))
        raise unknown_file_id(int(file_id)) from None
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None
    if not profile.current().allows(item.path):   # a fileId outside the profile's folders: as an unknown one
        raise profile.as_missing(unknown_file_id(int(file_id)))
    return item


def forget(ctx: ServerContext, *, path: str | None = None, file_id: int | None = None) -> bool:
    """Drop a file the server no longer has from the index, so grep stops offering it. True if one was known.

    Deletions otherwise wait for the next full sync; a failed read is proof
    enough for this one file. Best effort: an index that cannot be written to
    only means the hit stays until that sync.
    """
    try:
        rec = ctx.files_index().get_file(path=path) if path else ctx.files_index().get_file(file_id=file_id)
        if rec is None or rec.source != "remote":
            return False
        ctx.files_index().writer().remove(rec.id)
        return True
    except Exception:
        return False


def file_ref(item: Any) -> dict[str, Any]:
    """The handles of a remote item or index record: path and fileId (camelCase, as every tool takes them)."""
    file_id = getattr(item, "file_id", None)
    return {"path": item.path, "fileId": int(file_id) if file_id is not None else None}


def file_entry(item: Any) -> dict[str, Any]:
    """A file as files_search lists it: handles plus name, MIME, size, mtime, etag."""
    entry = file_ref(item)
    is_dir = bool(getattr(item, "is_dir", False))
    entry.update({
        "name": getattr(item, "name", None) or item.path.rsplit("/", 1)[-1],
        "mime": None if is_dir else getattr(item, "mime", None),
        "size": getattr(item, "size", None),
        "modified": iso_time(getattr(item, "mtime", None)),
    })
    if is_dir:
        entry["folder"] = True
    return entry


def resolve_account(candidates: list[Any], who: str, field: str = "shareWith") -> tuple[str, str | None]:
    """The one user account meant by `who` among OCS sharees: exact id, else exact display name; else a misuse error.

    Shared by files_share_internal and deck_create_board (Deck stores an ACL for any name it is given).
    """
    users = [c for c in candidates if getattr(c, "kind", "user") == "user"]
    low = who.lower()
    exact = [c for c in users if str(c.id).lower() == low]
    if not exact:
        exact = [c for c in users if str(c.label).lower() == low]
    if len(exact) == 1:
        return str(exact[0].id), exact[0].label
    listed = "; ".join(f"{c.id} ({c.label})" for c in (exact or users)[:8])
    if not users:
        raise misuse(f"{field}: no account on this Nextcloud matches {who!r}. Ask the user for the account id.",
                     status=ToolStatus.UNKNOWN_SHAREE)
    raise misuse(f"{who!r} does not name exactly one account. Candidates: {listed}. Call again with one of these "
                 "account ids.", status=ToolStatus.AMBIGUOUS_SHAREE)
