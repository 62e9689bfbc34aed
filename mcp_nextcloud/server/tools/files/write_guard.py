"""What files_write checks before it replaces a file: one valid entity tag, text that stays text, and
content the caller read.

The reader recognises a PDF by its bytes whatever it is called
(`/Documents/contract`, `budget.xlsx.bak`, `manual.pdf~`) and hands out an
etag; a write with that etag would replace the document with a few bytes of
text. So the existing content's kind is judged from what is already known,
cheapest first - the extension, the in-memory document of that version, the
index's record of that version, the PROPFIND content type - and, when none of
them tells, from the first bytes (one ranged GET of 8 KiB).

An etag is not enough to know the caller read what is there: Nextcloud keeps
a file's etag when an overwrite within the same second leaves the size
unchanged, so If-Match accepts a write over another client's edit. So every
read through this server records the digest of the bytes it returned for
(fileId, etag) (files_read, the sync, files_write's own content), and before
a replacement the current bytes are fetched and compared with it (or, for an
index that predates digests, their text with the cached text of that read).
An etag no read through this server returned names content nobody here saw:
the write is refused until files_read has read it. A gap remains between the
comparison and the PUT (milliseconds), which If-Match cannot close either.
"""
from __future__ import annotations

from typing import Any

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError, NotFoundError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import ToolFailure, from_nextcloud, misuse, refused

BINARY_EXTENSIONS = frozenset("""
pdf doc docx docm dot dotx xls xlsx xlsm xlsb ppt pptx pptm odt ods odp odg odf ott ots otp epub
png jpg jpeg gif webp bmp tif tiff heic heif ico psd svgz raw cr2 nef
zip gz tgz bz2 xz 7z rar tar zst jar apk exe dll so dylib bin iso dmg msi deb rpm
mp3 mp4 m4a m4v mov avi mkv webm wav flac ogg opus aac wma wmv
woff woff2 ttf otf eot sqlite db mdb accdb pages numbers key class pyc o a
""".split())
# Content types Nextcloud gives text it can name; anything else (octet-stream included) says nothing.
TEXT_MIMES = ("text/", "application/json", "application/xml", "application/javascript", "application/x-yaml",
              "application/yaml", "application/toml", "application/x-sh", "application/sql")
# Content types that are certainly not text (the rest of application/* is left to the bytes).
BINARY_MIME_PREFIXES = ("image/", "audio/", "video/", "font/", "application/pdf", "application/zip",
                        "application/vnd.", "application/msword", "application/x-7z", "application/gzip",
                        "application/x-tar", "application/epub")
HEAD_BYTES = 8192


def entity_tag_or_none(etag: str | None) -> str | None:
    """The etag argument as one entity tag, None when absent; a misuse error when it is not exactly one."""
    from mcp_nextcloud.nextcloud.webdav import entity_tag

    if etag is None or not etag.strip():
        return None
    tag = entity_tag(etag)
    if tag is None:
        raise misuse("etag must be exactly one entity tag, as files_read returned it (e.g. 5f1c2a or \"5f1c2a\"); "
                     "a list, '*', spaces, non-ASCII or control characters are not accepted. Re-read the file "
                     "with files_read and pass its etag.", status=ToolStatus.BAD_ETAG)
    return tag


def refuse_binary_name(target: str) -> None:
    """Refuse a target whose extension names a binary format (no request needed)."""
    name = target.rsplit("/", 1)[-1]
    ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    if ext in BINARY_EXTENSIONS:
        raise refused(f"{target} is a .{ext} file: files_write writes text files only (e.g. .md, .txt, .csv, "
                      ".json) and would destroy this format. Write a text file next to it instead.",
                      status=ToolStatus.BINARY_FILE)


def refuse_binary_content(ctx: ServerContext, target: str, item: Any | None) -> None:
    """Refuse to replace an existing file whose content is not text; `item` is its stat (None: stat here).

    A missing file is fine (the write creates it, or its If-Match fails).
    """
    if item is None:
        item = stat_or_none(ctx, target)
        if item is None:
            return
    if getattr(item, "is_dir", False) or not int(getattr(item, "size", 0) or 0):
        return  # a folder is refused by the server; an empty file holds no format to destroy
    kind = _known_kind(ctx, item)
    if kind is None:
        kind = _sniffed_kind(ctx, item)
    if kind not in _TEXT_KINDS:
        what = {"image": "an image", "binary": "binary data"}.get(kind, f"{kind.upper()} content")
        raise refused(f"{item.path} holds {what}, not text (judged by its content, whatever its name): "
                      "files_write would replace it with text and destroy it. Write a text file next to it "
                      "instead.", status=ToolStatus.BINARY_FILE)


_TEXT_KINDS = frozenset({"text", "markdown", "csv", "json", "html"})


def refuse_unread_change(ctx: ServerContext, item: Any | None, tag: str) -> None:
    """Refuse to replace `item` unless what is there now is what the read that returned `tag` returned.

    `item` is the file's stat now (None: no file; the PUT's If-Match then fails). Another etag now is left
    to the server's 412 (which carries the re-read instruction).
    """
    if item is None or getattr(item, "is_dir", False) or (item.etag or "").strip('"') != tag.strip('"'):
        return
    key = (item.file_id if item.file_id is not None else item.path, item.etag)
    rec = _version_record(ctx, item)
    digest = getattr(rec, "content_hash", None) if rec is not None else None
    read = ctx.recall_document(key) if digest is None else None
    if digest is None and read is None and rec is not None:
        read = _cached_text(ctx, rec)
    if digest is None and read is None:
        raise refused(f"{item.path}: no read through this server returned this etag, so what it names cannot be "
                      "checked (Nextcloud can keep an etag for changed content). Read the file with files_read, "
                      "then write with the etag it returns.", status=ToolStatus.ETAG_NOT_READ)
    from mcp_nextcloud.indexer.remote.digest import content_digest

    data = _current_bytes(ctx, item)
    if digest is not None:
        same = content_digest(data) == digest
    else:
        same = read is not None and _text_of(data, item) == read.text
    if same:
        return
    _remember_current(ctx, item, data, key)
    raise refused(f"{item.path} changed since it was read, yet Nextcloud still gives it the same etag (another "
                  f"client overwrote it within the same second{_size_note(rec, len(data))}): writing would destroy "
                  "that edit. Re-read it with files_read (it now returns the current content and an etag for it), "
                  "merge your change, then write.", status=ToolStatus.CHANGED_UNDER_SAME_ETAG)


def _size_note(rec: Any, now: int) -> str:
    """How the size went, as far as the read's record knows it (Nextcloud 34 keeps the etag either way)."""
    before = getattr(rec, "size", None) if rec else None
    if not isinstance(before, int):
        return ""
    return ", keeping the size" if before == now else f"; its size went from {before} to {now} bytes"


def _version_record(ctx: ServerContext, item: Any) -> Any:
    """The index record of exactly this version (same fileId or path, same etag), or None."""
    try:
        rec = (ctx.files_index().get_file(file_id=item.file_id) if item.file_id is not None else None) \
            or ctx.files_index().get_file(path=item.path)
    except Exception:  # noqa: BLE001 - an unreadable index knows no read
        return None
    return rec if rec is not None and rec.etag == item.etag else None


def _cached_text(ctx: ServerContext, rec: Any) -> Any:
    try:
        return ctx.files_index().cached_document(rec)
    except Exception:  # noqa: BLE001 - no cached text: the read is unknown
        return None


def _current_bytes(ctx: ServerContext, item: Any) -> bytes:
    """What the file holds now (within the read cap: a text file over it was not read through us either)."""
    try:
        return ctx.client().webdav.read(item.path, max_bytes=ctx.call_settings.max_read_bytes)
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


def _text_of(data: bytes, item: Any) -> str | None:
    from mcp_nextcloud import reader

    try:
        return str(reader.extract(data, item.name or item.path.rsplit("/", 1)[-1], item.mime).text)
    except Exception:  # noqa: BLE001 - text that no longer extracts is not the text that was read
        return None


def _remember_current(ctx: ServerContext, item: Any, data: bytes, key: tuple[Any, str]) -> None:
    """Record what this etag names now, so the files_read the refusal asks for returns it (not the old text)."""
    from mcp_nextcloud.indexer.remote.digest import content_digest
    from mcp_nextcloud.server.tools.files.read import _store

    ctx.forget_document(key)
    doc = None
    try:
        from mcp_nextcloud import reader

        doc = reader.extract(data, item.name or item.path.rsplit("/", 1)[-1], item.mime)
    except Exception:  # noqa: BLE001 - the digest alone still refuses the next stale write
        pass
    _store(ctx, item, doc, digest=content_digest(data))


def stat_or_none(ctx: ServerContext, target: str) -> Any | None:
    """The file's stat now, None when nothing is there."""
    try:
        return ctx.client().webdav.stat(target)
    except NotFoundError:
        return None
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None


def _known_kind(ctx: ServerContext, item: Any) -> str | None:
    """The kind of this version from what is known without a download, or None."""
    key = (item.file_id if item.file_id is not None else item.path, item.etag)
    doc = ctx.recall_document(key)
    if doc is not None:
        return str(doc.kind)
    kind = _indexed_kind(ctx, item)
    if kind is not None:
        return kind
    mime = (item.mime or "").split(";")[0].strip().lower()
    if mime.startswith(BINARY_MIME_PREFIXES):
        return "binary"
    return None  # a text content type comes from the name alone: the bytes still have to say it


def _indexed_kind(ctx: ServerContext, item: Any) -> str | None:
    """The kind the index recorded for exactly this version (same etag), or None."""
    try:
        rec = (ctx.files_index().get_file(file_id=item.file_id) if item.file_id is not None else None) \
            or ctx.files_index().get_file(path=item.path)
        if rec is None or rec.etag != item.etag:
            return None
        meta = ctx.files_index().doc_meta(rec.id)
    except Exception:  # a damaged or busy index only means the bytes decide
        return None
    kind = (meta or {}).get("kind")
    return str(kind) if kind else None


def _sniffed_kind(ctx: ServerContext, item: Any) -> str:
    """The kind the first bytes show (one ranged GET): a text kind, a document kind, or "binary"."""
    from mcp_nextcloud.reader import ReaderError
    from mcp_nextcloud.reader.extract import detect

    try:
        head = ctx.client().webdav.read(item.path, byte_range=(0, HEAD_BYTES - 1))
    except NextcloudError as exc:
        raise from_nextcloud(exc) from None
    try:
        return detect(head, item.name or item.path.rsplit("/", 1)[-1], None)
    except ReaderError:
        return "binary"


# -- folders that do not exist yet (files_write and files_move create them with createFolders=true) ---------

def missing_folder(ctx: ServerContext, target: str, tool: str) -> ToolFailure:
    """The refusal for a `target` whose folder does not exist, naming the highest missing folder (found by
    stat-ing upwards) and the argument that creates it."""
    parent = target.rstrip("/").rsplit("/", 1)[0] or "/"
    missing = parent
    while missing != "/":
        above = missing.rsplit("/", 1)[0] or "/"
        if above == "/" or stat_or_none(ctx, above) is not None:
            break
        missing = above
    return misuse(f"The folder {missing} does not exist, so nothing can go to {target}. Call {tool} again with "
                  f"createFolders=true to create {parent if parent == missing else missing + ' and the folders below'}"
                  ", or confirm the path with files_search (do not guess variants).", status=ToolStatus.MISSING_PARENT)


def make_parents(ctx: ServerContext, target: str) -> list[str]:
    """MKCOL every missing folder above `target`, top down; the folders created (an existing one is skipped)."""
    webdav = ctx.client().webdav
    parts = target.strip("/").split("/")[:-1]
    made: list[str] = []
    for i in range(1, len(parts) + 1):
        folder = "/" + "/".join(parts[:i])
        try:
            webdav.mkcol(folder)
            made.append(folder)
        except NextcloudError as exc:
            if exc.code is not ErrorCode.EXISTS:
                raise from_nextcloud(exc) from None
    return made
