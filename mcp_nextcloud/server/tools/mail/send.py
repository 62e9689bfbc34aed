"""The writing side of the mail tools: compose (a preview held by the server), send and draft (app-only).

mail_compose refuses a recipient that is neither known to Mail or the address
books nor typed out by the user: an address assembled from a display name
("Jane Doe" -> jane.doe@acme.com) reaches a stranger or nobody. mail_send and
mail_draft act only on a composed message, by id, with the token that reached
the preview app in the compose result's `_meta`.
"""
from __future__ import annotations

import secrets
from typing import Any

from mcp_nextcloud.nextcloud.errors import Category
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.context import ServerContext
from mcp_nextcloud.server.errors import ToolFailure, misuse, refused
from mcp_nextcloud.server.tools.people import lookup as people
from mcp_nextcloud.server.tools.mail.compose import TOKEN_META_KEY, Composed, ComposedStore, rate_limited
from mcp_nextcloud.server.tools.mail.mailbox import _failure, is_known, mail_accounts

MAX_RECIPIENTS = 50
MAX_BODY_CHARS = 100_000


def owner_of(ctx: ServerContext) -> str:
    """The Nextcloud account a composed message belongs to (never shown in any result)."""
    account = ctx.account
    return f"{getattr(account, 'user', '')}@{getattr(account, 'url', '')}"


def _addresses(field: str, values: list[str] | None) -> list[str]:
    """Each recipient as one addr-spec (people.address: the rule every tool that contacts people shares)."""
    return people.addresses(field, values, "mail_contacts")


def _check_recipients(ctx: ServerContext, wanted: list[str], typed: set[str]) -> list[str]:
    """The addresses the user typed that Mail does not know; refuse any other unknown address."""
    return people.check_known(wanted, typed, lambda mail: is_known(ctx, mail), "mail_contacts", "to/cc/bcc")


def _sender(ctx: ServerContext, from_address: str | None) -> Any:
    accounts = mail_accounts(ctx)
    if from_address is None:
        return accounts[0]
    for account in accounts:
        if from_address.casefold() in [account.email.casefold(), *(a.casefold() for a in account.aliases)]:
            return account
    raise misuse(f"sender {from_address!r} is not one of the user's mail accounts ("
                 f"{', '.join(a.email for a in accounts)}).", status=ToolStatus.UNKNOWN_SENDER)


def compose(ctx: ServerContext, store: ComposedStore, *, to: list[str], cc: list[str] | None,
            bcc: list[str] | None, subject: str, body: str, typed_by_user: list[str] | None,
            from_address: str | None, replaces: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The preview (payload) and the app-only `_meta` carrying the send token."""
    recipients = {"to": _addresses("to", to), "cc": _addresses("cc", cc), "bcc": _addresses("bcc", bcc)}
    everyone = recipients["to"] + recipients["cc"] + recipients["bcc"]
    if not recipients["to"]:
        raise misuse("to is empty: name at least one recipient.", status=ToolStatus.NO_RECIPIENT)
    if len(everyone) > MAX_RECIPIENTS:
        raise misuse(f"{len(everyone)} recipients; at most {MAX_RECIPIENTS}.",
                     status=ToolStatus.TOO_MANY_RECIPIENTS)
    if len(body) > MAX_BODY_CHARS:
        raise misuse(f"body is {len(body)} characters; at most {MAX_BODY_CHARS}.",
                     status=ToolStatus.BODY_TOO_LONG)
    typed = {a.casefold() for a in _addresses("typedByUser", typed_by_user)}
    unverified = _check_recipients(ctx, everyone, typed)
    account = _sender(ctx, from_address)
    msg = store.add(Composed(id=secrets.token_urlsafe(9), owner=owner_of(ctx), account_id=account.id,
                             sender=from_address or account.email, to=recipients["to"], cc=recipients["cc"],
                             bcc=recipients["bcc"], subject=subject, body=body, unverified=unverified),
                    replaces=replaces)
    payload: dict[str, Any] = {
        "id": msg.id, "from": msg.sender, "to": msg.to, "cc": msg.cc or None, "bcc": msg.bcc or None,
        "subject": msg.subject, "body": msg.body, "recipients": msg.recipients_digest, "sent": False,
        "hint": "Nothing is sent yet. The user reviews this preview and sends it (or saves it as a draft) with "
                "its buttons; you cannot send it yourself. If no preview appears, tell the user to send it from "
                "Nextcloud Mail.",
    }
    if unverified:
        payload["warnings"] = [f"Typed by the user, unknown to Mail and the contacts: {', '.join(unverified)}. "
                               "Ask the user to check the spelling before sending."]
    return payload, {TOKEN_META_KEY: msg.token}


def send(ctx: ServerContext, store: ComposedStore, *, composed_id: str, token: str,
         recipients: str) -> dict[str, Any]:
    """Send a composed message once; a second call reports it as already sent."""
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError

    owner = owner_of(ctx)
    msg = store.take(composed_id, owner, token, recipients)
    if msg.sent:
        return {"id": msg.id, "sent": True, "alreadySent": True, "to": msg.to,
                "hint": "This message was sent already; it was not sent again."}
    store.check_rate(owner)
    try:
        done = ctx.client().mail.send(msg.account_id, msg.sender, msg.to, msg.subject, msg.body, cc=msg.cc,
                                      bcc=msg.bcc)
    except NextcloudError as exc:
        if exc.status == 429:
            raise rate_limited(None) from None
        if exc.code is ErrorCode.UNKNOWN_OUTCOME:
            msg.sent = True   # never risk a second copy: the Sent mailbox tells what happened
            raise refused("The connection failed after the message was handed to Mail: it may or may not have "
                          f"been sent. Check with mail_search(mailbox='Sent', subject={msg.subject[:60]!r}); "
                          "this preview will not send it again.",
                          status=ToolStatus.UNKNOWN_OUTCOME) from None
        if exc.status == 500:
            raise _not_sent(msg, exc.detail or "") from None
        raise _failure(exc) from None
    msg.sent = True
    store.record_send(owner)
    out = {"id": msg.id, "sent": True, "to": msg.to, "subject": msg.subject,
           "hint": "Sent. mail_search(mailbox='Sent') lists the copy in the Sent mailbox."}
    if not done.copied:
        out["hint"] = ("Sent, but Mail could not copy it to the Sent mailbox yet; Mail copies it there itself "
                       "later. Do not send it again.")
    return out


def _not_sent(msg: Composed, said: str) -> ToolFailure:
    """Mail's 500 for a send, as what it means: Mail keeps it to try again itself, or the mail server refused it.

    Mail's answer does not name the refused address (its log does); a refused recipient fails the whole
    SMTP transaction, so nothing went to anyone, and the same addresses are refused again on every send.
    """
    if "will be retried" in said:
        msg.sent = True   # Mail's outbox sends it later: a second send would be a second copy
        return refused("Mail could not hand the message to the mail server now and keeps it in its outbox; Mail "
                       "sends it again by itself. Tell the user it is queued in Mail, not sent yet; this preview "
                       "will not send it again.", status=ToolStatus.QUEUED_IN_MAIL)
    typed = [a for a in msg.unverified if a in [*msg.to, *msg.cc, *msg.bcc]]
    everyone = ", ".join([*msg.to, *msg.cc, *msg.bcc])
    suspects = (f" Most likely {', '.join(typed)}: typed by the user and unknown to Mail and the contacts."
                if typed else "")
    cause = ("Mail could not send this message and sent it to no one. It gives no reason (HTTP 500); that is "
             "its answer when the mail server refuses a recipient (an unknown mailbox, or a domain the server "
             f"will not relay to), which it then refuses on every send. Recipients: {everyone}.{suspects}")
    action = ("Sending this preview again fails the same way: check the addresses with the user (mail_contacts), "
              "then mail_compose again. If every address is right, tell the user to look at Mail's outbox in "
              "Nextcloud, where Mail keeps the failed message")
    return ToolFailure(cause, action, category=Category.REFUSED, status=ToolStatus.RECIPIENT_REFUSED)


def draft(ctx: ServerContext, store: ComposedStore, *, composed_id: str, token: str) -> dict[str, Any]:
    """Save a composed message as a draft in Mail (once: a second call returns the same draft)."""
    msg = store.take(composed_id, owner_of(ctx), token, None)
    if msg.draft_id is None:
        try:
            saved = ctx.client().mail.save_draft(msg.account_id, msg.subject, msg.body, msg.to,
                                                 cc=msg.cc, bcc=msg.bcc)
        except Exception as exc:
            raise _failure(exc) from None
        msg.draft_id, msg.draft_in_imap = saved.id, saved.in_imap
    hint = ("Saved as a draft in the Drafts mailbox; nothing was sent." if msg.draft_in_imap else
            "Saved as a draft in Mail; nothing was sent. It is not in the Drafts mailbox yet: Mail's background "
            "job moves it there (every five minutes where the server runs its cron).")
    return {"id": msg.id, "draft": msg.draft_id, "sent": False, "to": msg.to, "hint": hint}
