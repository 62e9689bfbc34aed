"""Mail app API: the OCS routes (/ocs/v2.php/apps/mail: accounts, mailboxes, messages, one message, send)
and the internal web routes no OCS route replaces (/index.php/apps/mail/api: recipient autocompletion,
drafts and moving a draft to IMAP, syncing one mailbox).

Always sends `limit` (the server returns a single message without it) and
builds filters from key:value pairs with URL-encoded values (bare words are
ignored by the server). Sending and saving a draft are never retried, not
even after a 429: Mail's limit is 5 sends per 100 s per user, and a second
attempt could send the message twice.

What the real Mail 5.11 does (seen on ../shared/nextcloud-34 --mail): it lists
a mailbox from its own cache, so a mailbox it never synced (only INBOX, Sent
and the "sync in background" ones are synced by its job) answers HTTP 500
until one `mailboxes/{id}/sync` with init; a saved draft stays in Nextcloud's
database until `drafts/move/{id}`; the drafts route reads `bodyPlain`, not
`body` (a `body` is silently dropped); a send the mail server refuses is a
500 whose text does not say why.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import quote

from .errors import ErrorCode, NextcloudError, error_for
from .http import Transport

SOURCE = "mail"
BASE = "/ocs/v2.php/apps/mail"
WEB = "/index.php/apps/mail/api"
FILTER_KEYS = frozenset({"subject", "from", "to", "cc", "bcc", "body", "tags", "start", "end", "is", "not",
                         "flags", "match", "mentions"})


@dataclass(frozen=True)
class MailAccount:
    id: int
    email: str
    aliases: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Mailbox:
    id: int
    account_id: int
    name: str
    special_use: list[str] = field(default_factory=list)
    unread: int = 0


@dataclass(frozen=True)
class Message:
    id: int
    mailbox_id: int
    subject: str
    sender: str
    to: list[str]
    date: int
    preview: str = ""
    body: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    from_text: str = ""     # names and addresses of the sender, as Mail listed them
    to_text: str = ""       # names and addresses of the To and Cc recipients
    attachments: list[dict[str, Any]] = field(default_factory=list)   # {name, type, size} of each attached file


@dataclass(frozen=True)
class SyncResult:
    """What one mailbox sync did: `complete` is False while Mail is still fetching (it said so with 202)."""

    new: int = 0
    complete: bool = True


@dataclass(frozen=True)
class Draft:
    """A saved draft: Mail's local id, and whether it reached the IMAP Drafts mailbox."""

    id: int
    in_imap: bool


@dataclass(frozen=True)
class SendResult:
    """A send Mail took: `copied` is False when the mail went out but Mail could not yet copy it to Sent (202)."""

    copied: bool = True
    note: str = ""


@dataclass(frozen=True)
class Recipient:
    """An address Mail knows: from the user's contacts ("contacts") or collected from mail ("collector")."""

    email: str
    label: str = ""
    source: str = ""


def _addresses(value: Any) -> list[str]:
    out = []
    for a in value or []:
        if isinstance(a, dict):
            out.append(str(a.get("email") or a.get("label") or ""))
        elif a:
            out.append(str(a))
    return [a for a in out if a]


def _people_text(*groups: Any) -> str:
    return " ".join(f"{a.get('label') or ''} {a.get('email') or ''}" if isinstance(a, dict) else str(a)
                    for group in groups for a in group or [])


def message_from_json(d: dict[str, Any]) -> Message:
    sender = _addresses(d.get("from"))
    return Message(id=int(d.get("databaseId") or d.get("id") or 0), mailbox_id=int(d.get("mailboxId") or 0),
                   subject=str(d.get("subject") or ""), sender=sender[0] if sender else "",
                   to=_addresses(d.get("to")), date=int(d.get("dateInt") or d.get("date") or 0),
                   preview=str(d.get("previewText") or ""),
                   body=d.get("body") if isinstance(d.get("body"), str) else None,
                   flags=flags if isinstance(flags := d.get("flags"), dict) else {},
                   from_text=_people_text(d.get("from")), to_text=_people_text(d.get("to"), d.get("cc")),
                   attachments=[{"name": str(a.get("fileName") or ""), "type": str(a.get("mime") or ""),
                                 "size": a.get("size")} for a in d.get("attachments") or [] if isinstance(a, dict)])


def build_filter(filters: Mapping[str, str] | None) -> str:
    """{'subject': 'q4 budget', 'is': 'unread'} -> 'subject:q4%20budget is:unread' (values URL-encoded)."""
    parts = []
    for key, value in (filters or {}).items():
        if key not in FILTER_KEYS:
            raise NextcloudError(ErrorCode.BAD_REQUEST, f"Unknown mail filter '{key}'. Use one of "
                                 f"{', '.join(sorted(FILTER_KEYS))}.")
        parts.append(f"{key}:{quote(str(value), safe=',')}")
    return " ".join(parts)


class Mail:
    """Mail calls of one account."""

    def __init__(self, transport: Transport) -> None:
        self._t = transport

    def _call(self, method: str, url: str, *, path: str, params: Any = None, body: Any = None) -> Any:
        resp = self._t.request(method, BASE + url, source=SOURCE, path=path,
                               params={"format": "json", **(params or {})}, json_body=body)
        return self._t.ocs_data(resp, source=SOURCE, path=path)

    def accounts(self) -> list[MailAccount]:
        return [MailAccount(id=int(a["id"]), email=str(a.get("email") or ""),
                            aliases=[str(x.get("email") or "") for x in a.get("aliases") or [] if isinstance(x, dict)])
                for a in self._call("GET", "/account/list", path="mail accounts") or []]

    def mailboxes(self, account_id: int, *, refresh: bool = False) -> list[Mailbox]:
        """The account's mailboxes as Mail knows them. Mail refreshes its folder list from IMAP at most every two
        hours; `refresh` asks it to do so now (the web UI's forceSync), e.g. for a folder made elsewhere."""
        if refresh:
            resp = self._t.request("GET", WEB + "/mailboxes", source=SOURCE, path="mailboxes",
                                   params={"accountId": int(account_id), "forceSync": "true"})
            body = self._t.json(resp, source=SOURCE, path="mailboxes")
            data = body.get("mailboxes") if isinstance(body, dict) else None
        else:
            data = self._call("GET", "/ocs/mailboxes", path="mailboxes", params={"accountId": int(account_id)})
        out = []
        for m in data or []:
            special = m.get("specialUse") or []
            out.append(Mailbox(id=int(m.get("databaseId") or m.get("id") or 0),
                               account_id=int(m.get("accountId") or account_id),
                               name=str(m.get("displayName") or m.get("name") or ""),
                               special_use=[str(s) for s in special] if isinstance(special, list) else [],
                               unread=int(m.get("unread") or 0)))
        return out

    def messages(self, mailbox_id: int, *, limit: int = 20, filters: Mapping[str, str] | None = None,
                 cursor: int | None = None) -> list[Message]:
        """Newest messages of a mailbox, at most `limit` (1..100), optionally filtered by key:value pairs.

        A mailbox Mail has never synced answers 500 (its cache is empty): it is synced once with init and
        listed again; any other 500 stays an error.
        """
        # view=singleton: Mail's default (threaded) lists only the newest message of each thread, whatever
        # the filter matched, so an older message of a thread could never be found.
        params: dict[str, Any] = {"limit": max(1, min(int(limit), 100)), "view": "singleton"}
        flt = build_filter(filters)
        if flt:
            params["filter"] = flt
        if cursor is not None:
            params["cursor"] = int(cursor)
        url, path = f"/ocs/mailboxes/{int(mailbox_id)}/messages", f"mailbox {mailbox_id}"
        try:
            data = self._list(url, path, params, no_retry=(500,))
        except NextcloudError as exc:
            if exc.status != 500:
                raise
            self.sync(mailbox_id, init=True)
            data = self._list(url, path, params, no_retry=())
        return [message_from_json(m) for m in data or []]

    def _list(self, url: str, path: str, params: dict[str, Any], *, no_retry: tuple[int, ...]) -> Any:
        resp = self._t.request("GET", BASE + url, source=SOURCE, path=path, params={"format": "json", **params},
                               no_retry=no_retry)
        return self._t.ocs_data(resp, source=SOURCE, path=path)

    def sync(self, mailbox_id: int, *, init: bool = False) -> SyncResult:
        """Ask Mail to fetch what changed on the IMAP server since its last sync of this mailbox (the web UI's
        route). `init` fills the cache of a mailbox Mail never synced; without it such a mailbox is a 428,
        answered here by one init sync."""
        path = f"mailbox {mailbox_id} sync"
        resp = self._t.request("POST", f"{WEB}/mailboxes/{int(mailbox_id)}/sync", source=SOURCE, path=path,
                               json_body={"init": bool(init)}, ok=(200, 202, 428), idempotent=True)
        if resp.status_code == 428:
            return self.sync(mailbox_id, init=True) if not init else SyncResult(complete=False)
        data = self._t.json(resp, source=SOURCE, path=path)
        new = data.get("newMessages") if isinstance(data, dict) else None
        return SyncResult(new=len(new) if isinstance(new, list) else 0, complete=resp.status_code == 200)

    def message(self, message_id: int) -> Message:
        """One message with its body."""
        return message_from_json(self._call("GET", f"/message/{int(message_id)}", path=f"message {message_id}"))

    def send(self, account_id: int, from_email: str, to: list[str], subject: str, body: str, *,
             cc: list[str] | None = None, bcc: list[str] | None = None, is_html: bool = False) -> SendResult:
        """Send a message (not retried, not even after a 429: a repeat would send it twice).

        Mail's 500 carries its own words in `ocs.data` ("An error occurred. Please check the logs." when the
        mail server refused it, "... will be retried" when Mail keeps it to try again): they are the error's
        `detail`, for the caller to tell the two apart.
        """
        check_headers(from_email=from_email, subject=subject, to=to, cc=cc, bcc=bcc)
        payload = {"accountId": int(account_id), "fromEmail": from_email, "subject": subject, "body": body,
                   "isHtml": is_html, "to": _people(to), "cc": _people(cc), "bcc": _people(bcc)}
        resp = self._t.request("POST", BASE + "/message/send", source=SOURCE, path="send mail",
                               params={"format": "json"}, json_body=payload, idempotent=False, no_retry=(429,),
                               ok=(200, 202, 500))
        if resp.status_code == 500:
            raise error_for(SOURCE, 500, path="send mail", detail=_ocs_text(resp) or None)
        data = self._t.ocs_data(resp, source=SOURCE, path="send mail")
        return SendResult(copied=resp.status_code == 200, note=data if isinstance(data, str) else "")

    def autocomplete(self, term: str) -> list[Recipient]:
        """Addresses Mail would suggest for `term`: the user's contacts and the addresses collected from mail."""
        resp = self._t.request("GET", WEB + "/autoComplete", source=SOURCE, path="mail recipients",
                               params={"term": term})
        data = self._t.json(resp, source=SOURCE, path="mail recipients")
        out = []
        for r in data if isinstance(data, list) else []:
            if isinstance(r, dict) and r.get("email"):
                out.append(Recipient(email=str(r["email"]), label=str(r.get("label") or ""),
                                     source=str(r.get("source") or "")))
        return out

    def save_draft(self, account_id: int, subject: str, body: str, to: list[str], *,
                   cc: list[str] | None = None, bcc: list[str] | None = None) -> Draft:
        """Save a plain-text draft and move it to the IMAP Drafts mailbox, as Mail's composer does.

        Mail keeps a saved draft in Nextcloud's database; only `drafts/move/{id}` (or its five-minute
        background job) puts it in IMAP Drafts. Mail reads the text from `bodyPlain` (`body` is ignored).
        """
        check_headers(subject=subject, to=to, cc=cc, bcc=bcc)
        payload = {"accountId": int(account_id), "subject": subject, "bodyPlain": body, "bodyHtml": None,
                   "editorBody": body, "isHtml": False, "to": _people(to), "cc": _people(cc), "bcc": _people(bcc)}
        resp = self._t.request("POST", WEB + "/drafts", source=SOURCE, path="save draft", json_body=payload,
                               idempotent=False, no_retry=(429,))
        data = self._t.json(resp, source=SOURCE, path="save draft")
        try:
            draft_id = int(data["data"]["id"])
        except (KeyError, TypeError, ValueError):
            raise NextcloudError(ErrorCode.INVALID_RESPONSE, "Mail saved no draft id. Check the Drafts mailbox before "
                                 "saving again.") from None
        try:
            self._t.request("POST", f"{WEB}/drafts/move/{draft_id}", source=SOURCE, path="move draft",
                            idempotent=False, no_retry=(429,))
        except NextcloudError:
            return Draft(draft_id, in_imap=False)   # saved; Mail's own job moves it later
        return Draft(draft_id, in_imap=True)


def check_headers(*, subject: str, to: list[str], cc: list[str] | None = None, bcc: list[str] | None = None,
                  from_email: str = "") -> None:
    """Refuse a header value with CR, LF or another control character before it reaches Mail.

    The tools' argument validator already refuses them (every header field is one line); this is the
    last line at the boundary, so no caller can inject a header ("s\r\nBcc: x") into a sent message.
    """
    fields = [("subject", subject), ("from", from_email)]
    fields += [(name, a) for name, group in (("to", to), ("cc", cc), ("bcc", bcc)) for a in group or []]
    for name, value in fields:
        if any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F or ch in "\u2028\u2029" for ch in value):
            raise NextcloudError(ErrorCode.BAD_REQUEST, f"The {name} header holds a line break or control character; "
                                 "a header is one line. Remove it and compose again.")


def _ocs_text(resp: Any) -> str:
    """The text Mail put in `ocs.data` (its reason for a failed send), or ""."""
    try:
        data = resp.json()["ocs"]["data"]
    except (ValueError, KeyError, TypeError):
        return ""
    return data if isinstance(data, str) else ""


def _people(addresses: list[str] | None) -> list[dict[str, str]]:
    return [{"email": e, "label": e} for e in addresses or []]
