"""The reading side of the mail tools: Mail accounts and mailboxes, search, one message, people.

Mail answers from its own local copy of the mailbox, synced from IMAP by a
background job (and whenever its web page asks), so a search first asks Mail
to sync the mailboxes it covers (at most every SYNC_TTL_S) and every answer
says when that was: an empty search is still never proof that a message does
not exist. Mail dates a message by its arrival in the mailbox (IMAP
INTERNALDATE), not by its Date header; `after`/`before` filter on that date. Searching is
done with Mail's `key:value` filters (bare words are ignored by Mail, so free
text is always sent as `subject:` or `body:`); a message body is sliced and
searched like a file (reader.page / reader.find).
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
from typing import Any

from mcp_nextcloud.indexer.models import iso_time
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import from_nextcloud, misuse
from mcp_nextcloud.server.tools.mail.filters import SearchFilters, matches

ACCOUNTS_TTL_S = 60.0
SYNC_TTL_S = 10.0     # a burst of searches (pages of one search) asks Mail to sync once
MAIL_PAGE = 100       # what is asked of Mail when the result is narrowed here (Mail's own maximum)
NOT_PROOF = ("Mail searches its own copy of the mailbox: no result is not proof that no such message exists.")
PREVIEW_CHARS = 120
READ_CHARS = 8_000


def mail_accounts(ctx: ServerContext) -> list[Any]:
    """The user's Mail accounts (cached a minute); none configured is an instruction, not an empty list."""
    try:
        accounts = ctx.cached("mail:accounts", ACCOUNTS_TTL_S, lambda: ctx.client().mail.accounts())
    except Exception as exc:
        raise _failure(exc) from None
    if not accounts:
        raise misuse("No mail account is set up in Nextcloud Mail for this user. Tell the user to add one in "
                     "the Mail app.", status=ToolStatus.NO_MAIL_ACCOUNT)
    return list(accounts)


def _failure(exc: Exception) -> Exception:
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    return from_nextcloud(exc) if isinstance(exc, NextcloudError) else exc


def _missing_message(exc: Exception, message_id: int) -> Exception | None:
    """Mail's 404 for a message id: the id argument is wrong (Mail's words would point at a file path)."""
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    if isinstance(exc, NextcloudError) and exc.code is ErrorCode.NOT_FOUND:
        return misuse(f"No message has id {message_id} in this account's mail. Take an id from mail_search; "
                      "do not guess ids.", status=ToolStatus.NOT_FOUND)
    return None


def _mailboxes(ctx: ServerContext, account: Any, *, refresh: bool = False) -> list[Any]:
    key = f"mail:boxes:{account.id}"
    try:
        if refresh:
            boxes = ctx.client().mail.mailboxes(account.id, refresh=True)
            ctx.cached(key, 0.0, lambda: boxes)   # the refreshed list replaces the cached one
            return list(boxes)
        return list(ctx.cached(key, ACCOUNTS_TTL_S, lambda: ctx.client().mail.mailboxes(account.id)))
    except Exception as exc:
        raise _failure(exc) from None


def pick_mailboxes(ctx: ServerContext, name: str) -> list[tuple[Any, Any]]:
    """(account, mailbox) pairs named `name` ("INBOX", "Sent", "Drafts" or a folder name) in every account.

    Mail refreshes its folder list from IMAP only every two hours: a name it does not know yet is looked up
    again after asking it to refresh the list, before the answer says there is no such mailbox."""
    pairs, seen = _named(ctx, name, refresh=False)
    if not pairs:
        pairs, seen = _named(ctx, name, refresh=True)
    if not pairs:
        raise misuse(f"No mailbox named {name!r} (Mail's folder list was just refreshed from the mail server). "
                     f"Mailboxes here: {', '.join(sorted(set(seen))[:20])}.", status=ToolStatus.UNKNOWN_MAILBOX)
    return pairs


def _named(ctx: ServerContext, name: str, *, refresh: bool) -> tuple[list[tuple[Any, Any]], list[str]]:
    wanted = name.strip().casefold()
    pairs, seen = [], []
    for account in mail_accounts(ctx):
        for box in _mailboxes(ctx, account, refresh=refresh):
            seen.append(box.name)
            roles = [s.casefold() for s in box.special_use]
            if box.name.casefold() == wanted or wanted in roles or (wanted == "inbox" and "inbox" in roles):
                pairs.append((account, box))
                break
    return pairs, seen


def make_cursor(boxes: list[int], filters: dict[str, str], before_ts: int) -> str:
    raw = json.dumps({"b": boxes, "f": _digest(filters), "t": before_ts}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def read_cursor(cursor: str, boxes: list[int], filters: dict[str, str]) -> int:
    """The timestamp a cursor continues from; a cursor from another search is refused."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if data["b"] == boxes and data["f"] == _digest(filters):
            return int(data["t"])
    except (ValueError, KeyError, TypeError, binascii.Error):
        pass
    raise misuse("cursor does not belong to this search (pass back nextCursor with the same filters and "
                 "mailbox).", status=ToolStatus.BAD_CURSOR)


def _digest(filters: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(filters, sort_keys=True).encode()).hexdigest()[:12]


def message_entry(msg: Any, mailbox: str) -> dict[str, Any]:
    """One message as mail_search lists it: id for mail_read, who, what, when, read or not."""
    preview = " ".join(msg.preview.split())
    return {"id": msg.id, "subject": msg.subject, "from": msg.sender, "to": msg.to[:5] or None,
            "date": iso_time(msg.date), "unread": not bool(msg.flags.get("seen", False)), "mailbox": mailbox,
            "preview": preview[:PREVIEW_CHARS] + ("…" if len(preview) > PREVIEW_CHARS else "") or None}


def synced_at(ctx: ServerContext, box: Any) -> tuple[float, str | None]:
    """Ask Mail to fetch what arrived in `box` since its last sync (at most every SYNC_TTL_S): when that
    sync ended, and a warning when it failed or is not complete (the listing is then Mail's older copy)."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    def go() -> tuple[float, str | None]:
        try:
            done = ctx.client().mail.sync(box.id)
        except NextcloudError as exc:
            return time.time(), (f"Mail could not sync {box.name} with the mail server just now ({exc.cause}): "
                                 "this list is what Mail saw at its last sync, which may be old. Search again "
                                 "in a few minutes.")
        if not done.complete:
            return time.time(), (f"Mail is still fetching {box.name} from the mail server: this list may be "
                                 "incomplete. Search again in a minute.")
        return time.time(), None
    return ctx.cached(f"mail:sync:{box.id}", SYNC_TTL_S, go)


def search(ctx: ServerContext, filters: SearchFilters, *, mailbox: str, limit: int,
           cursor: str | None) -> dict[str, Any]:
    """Newest messages first across the named mailbox of every account, `limit` at most, with a cursor."""
    mail_filters = filters.to_mail()
    pairs = pick_mailboxes(ctx, mailbox)
    box_ids = [box.id for _, box in pairs]
    before = read_cursor(cursor, box_ids, mail_filters) if cursor else None
    found: list[tuple[Any, str]] = []
    warnings: list[str] = []
    synced = time.time()
    asked = MAIL_PAGE if filters.narrowed_here() else limit + 1
    scanned_to: int | None = None     # the oldest date Mail listed, when it had more than was asked
    for _, box in pairs:
        when, warning = synced_at(ctx, box)
        synced = min(synced, when)
        warnings += [warning] if warning else []
        try:
            msgs = ctx.client().mail.messages(box.id, limit=asked, filters=mail_filters, cursor=before)
        except Exception as exc:
            raise _failure(exc) from None
        if len(msgs) >= asked > limit + 1:
            oldest = min(m.date for m in msgs)
            scanned_to = oldest if scanned_to is None else max(scanned_to, oldest)
        found.extend((m, box.name) for m in msgs if matches(filters, m))
    found.sort(key=lambda pair: (pair[0].date, pair[0].id), reverse=True)
    if scanned_to is not None:   # beyond the oldest scanned date, matches are on the next page
        found = [pair for pair in found if pair[0].date >= scanned_to]
    shown = found[:limit]
    more = len(found) > limit or scanned_to is not None
    out: dict[str, Any] = {"messages": [message_entry(m, name) for m, name in shown], "truncated": more,
                           "mailboxes": sorted({name for _, name in found} or {box.name for _, box in pairs}),
                           "syncedAt": iso_time(synced)}
    if more:
        last = shown[-1][0].date if len(found) > limit else scanned_to
        out["nextCursor"] = make_cursor(box_ids, mail_filters, int(last or 0))
    out["hint"] = _search_hint(bool(shown), iso_time(synced) or "") + filters.caveat(bool(shown) or more)
    unconfirmed = [m.id for m, _ in shown if filters.body_unconfirmed(m)]
    if unconfirmed:
        warnings.append(f"Mail cannot search a body for accented letters: messages {unconfirmed} contain "
                        f"{mail_filters['body']!r} but their preview does not show {filters.body!r}; "
                        f"mail_read(id, find={filters.body!r}) confirms one.")
        out["warnings"] = warnings
    if more and not shown:
        out["hint"] = ("No match among the newest messages Mail listed; pass nextCursor to look further back. "
                       + out["hint"])
    if warnings:
        out["warnings"] = warnings
    return out


def _search_hint(found: bool, synced: str) -> str:
    """What a listing covers: Mail's copy as synced at `synced`; dates are arrivals."""
    covered = (f"Mail's copy was synced with the mail server at {synced}; mail that arrives later is listed by a "
               "search after it.")
    if found:
        return ("mail_read(id) reads a message. Dates are when each message arrived in the mailbox. "
                + covered + " " + NOT_PROOF)
    return (NOT_PROOF + " " + covered + " Try fewer or other filters, or another mailbox (Sent, Drafts, "
            "Archive).")


def read(ctx: ServerContext, message_id: int, *, offset: int, limit: int | None, find: str | None) -> dict[str, Any]:
    """One message: headers, then its body sliced (offset/limit) or searched (find) like a file."""
    try:
        msg = ctx.client().mail.message(message_id)
    except Exception as exc:
        raise _missing_message(exc, message_id) or _failure(exc) from None
    doc = _body_document(msg.body or "")
    head = {"id": msg.id, "subject": msg.subject, "from": msg.sender, "to": msg.to,
            "date": iso_time(msg.date), "unread": not bool(msg.flags.get("seen", False))}
    if msg.attachments:   # named so the model knows they exist; their content is not read here
        head["attachments"] = [{k: v for k, v in a.items() if v not in (None, "")} for a in msg.attachments]
    if find is not None:
        return {**head, **_find(doc, find, offset, limit or 10)}
    from mcp_nextcloud import reader

    total = len(doc.text)
    if offset and offset >= total:
        raise misuse(f"offset {offset} is past the end of the body ({total} characters). Use a smaller offset.",
                     status=ToolStatus.OFFSET_PAST_END)
    body = reader.page(doc, offset, limit or READ_CHARS).to_dict()
    return {**head, "body": body["content"], "offset": offset, "total": total, "truncated": body["truncated"],
            "nextOffset": body["nextOffset"]}


def _body_document(body: str) -> Any:
    """The body as a reader Document: HTML bodies become text; plain text stays as it is."""
    from mcp_nextcloud import reader

    looks_html = "<" in body and any(tag in body.lower() for tag in ("<html", "<p", "<div", "<br", "<body"))
    name = "message.html" if looks_html else "message.txt"
    try:
        return reader.extract(body.encode("utf-8"), name)
    except reader.ReaderError:
        return reader.extract(b" ", "message.txt")


def _find(doc: Any, query: str, offset: int, limit: int) -> dict[str, Any]:
    from mcp_nextcloud import reader

    if not query.strip():
        raise misuse("find is empty: give words to look for, or omit find.",
                     status=ToolStatus.BAD_FIND)
    try:
        res = reader.find(doc, query, limit=10_000)
    except ValueError as exc:
        raise misuse(f"find: {exc}.", status=ToolStatus.BAD_FIND) from None
    after = [m for m in res.matches if m.offset >= offset]
    shown = after[:limit]
    out: dict[str, Any] = {"query": query, "matches": [m.to_dict() for m in shown], "total": res.total,
                           "truncated": len(after) > limit}
    if len(after) > limit:
        out["nextOffset"] = shown[-1].offset + max(1, shown[-1].length)
    return out


def people(ctx: ServerContext, name: str, limit: int = 10) -> list[dict[str, Any]]:
    """People Mail can write to whose name or address contains `name`, insensitive to case and accents.

    Mail's own recipient suggestions (contacts and addresses collected from
    mail) first, then the address books and accounts as contacts_search finds
    them (server.tools.people.lookup: Nextcloud's CardDAV search is accent-sensitive,
    so cards are matched on our side).
    """
    from mcp_nextcloud.server.tools.people import lookup as directory

    found: dict[str, dict[str, Any]] = {}
    try:
        suggestions = ctx.client().mail.autocomplete(name)
    except Exception as exc:
        raise _failure(exc) from None
    for r in suggestions:
        found.setdefault(r.email.casefold(), {"name": r.label or None, "email": r.email,
                                              "source": r.source or "mail"})
    matches, _ = directory.search(ctx, name)
    for person in matches:
        for address in person.emails:
            found.setdefault(address.casefold(), {"name": person.name or None, "email": address,
                                                  "source": "contacts"})
    return list(found.values())[:limit]


def is_known(ctx: ServerContext, address: str) -> bool:
    """Whether Mail or the address books know this exact address (what mail_compose accepts without asking)."""
    from mcp_nextcloud.server.tools.people import lookup as directory

    wanted = address.strip().casefold()
    try:
        suggestions = ctx.client().mail.autocomplete(wanted.split("@", 1)[0] or wanted)
    except Exception as exc:
        raise _failure(exc) from None
    if any(r.email.casefold() == wanted for r in suggestions):
        return True
    matches, _ = directory.search(ctx, wanted)
    return any(a.casefold() == wanted for p in matches for a in p.emails)
