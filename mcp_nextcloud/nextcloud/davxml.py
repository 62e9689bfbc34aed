"""Safe XML for DAV: parse 207 multistatus bodies and Sabre error bodies with defusedxml.

defusedxml refuses DTDs with entities (billion laughs, external entities),
which becomes a NextcloudError "invalid_response" instead of a hang or a leak.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as SafeET
from defusedxml import DefusedXmlException

from .errors import error_for

DAV = "DAV:"
OC = "http://owncloud.org/ns"
NC = "http://nextcloud.org/ns"
SABRE = "http://sabredav.org/ns"
CALDAV = "urn:ietf:params:xml:ns:caldav"
CARDDAV = "urn:ietf:params:xml:ns:carddav"
CS = "http://calendarserver.org/ns/"
APPLE = "http://apple.com/ns/ical/"


def q(ns: str, name: str) -> str:
    """Clark notation '{ns}name' as ElementTree uses it."""
    return f"{{{ns}}}{name}"


@dataclass
class DavResponse:
    """One <d:response>: its raw href, the props found (200 propstat), and the response status."""
    href: str
    props: dict[str, Element] = field(default_factory=dict)
    missing: set[str] = field(default_factory=set)    # props the server answered 404 for
    status: int | None = None                         # a response-level <d:status> (sync deletions)

    def text(self, ns: str, name: str) -> str | None:
        el = self.props.get(q(ns, name))
        if el is None:
            return None
        return el.text if el.text is not None else ""


def parse_xml(body: bytes | str, *, source: str = "webdav", path: str | None = None) -> Element:
    """Parse XML safely; entity declarations and malformed XML become NextcloudError."""
    try:
        root: Element = SafeET.fromstring(body)   # defusedxml is untyped: it returns ElementTree's Element
        return root
    except DefusedXmlException:
        raise error_for(source, None, condition="unsafe_xml", path=path) from None
    except SafeET.ParseError:
        raise error_for(source, None, condition="invalid_response", path=path,
                        detail="malformed XML") from None


def _status_code(text: str | None) -> int | None:
    # "HTTP/1.1 404 Not Found" -> 404
    parts = (text or "").split()
    if len(parts) >= 2 and parts[1].isdigit():
        return int(parts[1])
    return None


def parse_multistatus(body: bytes | str, *, source: str = "webdav", path: str | None = None) -> list[DavResponse]:
    """All <d:response> elements of a 207 body, props from 200 propstats only."""
    root = parse_xml(body, source=source, path=path)
    if root.tag != q(DAV, "multistatus"):
        raise error_for(source, None, condition="invalid_response", path=path, detail="expected a multistatus")
    out: list[DavResponse] = []
    for resp in root.findall(q(DAV, "response")):
        href_el = resp.find(q(DAV, "href"))
        item = DavResponse(href=(href_el.text or "").strip() if href_el is not None else "")
        item.status = _status_code(resp.findtext(q(DAV, "status")))
        for propstat in resp.findall(q(DAV, "propstat")):
            code = _status_code(propstat.findtext(q(DAV, "status")))
            prop = propstat.find(q(DAV, "prop"))
            if prop is None:
                continue
            for child in prop:
                if code == 200:
                    item.props[child.tag] = child
                else:
                    item.missing.add(child.tag)
        out.append(item)
    return out


def sync_token(body: bytes | str) -> str | None:
    """The <d:sync-token> of a sync-collection answer."""
    root = parse_xml(body)
    return root.findtext(q(DAV, "sync-token"))


def sabre_error(body: bytes | str) -> tuple[str | None, str | None]:
    """(exception class, message) of a Sabre <d:error> body; (None, text) for a plain-text body."""
    if not body:
        return None, None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    if not text.lstrip().startswith("<"):
        return None, text.strip()[:300] or None
    try:
        root = SafeET.fromstring(text)
    except (DefusedXmlException, SafeET.ParseError):
        return None, None
    exc = root.findtext(q(SABRE, "exception"))
    msg = root.findtext(q(SABRE, "message"))
    return exc, (msg or None)


def escape(text: str) -> str:
    """Escape a literal for an XML text node."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))
