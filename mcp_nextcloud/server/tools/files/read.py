"""files_read: stat first, then the cached text or one download + extraction, then find / outline / slice.

The order matters: arguments are checked before any I/O, and the PROPFIND
comes before any GET, so a file over the size cap is refused from its size
alone and never downloaded. Extracted text is cached in the index by
(fileId, etag), and the last few Documents stay in memory, so a second read
of the same version costs one PROPFIND and a slice; a version the reader
refused is recorded too, so asking again costs no download either.
"""
from __future__ import annotations

from typing import Any

from mcp.types import CallToolResult

from mcp_nextcloud.indexer.models import RecordStatus
from mcp_nextcloud.indexer.remote.digest import content_digest
from mcp_nextcloud.reader.document import ReaderCode
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.envelope import envelope
from mcp_nextcloud.server.errors import from_reader, misuse, refused
from mcp_nextcloud.server.tools.files.resolve import file_ref, resolve

MAX_FIND_LIMIT = 100   # passages per answer: more would blow the context budget; nextOffset pages on
IMAGE_KINDS = {"image"}


def read(ctx: ServerContext, *, path: str | None, file_id: int | None, offset: int, limit: int | None,
         find: str | None, fmt: str) -> CallToolResult:
    """The files_read tool: see the module docstring for the order of operations."""
    if find is not None and not find.strip():
        raise misuse("find is empty: give the words or phrase to look for, or omit find to read the text.",
                     status=ToolStatus.BAD_FIND)
    item = resolve(ctx, path, file_id)
    if item.is_dir:
        raise misuse(f"{item.path} is a folder. List it with files_search(path={item.path!r}) and read one of "
                     "its files.", status=ToolStatus.IS_FOLDER)
    doc = load_document(ctx, item)
    base = {**file_ref(item), "etag": item.etag, "kind": doc.kind, "warnings": list(doc.warnings) or None,
            "ocr": doc.structure.get("ocr") if isinstance(doc.structure, dict) else None}
    if doc.image is not None and fmt == "text" and find is None:
        payload = {**base, "mime": doc.image.mime, "width": doc.image.width, "height": doc.image.height,
                   "truncated": False, "hint": "The image follows as an image block."}
        return envelope(payload, image=(doc.image.data, doc.image.mime))
    if fmt == "outline":
        return envelope(_outline(doc, base, offset, find))
    if find is not None:
        return envelope({**base, **_find(doc, find, offset, min(limit or 20, MAX_FIND_LIMIT))})
    return envelope({**base, **_slice(doc, offset, limit)})


def _outline(doc: Any, base: dict[str, Any], offset: int, section: str | None) -> dict[str, Any]:
    """The outline, the whole answer within the outline budget; the branch holding `offset` (or the section
    titled `section`, else holding its first match in the text) gets the budget first."""
    from mcp_nextcloud import reader
    from mcp_nextcloud.reader.outline import OUTLINE_BUDGET
    from mcp_nextcloud.reader.outline_budget import json_bytes

    if offset > len(doc.text):
        raise misuse(f"offset {offset} is past the end of the text ({len(doc.text)} characters). Use an entry's "
                     "offset from the outline to expand its section.",
                     status=ToolStatus.OFFSET_PAST_END)
    room = OUTLINE_BUDGET - json_bytes(base)
    try:
        return {**base, **reader.outline(doc, offset=offset or None, section=section, budget=room).to_dict()}
    except ValueError as exc:
        raise misuse(f"{exc}.", status=ToolStatus.BAD_FIND) from None


def _slice(doc: Any, offset: int, limit: int | None) -> dict[str, Any]:
    from mcp_nextcloud import reader

    total = len(doc.text)
    if offset > total or (offset == total and total > 0):
        raise misuse(f"offset {offset} is past the end of the text ({total} characters). Use an offset below "
                     f"{total}, or find to jump to a passage.", status=ToolStatus.OFFSET_PAST_END)
    return reader.page(doc, offset, limit or 8_000).to_dict()


def _find(doc: Any, query: str, offset: int, limit: int) -> dict[str, Any]:
    """The best `limit` matches (offset 0), or those at or after `offset` in text order, with nextOffset."""
    from mcp_nextcloud import reader

    if offset > len(doc.text):
        raise misuse(f"offset {offset} is past the end of the text ({len(doc.text)} characters). "
                     "Use offset 0 to find from the start.", status=ToolStatus.OFFSET_PAST_END)
    try:
        res = reader.find(doc, query, limit=limit, ranked=offset == 0, start=offset)
    except ValueError as exc:
        raise misuse(f"find: {exc}.", status=ToolStatus.BAD_FIND) from None
    out: dict[str, Any] = {**res.to_dict(), "hint": None}
    if res.truncated and res.matches:
        last = max(res.matches, key=lambda m: m.offset)
        nxt = out["nextOffset"] = last.offset + max(1, last.length)
        order = ("whole words in the text first, then parts of words ('kind'), then table-of-contents and "
                 "index lines ('in'); " if offset == 0 else "")
        where = f"from offset {offset}" if offset else "in all"
        out["hint"] = (f"{res.total} matches {where}; {order}for the ones after these in text order call "
                       f"again with offset={nxt}, or read around one with offset=its offset")
    elif not res.matches:
        out["hint"] = res.hint or (f"no match for {query!r} after offset {offset}" if offset else None)
    else:
        out["hint"] = "read around a match with files_read(offset=its offset)"
    return out


def load_document(ctx: ServerContext, item: Any, *, best_effort: bool = False) -> Any:
    """The Document for this version of the file: memory, then the index cache, then download + extract.

    best_effort: download with the quick client (one bounded attempt), for reads nobody asked for.
    """
    key = (item.file_id if item.file_id is not None else item.path, item.etag)
    doc = ctx.recall_document(key)
    if doc is not None:
        return doc
    rec = _cached_record(ctx, item)
    if rec is not None:
        doc = ctx.files_index().cached_document(rec)
        if doc is not None and doc.kind not in IMAGE_KINDS:
            ctx.remember_document(key, doc)
            return doc
    # A failed *download* (network) is worth another try; a failed extraction of the same version is not.
    if (rec is not None and rec.status in (RecordStatus.FAILED, RecordStatus.UNSUPPORTED, RecordStatus.TOO_LARGE)
            and rec.reason and rec.etag == item.etag and not rec.download_failed):
        # This exact version failed before: say why instead of downloading it again.
        raise refused(f"{item.path} cannot be read: {rec.reason}", status=ReaderCode(rec.status))   # its record
    cap = ctx.call_settings.max_read_bytes
    if item.size is not None and int(item.size) > cap:
        raise refused(
            f"{item.path} is {int(item.size) / 1048576:.1f} MB, over the {cap / 1048576:.0f} MB read cap, so it "
            "was not downloaded. Use files_grep to find passages in it if it is indexed, or ask the user for a "
            "smaller export.", status=ToolStatus.TOO_LARGE)
    client = ctx.quick_client() if best_effort else ctx.client()
    data = client.webdav.read(item.path, max_bytes=cap)
    extracted = _extract(ctx, data, item)
    doc = extracted.document
    if doc.kind not in IMAGE_KINDS:
        # The digest of what this read returned: files_write compares it before replacing this version.
        _store(ctx, item, doc, extracted.prepared, digest=content_digest(data))
    # An image too: the index keeps its text (OCR) but not its pixels, so without this every read of one
    # downloaded it and ran the OCR again.
    ctx.remember_document(key, doc)
    return doc


def _cached_record(ctx: ServerContext, item: Any) -> Any:
    """The index record of exactly this version (same etag), or None."""
    try:
        rec = (ctx.files_index().get_file(file_id=item.file_id) if item.file_id is not None else None) \
            or ctx.files_index().get_file(path=item.path)
    except Exception:  # a damaged or locked index must not stop a read: fall back to the download
        return None
    if rec is None or (item.etag and rec.etag != item.etag):
        return None
    return rec


def _extract(ctx: ServerContext, data: bytes, item: Any) -> Any:
    """Extract in a capped worker process (time and memory caps); errors become tool failures.

    The worker also prepares the index rows, so caching the text costs only
    INSERTs. A file the reader refuses is recorded in the index for this
    version, so asking again answers from the record instead of downloading it.
    """
    from mcp_nextcloud.reader import ReaderError

    try:
        return ctx.extractor().extract(data, item.name, item.mime)
    except ReaderError as exc:
        _remember(ctx, item, failure=exc)
        raise from_reader(exc) from None


def _store(ctx: ServerContext, item: Any, doc: Any, prepared: Any = None, *, digest: str | None = None) -> None:
    """Cache the text in the index so the next read (and grep) need no download. Best effort."""
    _remember(ctx, item, doc=doc, prepared=prepared, digest=digest)


def _remember(ctx: ServerContext, item: Any, *, doc: Any = None, prepared: Any = None, failure: Any = None,
              digest: str | None = None) -> None:
    """Record this version in the index with its text or its failure (and its bytes' digest). Best effort."""
    from mcp_nextcloud.indexer.models import FileMeta
    from mcp_nextcloud.indexer.jobs.pool import status_for

    from mcp_nextcloud.indexer.store.prepare import prepare

    meta = FileMeta(path=item.path, source="remote", file_id=item.file_id, etag=item.etag,
                    size=int(item.size or 0), mtime=float(item.mtime or 0.0), mime=item.mime)
    if doc is not None and prepared is None:
        prepared = prepare(doc)   # here, not on the writer thread
    # A cap that stopped it (time, memory) may not stop it next time: only a real verdict is kept.
    keep_failure = failure is not None and not failure.code.is_fault

    def write(tx: Any) -> None:
        rec, _ = tx.upsert(meta)
        if digest is not None:
            tx.set_hash(rec.id, digest)
        if prepared is not None:
            tx.store(rec.id, prepared)
        elif keep_failure:
            tx.record_failure(rec.id, status_for(failure), str(failure))

    import logging

    from mcp_nextcloud.indexer.errors import IndexUnusable, index_unusable, is_storage_error

    try:
        ctx.files_index().writer().call(write)
    except IndexUnusable:   # said by the instructions and the tools that search: the read itself answered
        pass
    except Exception as exc:  # a cache write failing (disk full, locked) costs a re-download later, nothing more
        if not is_storage_error(exc):
            logging.getLogger(__name__).warning("could not record a file read in the index", exc_info=True)
        else:   # the index's own fault: its cause and step in one line, no traceback
            problem = index_unusable(ctx.files_index().path, exc).line()
            logging.getLogger(__name__).warning("could not record a file read in the index: %s", problem)
