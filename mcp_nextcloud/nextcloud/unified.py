"""Nextcloud's unified search: the providers a server offers and one provider's results.

`GET /ocs/v2.php/search/providers` lists providers (ocs.jsonl #28);
`GET /ocs/v2.php/search/providers/{id}/search?term=&limit=&cursor=` answers
`{name, isPaginated, entries, cursor}` (#29, #30); an unknown provider is a 500
with OCS status 996 (#31): not retried (it is deterministic), and the caller
reads a 500 from a provider it did not see listed as "not available".

Two providers matter for files. Core's `files` searches *names* (content is
not indexed without full-text search, #30) and gives each entry
`attributes.fileId` and `attributes.path`. The Full text search app's
`fulltextsearch` provider searches *contents* through the organisation's
search cluster; its entries carry no attributes: the file is named by
`resourceUrl` (`/apps/files/?dir=<dir>&scrollto=<name>`, from
files_fulltextsearch's `SearchService::setDocumentLinkFile`), the title is
`(<provider>) <excerpt>` and the subline the path without its leading slash
(`UnifiedSearchProvider::convertSearchResult`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .http import Transport

SOURCE = "search"
FILES_PROVIDER = "files"
FULLTEXT_PROVIDER = "fulltextsearch"


@dataclass(frozen=True)
class Provider:
    id: str
    app: str
    name: str
    filters: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    """One unified-search result as the server gave it (URLs are never shown to a model as such)."""

    title: str
    subline: str
    resource_url: str
    attributes: dict[str, str] = field(default_factory=dict)

    def file_path(self) -> str | None:
        """The file's path in the user's tree: attributes.path, else the Files app link's dir + scrollto."""
        path = self.attributes.get("path")
        if path:
            return "/" + path.lstrip("/")
        parts = urlsplit(self.resource_url)
        query = parse_qs(parts.query)
        name = (query.get("scrollto") or [""])[0]
        folder = (query.get("dir") or [""])[0]
        if name:
            return "/" + "/".join(p for p in (folder.strip("/"), name) if p)
        return None

    def file_id(self) -> int | None:
        raw = self.attributes.get("fileId")
        if raw and str(raw).isdigit():
            return int(raw)
        tail = urlsplit(self.resource_url).path.rstrip("/").rsplit("/", 2)
        if len(tail) == 3 and tail[1] == "f" and tail[2].isdigit():   # core's /f/<fileid> links
            return int(tail[2])
        return None

    def excerpt(self) -> str:
        """The matching text the full-text provider puts in the title after its "(provider) " tag."""
        title = self.title
        if title.startswith("(") and ") " in title:
            title = title.split(") ", 1)[1]
        return unquote(title).strip()

    def provider_tag(self) -> str | None:
        """"files" for "(files) …" titles of the full-text provider; None for other providers' titles."""
        if self.title.startswith("(") and ") " in self.title:
            return self.title[1:self.title.index(") ")]
        return None


@dataclass(frozen=True)
class Page:
    entries: list[Entry]
    cursor: Any
    paginated: bool


def _entry(d: dict[str, Any]) -> Entry:
    attrs = d.get("attributes")
    return Entry(title=str(d.get("title") or ""), subline=str(d.get("subline") or ""),
                 resource_url=str(d.get("resourceUrl") or ""),
                 attributes={str(k): str(v) for k, v in attrs.items()} if isinstance(attrs, dict) else {})


class UnifiedSearch:
    """Unified search calls of one account."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def providers(self) -> list[Provider]:
        """Every provider this server offers to this user."""
        resp = self._t.request("GET", "/ocs/v2.php/search/providers", source=SOURCE, path="search providers",
                               params={"format": "json"})
        data = self._t.ocs_data(resp, source=SOURCE, path="search providers")
        out = []
        for p in data if isinstance(data, list) else []:
            if isinstance(p, dict) and p.get("id"):
                filters = p.get("filters")
                out.append(Provider(id=str(p["id"]), app=str(p.get("appId") or ""), name=str(p.get("name") or ""),
                                    filters={str(k): str(v) for k, v in filters.items()}
                                    if isinstance(filters, dict) else {}))
        return out

    def search(self, provider: str, term: str, *, limit: int = 20, cursor: Any = None) -> Page:
        """One page of `provider`'s results for `term` (its order: the server ranks)."""
        params: dict[str, Any] = {"term": term, "limit": max(1, int(limit)), "format": "json"}
        if cursor is not None:
            params["cursor"] = cursor
        resp = self._t.request("GET", f"/ocs/v2.php/search/providers/{provider}/search", source=SOURCE,
                               path=f"search provider {provider}", params=params, no_retry=(500,))
        data = self._t.ocs_data(resp, source=SOURCE, path=f"search provider {provider}")
        data = data if isinstance(data, dict) else {}
        entries = [_entry(e) for e in data.get("entries") or [] if isinstance(e, dict)]
        return Page(entries=entries, cursor=data.get("cursor"), paginated=bool(data.get("isPaginated")))

