"""files_write (text files, If-Match or create-only) and files_share_internal (shares with accounts).

Writes fail closed: without an etag a write can only create a new file, with
one it replaces exactly the version that was read (a stale etag gets the
re-read instruction from the error table). Binary content is refused, judged
by write_guard from what the file holds, not only its name: a model rewriting
a PDF or an .xlsx as text would destroy it.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

from mcp.types import CallToolResult

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError, NotFoundError
from mcp_nextcloud.server import profile
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud, misuse, refused
from mcp_nextcloud.server.tools.files.resolve import check_path, file_ref, resolve, resolve_account
from mcp_nextcloud.server.tools.files.write_guard import (entity_tag_or_none, make_parents, missing_folder,
                                                    refuse_binary_content, refuse_binary_name, refuse_unread_change,
                                                    stat_or_none)

# Nextcloud keeps the content an overwrite replaced as a version (the files_versions app).
UNDO_HINT = " The previous content is kept as a version: files_history lists it, files_restore brings it back."
PERMISSIONS = {"read": 1, "edit_file": 1 | 2, "edit_folder": 1 | 2 | 4 | 8}


def _nextcloud_call(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run a client call; a NextcloudError becomes the tool failure carrying its instruction."""
    try:
        return fn(*args, **kwargs)
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


def write(ctx: ServerContext, *, path: str | None, file_id: int | None, content: str,
          etag: str | None, create_folders: bool = False) -> CallToolResult:
    """The files_write tool: see the module docstring."""
    existing = None
    if path:
        target = profile.writable(check_path(path))
        if file_id is not None:
            existing = _same_file(ctx, target, file_id)
    elif file_id is not None:
        existing = resolve(ctx, None, file_id)
        target = existing.path
    else:
        raise misuse("Give path (to create or replace) or fileId (to replace).",
                     status=ToolStatus.MISSING_FILE)
    refuse_binary_name(target)
    tag = entity_tag_or_none(etag)
    data = content.encode("utf-8")
    if len(data) > ctx.call_settings.max_write_bytes:
        raise refused(f"content is {len(data)} bytes, over the {ctx.call_settings.max_write_bytes}-byte write cap. "
                      "Write a shorter file or split it.", status=ToolStatus.TOO_LARGE)
    mtime = None
    if tag is not None:  # replacing: only text may be replaced by text, and only what the caller read
        existing = existing or stat_or_none(ctx, target)
        refuse_binary_content(ctx, target, existing)
        refuse_unread_change(ctx, existing, tag)
        mtime = _next_mtime(existing)
    item, made = _put(ctx, target, data, tag, create_folders, mtime)
    _reindex(ctx, item, data)
    payload = {**file_ref(item), "etag": item.etag, "size": len(data), "created": tag is None,
               "createdFolders": made or None,
               "hint": "Pass this etag to files_write for the next edit of this file."
                       + (UNDO_HINT if tag is not None else "")}
    return envelope(payload)


def _same_file(ctx: ServerContext, target: str, file_id: int) -> Any:
    """The file `file_id` names, when it is the file at `target`; refused when path and fileId disagree."""
    item = resolve(ctx, None, file_id)
    if check_path(item.path) != target:
        raise misuse(f"path {target} and fileId {file_id} name different files (fileId {file_id} is {item.path}). "
                     "Give only one of them: path to write that path, or fileId to replace that file. "
                     "Nothing was written.", status=ToolStatus.PATH_ID_MISMATCH)
    return item


def _next_mtime(existing: Any | None) -> float | None:
    """The mtime a replacement is written with: a later second than the version replaced.

    Nextcloud derives the etag from mtime (seconds) and size, so a same-size write within the second of
    the last one would keep the etag, and a caller holding the old etag could overwrite this write unseen.
    """
    if existing is None:
        return None
    return float(max(int(time.time()), int(existing.mtime or 0) + 1))


def _put(ctx: ServerContext, target: str, data: bytes, etag: str | None,
         create_folders: bool, mtime: float | None = None) -> tuple[Any, list[str]]:
    """The PUT, with the failures that need a look at the path turned into instructions that lead somewhere."""
    webdav = ctx.client().webdav
    try:
        return webdav.put(target, data, etag=etag, create_only=etag is None, mtime=mtime), []
    except NextcloudError as exc:
        if exc.code is ErrorCode.MISSING_PARENT:
            if not create_folders:
                raise missing_folder(ctx, target, "files_write") from None
            made = make_parents(ctx, target)
            return _nextcloud_call(webdav.put, target, data, etag=etag, create_only=etag is None,
                                   mtime=mtime), made
        if exc.code in (ErrorCode.PRECONDITION, ErrorCode.EXISTS):
            _explain_target(ctx, target, exc)
        raise from_nextcloud(exc) from None


def _explain_target(ctx: ServerContext, target: str, exc: NextcloudError) -> None:
    """A 412 can also mean "no such file" (etag given) or "that is a folder": say which, after one stat."""
    try:
        item = ctx.client().webdav.stat(target)
    except NotFoundError:
        if exc.code is ErrorCode.PRECONDITION:
            raise misuse(f"No file exists at {target}: the etag matches nothing there (the file was deleted or "
                         "moved, or the path is wrong). To create it, call files_write without etag; to edit a moved "
                         "file, find it with files_search.",
                         status=ToolStatus.ETAG_NO_FILE) from None
        return
    except Exception:  # noqa: BLE001 - the stat is only a second look: the original instruction stands
        return
    if item.is_dir:
        raise misuse(f"{target} is a folder, not a file: files_write writes files. Give a file name inside it, "
                     f"e.g. {target.rstrip('/')}/notes.md.", status=ToolStatus.IS_FOLDER) from None


def _reindex(ctx: ServerContext, item: Any, data: bytes) -> None:
    """Index the text just written (cheap for text) so grep sees it before the next sync, and record its
    digest: the etag returned names this content, which the next files_write compares. Best effort."""
    try:
        from mcp_nextcloud import reader
        from mcp_nextcloud.indexer.remote.digest import content_digest
        from mcp_nextcloud.reader.extract import is_light
        from mcp_nextcloud.server.tools.files.read import _store

        name = item.name or item.path.rsplit("/", 1)[-1]
        if not is_light(data, name, item.mime):
            # text that is really a container: the next sync extracts it in a capped child
            _store(ctx, item, None, digest=content_digest(data))
            return
        doc = reader.extract(data, name, item.mime)
        _store(ctx, item, doc, digest=content_digest(data))
        ctx.remember_document((item.file_id if item.file_id is not None else item.path, item.etag), doc)
    except Exception:  # the write succeeded; a stale index entry is corrected by the next sync
        pass


def share(ctx: ServerContext, *, path: str | None, file_id: int | None, share_with: str,
          permissions: str) -> CallToolResult:
    """The files_share_internal tool: resolve the account, then an OCS user share (never a public link)."""
    who = share_with.strip()
    if not who:
        raise misuse("shareWith is empty: give an account id or exact display name.",
                     status=ToolStatus.BAD_SHAREE)
    item = resolve(ctx, path, file_id)
    ocs = ctx.client().ocs
    if _is_caller(ctx, who):
        raise _self_share(who)
    candidates = _nextcloud_call(ocs.sharees, who, item_type="folder" if item.is_dir else "file")
    if not any(getattr(c, "kind", "user") == "user" for c in candidates) and _is_caller(ctx, who, ask=True):
        raise _self_share(who)  # Nextcloud leaves the caller out of sharee results: a display name of theirs
    account, display = resolve_account(candidates, who)
    if _is_caller(ctx, account):
        raise _self_share(account)
    bits = PERMISSIONS["read"] if permissions == "read" else \
        PERMISSIONS["edit_folder" if item.is_dir else "edit_file"]
    result, before = _share_with(ocs, item.path, account, bits)
    granted = _level(result.permissions)
    payload: dict[str, Any] = {**file_ref(item), "shareWith": account, "displayName": display,
                               "permissions": granted}
    if before is not None and before != granted:
        payload["previousPermissions"] = before
        payload["hint"] = f"{account} already had {before} access to this item; it is now {granted}."
    if granted != permissions:
        payload["warnings"] = [f"The server kept {account}'s access at {granted}, not {permissions}."]
    return envelope(payload)


def _self_share(who: str) -> ToolFailure:
    return misuse(f"{who!r} is the caller's own account (the one this server acts as): a file cannot be shared "
                  "with its owner, who already has it. Ask the user whom to share it with.",
                  status=ToolStatus.SELF_SHARE)


def _is_caller(ctx: ServerContext, who: str, *, ask: bool = False) -> bool:
    """Whether `who` names this server's own account: login, user id, or (ask=True, one OCS call) display name."""
    low = who.strip().lower()
    mine = {str(v).lower() for v in (getattr(ctx.account, "user", None), getattr(ctx.account, "user_id", None)) if v}
    client = ctx.client()
    known = getattr(client, "_user_id", None)  # resolved already: no request
    if known:
        mine.add(str(known).lower())
    if low in mine or not ask:
        return low in mine
    try:
        me = client.ocs.current_user()
    except Exception:  # noqa: BLE001 - cannot tell: the sharee error stands
        return False
    return low in {str(me.id).lower(), str(me.display_name or "").lower()}


def _level(bits: int) -> str:
    """OCS permission bits as the tool's words: update (2) means edit, anything else read."""
    return "edit" if int(bits) & 2 else "read"


def _share_with(ocs: Any, path: str, account: str, bits: int) -> tuple[Any, str | None]:
    """The user share of `path` with `account` at the level `bits` asks for: created, or the existing one updated.

    Returns (share, previous level, or None when nothing had to change).
    Nextcloud answers a second share with the same account either with the
    existing share or with an error, depending on the version: both lead to
    one PUT when the level differs, so read can become edit (and edit read).
    A share at the asked level is left alone (its other bits, e.g. reshare, kept).
    """
    try:
        share = ocs.create_share(path, account, permissions=bits, share_type=0)
    except NextcloudError as exc:
        if exc.code not in (ErrorCode.FORBIDDEN, ErrorCode.BAD_REQUEST, ErrorCode.CONFLICT, ErrorCode.EXISTS):
            raise from_nextcloud(exc) from None
        share = _existing(ocs, path, account)
        if share is None:
            raise from_nextcloud(exc) from None
    if _level(share.permissions) == _level(bits):
        return share, None
    before = _level(share.permissions)
    updated = _nextcloud_call(ocs.update_share, share.id, permissions=bits)
    if not updated.id:  # an answer without the share object: the PUT succeeded, so it holds what was asked
        updated = dataclasses.replace(share, permissions=bits)
    return updated, before


def _existing(ocs: Any, path: str, account: str) -> Any:
    """This account's user share of `path`, if one exists (one GET)."""
    shares = _nextcloud_call(ocs.list_shares, path)
    return next((s for s in shares if s.share_type == 0 and str(s.share_with).lower() == account.lower()), None)
