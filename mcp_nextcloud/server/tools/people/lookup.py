"""Finding people: address-book cards and accounts merged, matched insensitive to case and accents on our side.

Nextcloud's CardDAV text-match is case- but not accent-insensitive ("Elodie"
misses "Élodie"), so every card is fetched reduced to its searchable fields
(one REPORT per address book, no photos) and matched here on unidecode-folded
text. The system address book ("Accounts") maps people to account ids; the
OCS sharee search adds accounts the books do not show. A card and an account
with the same e-mail or the same cloud id (CLOUD, uid@server) are one person:
the "Recently contacted" book's card of an account someone shared with holds
only FN and CLOUD, and is that account, not a second person of the same name.

The one rule for every tool that contacts people (mail_compose, calendar and
meet attendees): an address is exactly one RFC 5322 addr-spec, and it is
either known to the account (its address books, including the accounts
directory, or Mail's suggestions) or typed out by the user and passed again
in typedByUser. An address assembled from a name ("Jane Doe" ->
jane.doe@example.com) reaches a stranger or nobody.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from email.errors import HeaderParseError, MessageDefect
from email.headerregistry import Address
from typing import Any, Callable, Iterable, TypeGuard

from unidecode import unidecode

from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import from_nextcloud, misuse
from mcp_nextcloud.server.tools.account.first_login import NO_ADDRESS_BOOK_YET

SYSTEM_BOOK = "z-server-generated--system"
RECENT_BOOK = "z-app-generated--contactsinteraction--recent"   # "Recently contacted" (contactsinteraction)


def fold(text: str) -> str:
    """Lower-case ASCII: 'Élodie Müller' -> 'elodie muller'."""
    return unidecode(text or "").casefold()


@dataclass
class Person:
    name: str
    account_id: str | None = None
    emails: list[str] = field(default_factory=list)
    phones: list[str] = field(default_factory=list)
    org: str = ""
    haystack: str = ""
    clouds: list[str] = field(default_factory=list)
    recent: bool = False          # from the "Recently contacted" book: merged into a known person when it can be

    def entry(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.account_id:
            out["accountId"] = self.account_id
        if self.emails:
            out["emails"] = self.emails
        if self.phones:
            out["phones"] = self.phones
        if self.org:
            out["org"] = self.org
        return out

    def absorb(self, other: "Person") -> None:
        """Merge `other` (the same human) into this one."""
        self.account_id = self.account_id or other.account_id
        if not self.name or (other.account_id and self.name == self.account_id):
            self.name = other.name or self.name
        for mail in other.emails:
            if mail.lower() not in {m.lower() for m in self.emails}:
                self.emails.append(mail)
        self.phones += [p for p in other.phones if p not in self.phones]
        self.org = self.org or other.org
        self.clouds += [c for c in other.clouds if c not in self.clouds]
        self.haystack += " " + other.haystack


def _nc(exc: BaseException) -> TypeGuard[NextcloudError]:
    return isinstance(exc, NextcloudError)


def _from_cards(ctx: ServerContext, warnings: list[str]) -> list[Person]:
    carddav = ctx.client().carddav
    try:
        books = carddav.address_books()
    except Exception as exc:
        if _nc(exc):
            raise from_nextcloud(exc) from None
        raise
    if not any(book.id == "contacts" or not book.system for book in books):
        warnings.append(NO_ADDRESS_BOOK_YET)
    people: list[Person] = []
    for book in books:
        try:
            cards = carddav.cards(book.id)
        except Exception as exc:
            if not _nc(exc) or getattr(exc, "code", None) is ErrorCode.AUTH:
                raise
            warnings.append(f"Address book {book.name} could not be read; people only in it are missing.")
            continue
        for c in cards:
            hay = " ".join([c.name, c.structured_name, c.nickname, c.org, *c.emails])
            people.append(Person(name=c.name, account_id=c.uid if book.id == SYSTEM_BOOK else None,
                                 emails=list(c.emails), phones=list(c.phones), org=c.org, haystack=hay,
                                 clouds=list(c.clouds), recent=book.id == RECENT_BOOK))
    return people


def _from_sharees(ctx: ServerContext, query: str, warnings: list[str]) -> list[Person]:
    try:
        sharees = ctx.client().ocs.sharees(query, limit=25)
    except Exception as exc:
        if not _nc(exc) or getattr(exc, "code", None) is ErrorCode.AUTH:
            raise
        warnings.append("The account directory (sharees) could not be searched; accounts may be missing.")
        return []
    return [Person(name=s.label, account_id=s.id, haystack=f"{s.label} {s.id}") for s in sharees if s.kind == "user"]


def _merge(people: list[Person]) -> list[Person]:
    merged: list[Person] = []
    # Recently-contacted cards last: they join the person they were made for, whatever the book order.
    for person in sorted(people, key=lambda p: p.recent):
        mails = {m.lower() for m in person.emails}
        clouds = {c.lower() for c in person.clouds}
        same = next((m for m in merged if (person.account_id and m.account_id == person.account_id)
                     or (mails & {x.lower() for x in m.emails}) or (clouds & {c.lower() for c in m.clouds})),
                    None)
        if same is None:
            merged.append(person)
        elif same.account_id and person.account_id and same.account_id != person.account_id:
            merged.append(person)   # two accounts sharing an address are still two people
        else:
            same.absorb(person)
    return merged


def search(ctx: ServerContext, query: str) -> tuple[list[Person], list[str]]:
    """Everyone whose name, e-mail, organisation or account id contains every word of `query` (folded)."""
    words = fold(query).split()
    if not words:
        raise misuse("query is empty. Give a name, part of one, or an e-mail address.")
    warnings: list[str] = []
    pool = _from_cards(ctx, warnings)
    sharees = _from_sharees(ctx, query, warnings)
    found = [p for p in pool if all(w in fold(p.haystack + " " + (p.account_id or "")) for w in words)]
    # Sharees matched on the server's side: they count as found, merged with what the cards say.
    people = _merge(found + sharees + [p for p in pool if p.account_id and p not in found
                                       and any(s.account_id == p.account_id for s in sharees)])
    exact = fold(query).strip()
    people.sort(key=lambda p: (fold(p.name) != exact and (p.account_id or "") != query.strip(),
                               p.account_id is None, fold(p.name)))
    return people, warnings


def resolve_accounts(ctx: ServerContext, names: list[str]) -> dict[str, str]:
    """{given: account id} for Talk participants; a name matching several accounts is refused with the candidates."""
    out: dict[str, str] = {}
    for given in names:
        key = given.strip()
        if not key:
            continue
        people, _ = search(ctx, key)
        with_account = [p for p in people if p.account_id]
        exact = [p for p in with_account if p.account_id == key]
        if exact:
            out[given] = key
            continue
        if len(with_account) == 1:
            out[given] = with_account[0].account_id or key
            continue
        if not with_account:
            raise misuse(f"No account matches {given!r}. Only people with an account here can be participants; "
                         "invite others by e-mail (meet_schedule attendees). Check the name with "
                         "contacts_search.", status=ToolStatus.UNKNOWN_PERSON)
        listed = "; ".join(f"{p.name} (accountId {p.account_id}"
                           + (f", {p.emails[0]})" if p.emails else ")") for p in with_account[:8])
        raise misuse(f"{given!r} matches several people: {listed}. Ask the user which one and pass that "
                     "accountId. Do not pick one yourself.", status=ToolStatus.AMBIGUOUS_PERSON)
    return out


def address(raw: str, field: str, finder: str) -> str:
    """`raw` as one addr-spec, exactly as given (no display name, list, quotes or parameters); else a misuse."""
    text = raw.strip() if isinstance(raw, str) else ""
    try:
        # Intranet domains (user@host, .local) are real addresses: no deliverability rules here.
        parsed = Address(addr_spec=text)
        if not parsed.domain or not parsed.username or parsed.addr_spec != text:
            raise ValueError("not exactly one plain address")
    except (ValueError, TypeError, IndexError, HeaderParseError, MessageDefect):   # "a@": IndexError
        raise misuse(f"{field}: {text[:80]!r} is not an e-mail address: each item must be exactly one "
                     f"plain address, like jane@example.com. Use {finder} to find the person's address.",
                     status=ToolStatus.BAD_ADDRESS) from None
    return text


def addresses(field: str, values: Iterable[str] | None, finder: str) -> list[str]:
    """Each value as one address (see `address`), duplicates (ignoring case) dropped."""
    out: list[str] = []
    for raw in values or []:
        mail = address(raw, field, finder)
        if mail.casefold() not in {o.casefold() for o in out}:
            out.append(mail)
    return out


def unknown_address(mail: str, finder: str, field: str = "attendees") -> Any:
    return misuse(f"{field}: {mail} is not an address the user's contacts or Mail know. Never build an address from a "
                  f"name: find the person with {finder}, or ask the user to type the address and pass it in "
                  "typedByUser as well.", status=ToolStatus.UNKNOWN_RECIPIENT)


def check_known(wanted: list[str], typed: Iterable[str], is_known: Callable[[str], bool], finder: str,
                field: str = "attendees") -> list[str]:
    """The addresses the user typed that nobody knows (to be said); any other unknown address is refused."""
    typed_set = {t.casefold() for t in typed}
    unverified = []
    for mail in wanted:
        if is_known(mail):
            continue
        if mail.casefold() in typed_set:
            unverified.append(mail)
            continue
        raise unknown_address(mail, finder, field)
    return unverified


def directory_emails(ctx: ServerContext) -> dict[str, str | None]:
    """{folded e-mail: account id or None} of every address-book card (the accounts directory included)."""
    out: dict[str, str | None] = {}
    for person in _from_cards(ctx, []):
        for mail in person.emails:
            key = mail.strip().casefold()
            out[key] = out.get(key) or person.account_id
    return out


def mail_knows(ctx: ServerContext, mail: str) -> bool:
    """Whether Mail suggests this exact address; False where Mail is not installed or does not answer."""
    try:
        found = ctx.client().mail.autocomplete(mail.split("@", 1)[0] or mail)
    except Exception as exc:
        if _nc(exc) and getattr(exc, "code", None) is ErrorCode.AUTH:
            raise from_nextcloud(exc) from None
        return False
    return any(r.email.casefold() == mail.casefold() for r in found)
