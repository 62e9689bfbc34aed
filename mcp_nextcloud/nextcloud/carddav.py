"""CardDAV: address books of the account and contact search, as Contact objects parsed with vobject."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import unquote

import vobject

from . import paths
from .davxml import CARDDAV, DAV, escape, parse_multistatus, q
from .errors import error_for
from .http import Transport

SOURCE = "carddav"
_NS = 'xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav"'
SEARCH_PROPS = ("FN", "EMAIL", "ORG", "TEL", "NICKNAME")


@dataclass(frozen=True)
class AddressBook:
    id: str
    name: str
    system: bool = False      # the server-generated "Accounts" book (read-only)


@dataclass(frozen=True)
class Contact:
    uid: str
    address_book: str
    name: str
    emails: list[str] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)
    org: str = ""
    etag: str = ""
    nickname: str = ""
    structured_name: str = ""    # N as "Given Family", for matching
    clouds: list[str] = field(default_factory=list)   # CLOUD: federated ids (uid@server), as on account cards


def contact_from_vcard(text: str, address_book: str, etag: str = "") -> Contact | None:
    """A Contact from a vCard text (3.0 or 4.0); None when it cannot be parsed."""
    try:
        card = vobject.readOne(text)
    except Exception:   # vobject raises many types on bad input; a bad card is skipped, not fatal
        return None
    def values(key: str) -> list[str]:
        return [str(c.value) for c in card.contents.get(key, []) if c.value]
    org_parts = card.contents.get("org", [])
    org = org_parts[0].value if org_parts else ""
    if isinstance(org, list):
        org = " ".join(str(x) for x in org if x)
    name = values("fn")
    n = card.contents.get("n", [])
    structured = ""
    if n and hasattr(n[0].value, "given"):
        structured = " ".join(str(x) for x in (n[0].value.given, n[0].value.family) if x)
    return Contact(uid=(values("uid") or [""])[0], address_book=address_book, name=name[0] if name else "",
                   emails=values("email"), phones=values("tel"), org=str(org or ""), etag=etag,
                   nickname=(values("nickname") or [""])[0], structured_name=structured,
                   clouds=values("cloud"))


def address_books_from_multistatus(body: bytes | str) -> list[AddressBook]:
    """Address books (resourcetype card:addressbook) of a Depth 1 PROPFIND on the address book home."""
    out = []
    for r in parse_multistatus(body, source=SOURCE):
        rtype = r.props.get(q(DAV, "resourcetype"))
        if rtype is None or rtype.find(q(CARDDAV, "addressbook")) is None:
            continue
        bid = unquote(r.href.rstrip("/").rsplit("/", 1)[-1])
        out.append(AddressBook(id=bid, name=r.text(DAV, "displayname") or bid,
                               system=bid.startswith("z-server-generated--") or bid.startswith("z-app-generated--")))
    return out


class CardDAV:
    """Address books of one account."""

    def __init__(self, transport: Transport, user_id: Callable[[], str]) -> None:
        self._t = transport
        self._user_id = user_id

    def _home(self) -> str:
        return "/remote.php/dav/addressbooks/users" + paths.encode(self._user_id()) + "/"

    def address_books(self) -> list[AddressBook]:
        body = (f'<?xml version="1.0" encoding="UTF-8"?><d:propfind {_NS}><d:prop><d:displayname/>'
                "<d:resourcetype/></d:prop></d:propfind>")
        resp = self._t.request("PROPFIND", self._home(), source=SOURCE, path="address books", dav=True,
                               headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                               content=body.encode(), ok=(207,))
        return address_books_from_multistatus(resp.content)

    def _report(self, address_book: str, body: str) -> list[Contact]:
        if not address_book or "/" in address_book or address_book in (".", ".."):
            raise error_for(SOURCE, None, condition="bad_path", path=address_book)
        url = self._home() + paths.encode(address_book)[1:] + "/"
        resp = self._t.request("REPORT", url, source=SOURCE, path=address_book, dav=True,
                               headers={"Depth": "1", "Content-Type": "application/xml; charset=utf-8"},
                               content=body.encode(), ok=(207,))
        out = []
        for r in parse_multistatus(resp.content, source=SOURCE, path=address_book):
            vcard = r.text(CARDDAV, "address-data")
            if not vcard:
                continue
            contact = contact_from_vcard(vcard, address_book, (r.text(DAV, "getetag") or "").strip('"'))
            if contact is not None:
                out.append(contact)
        return out

    def cards(self, address_book: str) -> list[Contact]:
        """Every card of an address book, reduced to the fields people are found by (no photos).

        Nextcloud's text-match is accent-sensitive ("Elodie" misses "Élodie"), so
        callers that must match accent-insensitively filter these themselves.
        """
        wanted = "".join(f'<card:prop name="{p}"/>' for p in ("UID", "FN", "N", "EMAIL", "TEL", "ORG", "NICKNAME",
                                                                     "CLOUD"))
        body = (f'<?xml version="1.0" encoding="UTF-8"?><card:addressbook-query {_NS}><d:prop><d:getetag/>'
                f'<card:address-data>{wanted}</card:address-data></d:prop><card:filter/>'
                "</card:addressbook-query>")
        return self._report(address_book, body)

    def search(self, text: str, *, address_book: str = "contacts", limit: int = 20) -> list[Contact]:
        """Contacts whose name, e-mail, organisation, phone or nickname contains `text` (case-insensitive)."""
        match = escape(text)
        filters = "".join(
            f'<card:prop-filter name="{p}"><card:text-match collation="i;unicode-casemap" match-type="contains">'
            f"{match}</card:text-match></card:prop-filter>" for p in SEARCH_PROPS)
        body = (f'<?xml version="1.0" encoding="UTF-8"?><card:addressbook-query {_NS}><d:prop><d:getetag/>'
                f'<card:address-data/></d:prop><card:filter test="anyof">{filters}</card:filter>'
                f"<card:limit><card:nresults>{max(1, int(limit))}</card:nresults></card:limit>"
                "</card:addressbook-query>")
        return self._report(address_book, body)[:limit]
