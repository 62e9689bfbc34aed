"""files_move, files_delete, files_restore, files_history: organising files, and undoing it.

Everything here is reversible on Nextcloud: a move keeps the fileId; a
delete (and a file replaced by a move) goes to the trash bin, which keeps
the fileId too; an overwrite keeps the previous content as a version. Each
answer says how to undo it. Every path a tool touches, source, destination
or where a restore lands, passes through `_resolve_target` (one place to
confine the tools to a folder).
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import from_nextcloud, misuse, refused
from mcp_nextcloud.server.errors import nextcloud_call as _nc
from mcp_nextcloud.server.tools.files.resolve import check_path, file_ref, forget, resolve
from mcp_nextcloud.server.tools.files.write_guard import make_parents, missing_folder, stat_or_none


def _resolve_target(ctx: ServerContext, path: str, *, write: bool = False) -> str:
    """The normalised user-relative path a file tool may touch (the one gate for source and destination).

    Under a folder jail (server/profile.py) a source outside gets a missing file's answer and a
    destination outside the one refusal that tells nothing about what is there.
    """
    from mcp_nextcloud.server import profile

    norm = check_path(path)
    return profile.writable(norm) if write else profile.require(norm)


def _iso(ts: float) -> str:
    """UTC to the second: two versions (or deletions) a second apart must not look alike."""
    return dt.datetime.fromtimestamp(ts, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _item(ctx: ServerContext, path: str | None, file_id: int | None) -> Any:
    """The file or folder named by path or fileId, checked by _resolve_target either way."""
    item = resolve(ctx, _resolve_target(ctx, path) if path else None, file_id)
    _resolve_target(ctx, item.path)
    return item


def _unindex(ctx: ServerContext, path: str, is_dir: bool) -> None:
    """Drop a path that no longer holds what the index says (the next sync adds the new place). Best effort."""
    if not is_dir:
        forget(ctx, path=path)
        return
    try:
        ctx.files_index().writer().remove_under(path, source="remote")
    except Exception:  # noqa: BLE001 - a stale hit is corrected by the next sync; files_read says so
        pass


def _reindex_move(ctx: ServerContext, before: Any, after: Any) -> None:
    """A moved file keeps its indexed text under the new path (no re-extraction); a folder waits for the sync."""
    if before.is_dir:
        _unindex(ctx, before.path, True)
        return
    try:
        from mcp_nextcloud.indexer.models import FileMeta

        rec = ctx.files_index().get_file(path=before.path)
        if rec is None or rec.source != "remote":
            return
        meta = FileMeta(path=after.path, source="remote", file_id=after.file_id, etag=after.etag,
                        size=int(after.size or 0), mtime=float(after.mtime or 0.0), mime=after.mime)
        ctx.files_index().writer().call(lambda tx: tx.move(rec.id, meta))
    except Exception:  # noqa: BLE001 - the move happened; the next sync puts the index right
        _unindex(ctx, before.path, False)


def _destination(ctx: ServerContext, item: Any, to: str) -> str:
    """`to` as the full new path: an existing folder (or a trailing /) means "into it, same name"."""
    target = _resolve_target(ctx, to, write=True)
    if target == "/" or to.strip().endswith("/"):
        return _resolve_target(ctx, target.rstrip("/") + "/" + item.name, write=True)
    there = stat_or_none(ctx, target)
    if there is not None and there.is_dir and there.file_id != item.file_id:
        return _resolve_target(ctx, target.rstrip("/") + "/" + item.name, write=True)
    return target


def move(ctx: ServerContext, *, path: str | None, file_id: int | None, to: str, copy: bool,
         replace: bool, create_folders: bool = False) -> dict[str, Any]:
    """MOVE or COPY; an existing destination is refused unless `replace` (it then goes to the trash bin); a
    missing destination folder is created with `create_folders`, else refused naming it."""
    item = _item(ctx, path, file_id)
    target = _destination(ctx, item, to)
    if target == item.path:
        raise misuse(f"{item.path} is already there: give a new name or folder in `to`.",
                     status=ToolStatus.SAME_PLACE)
    if item.is_dir and target.startswith(item.path.rstrip("/") + "/"):
        raise misuse(f"{target} is inside {item.path}: a folder cannot go into itself.",
                     status=ToolStatus.INTO_ITSELF)
    existing = stat_or_none(ctx, target)
    if existing is not None and not replace:
        raise misuse(f"{target} already exists (fileId {existing.file_id}). Choose another name in `to`, or pass "
                     "replace=true to put that one in the trash bin and take its place.",
                     status=ToolStatus.EXISTS)
    made = _transfer(ctx, item.path, target, copy=copy, overwrite=existing is not None,
                     create_folders=create_folders)
    moved = _nc(ctx.client().webdav.stat, target)
    if not copy:
        _reindex_move(ctx, item, moved)
    out: dict[str, Any] = {**file_ref(moved), "from": item.path}
    if copy:
        out["copied"] = True
        out["hint"] = "A copy has a new fileId; the original is unchanged."
    elif moved.file_id != item.file_id:
        out["warnings"] = [f"The server gave the moved item a new fileId ({moved.file_id}, was {item.file_id})."]
    if made:
        out["createdFolders"] = made
    if existing is not None:
        out["replaced"] = existing.file_id
        out["hint"] = (f"The item that was at {target} is in the trash bin: files_restore with fileId "
                       f"{existing.file_id} brings it back.")
    return out


def _transfer(ctx: ServerContext, source: str, target: str, *, copy: bool, overwrite: bool,
              create_folders: bool) -> list[str]:
    """The MOVE or COPY; the folders created for it (only with create_folders)."""
    webdav = ctx.client().webdav
    send = webdav.copy if copy else webdav.move
    try:
        send(source, target, overwrite=overwrite)
        return []
    except NextcloudError as exc:
        if exc.code is not ErrorCode.MISSING_PARENT:
            raise from_nextcloud(exc) from None
        if not create_folders:
            raise missing_folder(ctx, target, "files_move") from None
    made = make_parents(ctx, target)
    _nc(send, source, target, overwrite=overwrite)
    return made


def _require_trash(ctx: ServerContext) -> None:
    """A delete is only reversible with the trash bin app: without it, refuse rather than delete for good."""
    try:
        ctx.client().webdav.trash(depth="0")
    except NextcloudError as exc:
        if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.APP_MISSING, ErrorCode.FORBIDDEN):
            raise refused("This server has no trash bin (the Deleted files app is off), so a delete could not be "
                          "undone. Tell the user to delete it in Nextcloud if they are sure.",
                          status=ToolStatus.NO_TRASH) from None
        raise from_nextcloud(exc) from None


def delete(ctx: ServerContext, *, path: str | None, file_id: int | None) -> dict[str, Any]:
    """DELETE into the trash bin; the answer names the handle files_restore takes."""
    item = _item(ctx, path, file_id)
    if item.path == "/":
        raise misuse("The root folder cannot be deleted. Name a file or folder.", status=ToolStatus.BAD_PATH)
    _require_trash(ctx)
    _nc(ctx.client().webdav.delete, item.path)
    _unindex(ctx, item.path, item.is_dir)
    return {**file_ref(item), "trashed": True,
            "hint": f"In the trash bin: files_restore with fileId {item.file_id} (or this path) brings it back."}


def _trash_entries(ctx: ServerContext) -> list[Any]:
    """The trash bin, only entries whose original place _resolve_target accepts."""
    out = []
    for entry in _nc(ctx.client().webdav.trash):
        try:
            _resolve_target(ctx, entry.original_path)
        except Exception:  # noqa: BLE001 - outside what the tools may touch: not listed
            continue
        out.append(entry)
    return out


def _landing(ctx: ServerContext, entry: Any) -> str:
    """Where Nextcloud will put the entry back: its folder, or the root when that folder is gone (seen on 34)."""
    parent = entry.original_path.rsplit("/", 1)[0] or "/"
    there = stat_or_none(ctx, parent) if parent != "/" else None
    landing = entry.original_path if parent == "/" or (there is not None and there.is_dir) else "/" + entry.name
    return _resolve_target(ctx, landing, write=True)


def _from_trash(ctx: ServerContext, path: str | None, file_id: int | None) -> dict[str, Any]:
    wanted = _resolve_target(ctx, path) if path else None
    entries = [e for e in _trash_entries(ctx)
               if (file_id is not None and e.file_id == file_id) or (wanted and e.original_path == wanted)]
    if not entries:
        what = f"fileId {file_id}" if file_id is not None else wanted
        raise misuse(f"Nothing in the trash bin matches {what}. files_history without a file lists the trash bin; "
                     "to go back to earlier content of a file that exists, give version (from files_history).",
                     status=ToolStatus.NOT_IN_TRASH)
    entry = entries[0]   # the newest deletion
    if any(e.entry == entry.entry and e.file_id != entry.file_id for e in _trash_entries(ctx)):
        # Trash entries are named <name>.d<deletion second>: two same-named deletions in one second share it.
        raise refused(f"Two items named {entry.name} were deleted from {entry.original_path} in the same second; "
                      "the trash bin cannot tell them apart by name, so a restore could bring back the other one. "
                      "Ask the user to restore it in Nextcloud's Deleted files.",
                      status=ToolStatus.AMBIGUOUS_TRASH)
    _landing(ctx, entry)
    webdav = ctx.client().webdav
    _nc(webdav.restore_trash, entry)
    back = stat_or_none(ctx, entry.original_path)
    if back is None or (entry.file_id is not None and back.file_id != entry.file_id):
        back = _nc(webdav.find_by_id, entry.file_id) if entry.file_id is not None else back
    out: dict[str, Any] = {**file_ref(back), "restored": "trash"}
    if back is not None and back.path != entry.original_path:
        out["warnings"] = [f"Restored to {back.path}: {entry.original_path} was taken or its folder is gone."]
    return out


def _version_rows(ctx: ServerContext, item: Any) -> list[dict[str, Any]]:
    rows = []
    for v in _nc(ctx.client().webdav.versions, int(item.file_id)):
        row: dict[str, Any] = {"version": v.id, "modified": _iso(v.mtime), "size": v.size}
        if v.author:
            row["author"] = v.author
        if v.label:
            row["label"] = v.label
        if int(v.mtime) == int(item.mtime):
            row["current"] = True
        rows.append(row)
    return rows


def restore(ctx: ServerContext, *, path: str | None, file_id: int | None, version: str | None) -> dict[str, Any]:
    """Without version: bring the file back from the trash bin. With one: make that version the content."""
    if not path and file_id is None:
        raise misuse("Give path or fileId (from files_delete or files_history).",
                     status=ToolStatus.MISSING_FILE)
    if not version:
        return _from_trash(ctx, path, file_id)
    item = _item(ctx, path, file_id)
    if item.is_dir:
        raise misuse(f"{item.path} is a folder: only files have versions.", status=ToolStatus.IS_FOLDER)
    rows = _version_rows(ctx, item)
    row = next((r for r in rows if r["version"] == version.strip()), None)
    if row is None:
        known = ", ".join(r["version"] for r in rows[:10]) or "none"
        raise misuse(f"{item.path} has no version {version!r}. Its versions: {known}.",
                     status=ToolStatus.UNKNOWN_VERSION)
    if row.get("current"):
        raise misuse(f"Version {version} is the current content of {item.path}: nothing to restore.",
                     status=ToolStatus.CURRENT_VERSION)
    _nc(ctx.client().webdav.restore_version, int(item.file_id), row["version"])
    now = _nc(ctx.client().webdav.stat, item.path)
    return {**file_ref(now), "etag": now.etag, "restored": row["version"],
            "hint": "The content it replaced is kept as a version: files_history lists it."}


def history(ctx: ServerContext, *, path: str | None, file_id: int | None, limit: int) -> dict[str, Any]:
    """A file's versions, newest first; without a file, the trash bin, newest deletion first."""
    if not path and file_id is None:
        entries = _trash_entries(ctx)
        rows = [{"name": e.name, "path": e.original_path, "fileId": e.file_id, "deleted": _iso(e.deleted_at),
                 **({"folder": True} if e.is_dir else {"size": e.size})} for e in entries[:limit]]
        out: dict[str, Any] = {"trash": rows, "truncated": len(entries) > limit}
        out["hint"] = "files_restore with an entry's fileId brings it back." if rows else "The trash bin is empty."
        return out
    item = _item(ctx, path, file_id)
    if item.is_dir:
        raise misuse(f"{item.path} is a folder: only files have versions. Omit path and fileId for the trash bin.",
                     status=ToolStatus.IS_FOLDER)
    rows = _version_rows(ctx, item)
    return {**file_ref(item), "versions": rows[:limit], "truncated": len(rows) > limit,
            "hint": "files_restore with path and version makes that version the content."}
