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
from typing import Any

from server.context import ServerContext

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
    from nextcloud.errors import NextcloudError

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


def _outside(path: str, covered: list[str] | None) -> bool:
    """Whether the index does not cover `path` (None = it covers nothing yet)."""
    if covered is None:
        return True
    return not any(_under(path, c) for c in covered)


def _ask(ctx: ServerContext, provider: str, query: str, limit: int) -> tuple[list[Any], str | None]:
    """Entries of one provider, or none and the reason it did not answer."""
    from nextcloud.errors import NextcloudError

    try:
        return ctx.quick_client().unified.search(provider, query, limit=limit).entries, None
    except NextcloudError as exc:
        if exc.status == 500:
            return [], "not available on this server"
        return [], "timed out" if exc.kind == "timeout" else f"did not answer ({exc.kind})"


def name_hits(ctx: ServerContext, query: str, *, folder: str | None, covered: list[str] | None,
              limit: int = MAX_SERVER_HITS) -> Outcome:
    """Files whose *name* matches, outside the folders the index covers (all of them during a first sync)."""
    out = Outcome()
    if FILES not in providers(ctx):
        return out
    entries, failed = _ask(ctx, FILES, query, limit * 3)
    for entry in entries:
        path, file_id = entry.file_path(), entry.file_id()
        if path and _under(path, folder) and _outside(path, covered) and file_id is not None:
            out.hits.append({"path": path, "fileId": file_id, "source": "server", "match": "name",
                             "passages": []})
    out.hits = out.hits[:limit]
    out.sources.append({"source": "server names", "answered": failed is None, "hits": len(out.hits),
                        **({"note": failed} if failed else {})})
    return out


def content_hits(ctx: ServerContext, query: str, *, folder: str | None, known: set[str],
                 limit: int = MAX_SERVER_HITS) -> Outcome:
    """Files whose *contents* match in the server's full-text search, minus those the index already gave."""
    from nextcloud.errors import NextcloudError

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
                         "passages": [{"text": entry.excerpt()}] if entry.excerpt() else []})
        if len(out.hits) >= limit:
            break
    note = failed or (f"{dropped} listed file(s) no longer exist" if dropped else None)
    out.sources.append({"source": "server full text", "answered": failed is None, "hits": len(out.hits),
                        **({"note": note} if note else {})})
    return out
