"""Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document; MCP authorization 2025-11-25):
a client whose client_id is an https URL is described by the JSON document at that URL, fetched here instead of
being registered (RFC 7591 registration stays, for clients that do that).

The fetch is a request an anonymous caller of /authorize makes this server send, so it is fenced (SSRF):
- the URL: https only, a path other than `/`, no user or password, no fragment, no `.`/`..` segments;
- where it goes: the host's every address must be public (not private, loopback, link-local, shared, reserved
  or multicast); the request then goes to the address that was checked (no second lookup a rebinding DNS could
  answer differently), with TLS checked against the host's name, and no proxy from the environment. Loopback is
  accepted only when this server's own --public-url is loopback (a test or a one-machine setup);
- what comes back: 200 only (a redirect is refused, not followed), at most 5 KiB, within 5 s, at most 8 at once;
- what it says: a JSON object whose client_id is the URL exactly, with redirect_uris, no client secret and no
  secret-based token_endpoint_auth_method (a document is public: its client is a public client, PKCE-bound).
A valid document is kept in memory (never in team.sqlite) for its Cache-Control max-age, held between 1 minute
and 1 hour (5 minutes without one), 256 documents at most; a refused one is not kept.
"""
from __future__ import annotations

import ipaddress
import json
import re
import socket
import ssl
import time
from collections import OrderedDict
from urllib.parse import urlsplit

import anyio
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError
from mcp_nextcloud.environment import process

MAX_BYTES = 5 * 1024
TIMEOUT_S = 5.0
MIN_TTL_S, DEFAULT_TTL_S, MAX_TTL_S = 60, 300, 3600
CACHE_SIZE = 256
AT_ONCE = 8
SECRET_METHODS = ("client_secret_post", "client_secret_basic", "client_secret_jwt")


class ClientDocumentError(Exception):
    """A client_id document that cannot be used: the cause, worded for the person or developer who sees it."""


def is_document_id(client_id: str) -> bool:
    """Whether a client_id names a metadata document (a URL) rather than a registered client."""
    return client_id.lower().startswith(("https://", "http://"))


def url_problem(url: str) -> str | None:
    """Why `url` cannot be a client_id document's address, or None."""
    parts = urlsplit(url)
    if parts.scheme != "https":
        return "a client_id document must be served over https"
    if not parts.hostname or parts.username is not None or parts.password is not None:
        return "a client_id URL needs a host and no user or password"
    if parts.path in ("", "/") or parts.fragment or "#" in url:
        return "a client_id URL needs a path (not just /) and no fragment"
    if any(seg in (".", "..") for seg in parts.path.split("/")):
        return "a client_id URL must not contain . or .. segments"
    return None


def address_problem(address: str, allow_loopback: bool) -> str | None:
    """Why this server will not connect to `address` for a document, or None (public, or loopback when allowed)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_loopback:
        return None if allow_loopback else "its host is this machine (loopback)"
    if not ip.is_global or ip.is_multicast:
        return "its host is on a private or reserved network"
    return None


def max_age(cache_control: str | None) -> int:
    """How long to keep a document, from its Cache-Control, held within [MIN_TTL_S, MAX_TTL_S]."""
    found = re.search(r"max-age\s*=\s*(\d+)", cache_control or "", re.I)
    seconds = int(found.group(1)) if found else DEFAULT_TTL_S
    if re.search(r"no-store|no-cache", cache_control or "", re.I):
        seconds = 0
    return max(MIN_TTL_S, min(MAX_TTL_S, seconds))


def parse(url: str, body: bytes) -> OAuthClientInformationFull:
    """The client a document describes; ClientDocumentError naming what is wrong with it."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise ClientDocumentError("the document at the client_id URL is not JSON") from None
    if not isinstance(doc, dict):
        raise ClientDocumentError("the document at the client_id URL is not a JSON object")
    if doc.get("client_id") != url:
        raise ClientDocumentError("the document's client_id is not its own URL (they must be equal, character "
                                  "for character)")
    if "client_secret" in doc or "client_secret_expires_at" in doc:
        raise ClientDocumentError("the document holds a client secret (a public document cannot keep one)")
    method = doc.get("token_endpoint_auth_method") or "none"
    if method != "none":
        raise ClientDocumentError(f"token_endpoint_auth_method {str(method)[:40]!r} is not supported for a "
                                  "client_id document: use 'none' (PKCE protects the code)")
    if not isinstance(doc.get("redirect_uris"), list) or not doc["redirect_uris"]:
        raise ClientDocumentError("the document names no redirect_uris")
    try:
        return OAuthClientInformationFull.model_validate({**doc, "token_endpoint_auth_method": "none"})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "document"
        raise ClientDocumentError(f"the document's {where} is not valid ({first.get('msg', 'invalid')})") from None


def _tls() -> ssl.SSLContext:
    """The certificate authorities to trust: SSL_CERT_FILE's when set (a private CA), else certifi's."""
    import certifi

    return ssl.create_default_context(cafile=process().get("SSL_CERT_FILE") or certifi.where())


class ClientDocuments:
    """Fetches, checks and keeps (in memory, for a bounded time) the documents client_id URLs name."""

    def __init__(self, allow_loopback: bool) -> None:
        self.allow_loopback = allow_loopback
        self._kept: OrderedDict[str, tuple[float, OAuthClientInformationFull]] = OrderedDict()
        self._at_once = anyio.Semaphore(AT_ONCE)

    def kept(self, url: str) -> OAuthClientInformationFull | None:
        entry = self._kept.get(url)
        if entry is None or entry[0] < time.monotonic():
            self._kept.pop(url, None)
            return None
        return entry[1]

    async def client(self, url: str) -> OAuthClientInformationFull:
        """The client `url` describes (kept, or fetched now); ClientDocumentError with the cause otherwise."""
        known = self.kept(url)
        if known is not None:
            return known
        problem = url_problem(url)
        if problem is not None:
            raise ClientDocumentError(problem)
        async with self._at_once:
            try:
                with anyio.fail_after(TIMEOUT_S):
                    body, ttl = await self._fetch(url)
            except TimeoutError:
                raise ClientDocumentError(f"the client_id URL did not answer within {TIMEOUT_S:g} s") from None
        info = parse(url, body)
        self._kept[url] = (time.monotonic() + ttl, info)
        while len(self._kept) > CACHE_SIZE:
            self._kept.popitem(last=False)
        return info

    async def _fetch(self, url: str) -> tuple[bytes, int]:
        import httpx

        parts = urlsplit(url)
        host, port = str(parts.hostname), parts.port or 443
        address = await self._address(host, port)
        target = f"[{address}]" if ":" in address else address
        pinned = parts._replace(netloc=f"{target}:{port}").geturl()
        sni = {} if _is_ip(host) else {"sni_hostname": host}
        try:
            async with httpx.AsyncClient(verify=_tls(), trust_env=False, follow_redirects=False,
                                         timeout=TIMEOUT_S) as http:
                async with http.stream("GET", pinned, headers={"Host": parts.netloc, "Accept": "application/json"},
                                       extensions=sni) as resp:
                    if resp.is_redirect:
                        raise ClientDocumentError("the client_id URL answered with a redirect (not followed: the "
                                                  "document must be at the URL itself)")
                    if resp.status_code != 200:
                        raise ClientDocumentError(f"the client_id URL answered HTTP {resp.status_code}")
                    if int(resp.headers.get("content-length") or 0) > MAX_BYTES:
                        raise ClientDocumentError(f"the document is larger than {MAX_BYTES} bytes")
                    body = b""
                    async for chunk in resp.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_BYTES:
                            raise ClientDocumentError(f"the document is larger than {MAX_BYTES} bytes")
                    return body, max_age(resp.headers.get("cache-control"))
        except httpx.HTTPError as exc:
            raise ClientDocumentError(f"the client_id URL could not be fetched ({type(exc).__name__})") from None

    async def _address(self, host: str, port: int) -> str:
        """The one address to connect to, after checking every address the host has."""
        if _is_ip(host):
            addresses = [host]
        else:
            try:
                found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
            except OSError:
                raise ClientDocumentError("the client_id URL's host name does not resolve") from None
            addresses = list(dict.fromkeys(str(info[4][0]) for info in found))
        for address in addresses:
            problem = address_problem(address, self.allow_loopback)
            if problem is not None:
                raise ClientDocumentError(f"the client_id URL is not fetched: {problem}")
        if not addresses:
            raise ClientDocumentError("the client_id URL's host name does not resolve")
        return addresses[0]


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def describe(client_id: str) -> str | None:
    """The host a client_id document came from (shown on the sign-in page), or None for a registered client."""
    return urlsplit(client_id).netloc if is_document_id(client_id) else None
