"""The server's own search as files_grep's second source: names outside the index, contents via full text.

Two unified-search providers help where the local index cannot answer:

- core's `files` provider finds *names* anywhere in the account: used for the
  folders the index does not cover and while the first sync is running;
- the Full text search app's `fulltextsearch` provider finds *contents*
  through the organisation's search cluster: used whenever the server lists it.

Providers are discovered once per server process. Every call is best effort
on a read path (the context's quick client: one attempt, about a second) and
is never silent: `Outcome.sources` says which sources answered, and one that
failed or timed out is named. Every hit carries the path and fileId files_read
accepts (a full-text hit names its file by a Files-app link; the file is
stat-ed for its fileId, and a hit that cannot be stat-ed is dropped, not shown).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mcp_nextcloud.indexer.store import selection as sel
from mcp_nextcloud.server.context import ServerContext

PROVIDERS_TTL_S = 24 * 3600.0       # providers change when an admin installs an app: once per process is enough
PROVIDERS_RETRY_S = 60.0            # after a failed discovery, ask again this much later
FILES, FULLTEXT = "files", "fulltextsearch"
MAX_SERVER_HITS = 10


@dataclass
class Outcome:
    """What the server's search added: hits shaped like files_grep's, and one line per source asked."""

    hits: list[dict[str, Any]] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)


def providers(ctx: ServerContext) -> set[str]:
    """The unified-search provider ids of this server (cached; empty when the server could not say)."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    def load() -> set[str]:
        return {p.id for p in ctx.quick_client().unified.providers()}
    try:
        return set(ctx.cached("unified:providers", PROVIDERS_TTL_S, load))
    except NextcloudError:
        ctx.cached("unified:providers", PROVIDERS_RETRY_S, set)   # remember the failure briefly
        return set()


def _under(path: str | None, folder: str | None) -> bool:
    if not folder or folder == "/":
        return path is not None
    return path is not None and (path == folder or path.startswith(folder.rstrip("/") + "/"))


def _ask(ctx: ServerContext, provider: str, query: str, limit: int) -> tuple[list[Any], str | None]:
    """Entries of one provider, or none and the reason it did not answer."""
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    try:
        return ctx.quick_client().unified.search(provider, query, limit=limit).entries, None
    except NextcloudError as exc:
        if exc.status == 500:
            return [], "not available on this server"
        return [], "timed out" if exc.code is ErrorCode.TIMEOUT else f"did not answer ({exc.code.value})"


def name_hits(ctx: ServerContext, query: str, *, folder: str | None, covers: Callable[[str], bool] | None,
              limit: int = MAX_SERVER_HITS) -> Outcome:
    """Files whose *name* matches where the index does not cover them (`covers` None: it covers nothing yet)."""
    out = Outcome()
    if FILES not in providers(ctx):
        return out
    entries, failed = _ask(ctx, FILES, query, limit * 3)
    for entry in entries:
        path, file_id = entry.file_path(), entry.file_id()
        outside = covers is None or not covers(path or "/")
        if path and _under(path, folder) and outside and file_id is not None:
            out.hits.append({"path": path, "fileId": file_id, "source": "server", "match": "name",
                             "passages": []})
    out.hits = out.hits[:limit]
    out.sources.append({"source": "server names", "answered": failed is None, "hits": len(out.hits),
                        **({"note": failed} if failed else {})})
    return out


def content_hits(ctx: ServerContext, query: str, *, folder: str | None, known: set[str],
                 limit: int = MAX_SERVER_HITS) -> Outcome:
    """Files whose *contents* match in the server's full-text search, minus those the index already gave."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    out = Outcome()
    if FULLTEXT not in providers(ctx):
        return out
    entries, failed = _ask(ctx, FULLTEXT, query, limit * 2)
    dropped = 0
    for entry in entries:
        path = entry.file_path()
        if entry.provider_tag() not in (None, "files") or not _under(path, folder) or path in known:
            continue
        try:
            item = ctx.quick_client().webdav.stat(path)
        except NextcloudError:
            dropped += 1        # deleted since the cluster indexed it, or unreachable: not a hit we can open
            continue
        known.add(item.path)
        out.hits.append({"path": item.path, "fileId": item.file_id, "source": "server", "match": "content",
                         "passages": [{"passage": entry.excerpt()}] if entry.excerpt() else []})
        if len(out.hits) >= limit:
            break
    note = failed or (f"{dropped} listed file(s) no longer exist" if dropped else None)
    out.sources.append({"source": "server full text", "answered": failed is None, "hits": len(out.hits),
                        **({"note": note} if note else {})})
    return out


def augment(ctx: ServerContext, query: str, *, folder: str | None, hits: list[dict[str, Any]],
            cold: bool, report: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]] | None]:
    """files_grep's hits plus the server's, the warnings on what the index leaves out, and the sources asked.

    `cold`: the index has no complete sync yet, so it covers nothing for sure; `report`: the last sync's
    (from the call's one read of the sync marks).
    """
    chosen = sel.load(ctx.index)
    warnings = _left_out(chosen, report)
    known = {h["path"] for h in hits}
    text = content_hits(ctx, query, folder=folder, known=known)
    names = Outcome()
    if cold or not chosen.whole_account:
        names = name_hits(ctx, query, folder=folder, covers=None if cold else chosen.covers)
        names.hits = [h for h in names.hits if h["path"] not in known]
    sources = text.sources + names.sources
    if not sources:
        return hits, warnings, None
    if text.hits or names.hits:
        warnings.append("Hits with source=server come from the server's own search (match=content: its excerpt, "
                        "no offsets; match=name: the name only): files_read(path, find=...) gives passages.")
    index_source = {"source": "index", "answered": True, "hits": len(hits)}
    return hits + text.hits + names.hits, warnings, [index_source, *sources]


def _left_out(chosen: sel.Selection, last: dict[str, Any]) -> list[str]:
    """What the user chose not to index, and what the size budget stopped: no hit there is evidence."""
    out = []
    if not chosen.whole_account:
        covered = ", ".join(chosen.include) or "the whole account"
        never = f" except {', '.join(chosen.exclude)}" if chosen.exclude else ""
        out.append(f"The index covers {covered}{never} (the user's choice): contents elsewhere are not searched "
                   "here, so a missing hit there is not evidence; hits with source=server come from the server's "
                   "own search.")
    if last.get("overBudget"):
        out.append(f"The index reached its size budget: {last['overBudget']} files were not indexed (in "
                   f"{', '.join(last.get('budgetFolders') or [])}); a missing hit there is not evidence.")
    return out
