"""The index as its users open it: the stored index (indexer.store) with its two searches (indexer.search).

`indexer.store` only stores; grep and name search sit above it and read its
rows. This class joins them at the top of the package, so the server, the CLI
and the tests keep one handle (`Index.open(path)`, `.grep(...)`, `.search_names(...)`,
`.writer()`) without the store importing the searches.
"""
from __future__ import annotations

from mcp_nextcloud.indexer.search.grep import GrepResult, grep
from mcp_nextcloud.indexer.search.names import NameSearchResult, search_names
from mcp_nextcloud.indexer.store.index import Index as StoredIndex

__all__ = ["Index"]


class Index(StoredIndex):
    """Read side of the index (connections, records, cached documents: see StoredIndex) plus grep and name search."""

    def grep(self, query: str, *, path_prefix: str | None = None, kinds: list[str] | None = None,
             modified_after: float | None = None, limit: int = 10, cursor: str | None = None,
             scope: str = "", account_only: bool = False, passages: int = 1, meaning: bool = True) -> GrepResult:
        """Files whose text contains `query` (case/accent/whitespace-insensitive), ranked, with passages.

        A question of several words also searches by meaning (indexer/search/semantic.py) unless `meaning`
        is false."""
        return grep(self, query, path_prefix=path_prefix, kinds=kinds, modified_after=modified_after,
                    limit=limit, cursor=cursor, scope=scope, account_only=account_only, passages=passages,
                    meaning=meaning)

    def search_names(self, *, name: str | None = None, mime: str | None = None, modified_after: float | None = None,
                     path_prefix: str | None = None, limit: int = 20, cursor: str | None = None,
                     account_only: bool = False) -> NameSearchResult:
        """Files by name / mime / modification time / folder, newest first, with an opaque cursor."""
        return search_names(self, name=name, mime=mime, modified_after=modified_after, path_prefix=path_prefix,
                            limit=limit, cursor=cursor, account_only=account_only)
