"""Composed messages: what mail_compose showed the user, held by the server until mail_send or mail_draft.

The model never hands text to mail_send: it composes, the preview app shows the
message, and the app sends it by id. Each composed message is bound to the
account it was composed for, expires, is replaced (not edited) when composed
again, and carries a send token that travels only in the result's `_meta` — the
part of a tool result an Apps host gives the app and not the model. A send
whose recipients differ from what the preview showed is refused.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import ToolFailure, misuse, refused

COMPOSED_TTL_S = 30 * 60          # a preview older than this is composed again, not sent
SEND_LIMIT, SEND_WINDOW_S = 5, 100.0   # Mail's own limit per user (MailController::send, UserRateLimit)
TOKEN_META_KEY = "mcp-nextcloud/sendToken"
STALE = "Call mail_compose again and let the user review the new preview."


@dataclass
class Composed:
    """One message as previewed: who it goes to, what it says, from which Mail account."""

    id: str
    owner: str                      # the Nextcloud account (user@server) it was composed for
    account_id: int                 # the Mail account that sends it
    sender: str
    to: list[str]
    cc: list[str]
    bcc: list[str]
    subject: str
    body: str
    unverified: list[str]           # addresses the user typed that Mail does not know yet
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24), repr=False)
    created: float = field(default_factory=time.monotonic)
    sent: bool = False
    draft_id: int | None = None
    draft_in_imap: bool = False

    @property
    def recipients_digest(self) -> str:
        """What the preview showed of the recipients, in a form a later send can compare."""
        people = {"to": sorted(a.casefold() for a in self.to), "cc": sorted(a.casefold() for a in self.cc),
                  "bcc": sorted(a.casefold() for a in self.bcc)}
        return hashlib.sha256(json.dumps(people, sort_keys=True).encode()).hexdigest()[:16]


class ComposedStore:
    """The short-lived composed messages of one server process (thread-safe; sync tools run in threads)."""

    def __init__(self, ttl_s: float = COMPOSED_TTL_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._items: dict[str, Composed] = {}
        self._replaced: set[str] = set()
        self._sends: dict[str, deque[float]] = {}
        self._lock = threading.Lock()
        self._ttl = ttl_s
        self._clock = clock

    def add(self, message: Composed, replaces: str | None = None) -> Composed:
        """Keep `message`; a previous preview it replaces can no longer be sent."""
        with self._lock:
            self._expire()
            message.created = self._clock()
            if replaces:
                old = self._items.pop(replaces, None)
                if old is not None and old.owner == message.owner:
                    self._replaced.add(replaces)
            self._items[message.id] = message
            return message

    def take(self, composed_id: str, owner: str, token: str, recipients: str | None) -> Composed:
        """The composed message a send or draft may act on, or a refusal saying why not."""
        with self._lock:
            self._expire()
            if composed_id in self._replaced:
                raise misuse("This preview was replaced by a newer mail_compose; send the newer one. " + STALE,
                             status=ToolStatus.COMPOSED_REPLACED)
            msg = self._items.get(composed_id)
            if msg is None or msg.owner != owner:
                raise misuse(f"No composed message {composed_id!r} (it expired after "
                             f"{int(self._ttl // 60)} minutes, or was composed for another account). " + STALE,
                             status=ToolStatus.COMPOSED_UNKNOWN)
            if not hmac.compare_digest(msg.token, token or ""):
                raise refused("mail_send and mail_draft run only from the preview app, with the user's "
                              "confirmation. Show the user the mail_compose preview; do not call this tool "
                              "yourself.", status=ToolStatus.NOT_CONFIRMED)
            if recipients is not None and recipients != msg.recipients_digest:
                raise refused("The recipients changed since the preview the user confirmed. " + STALE,
                              status=ToolStatus.RECIPIENTS_CHANGED)
            return msg

    def check_rate(self, owner: str) -> None:
        """Refuse a send Mail would refuse (5 per 100 s per user), saying how long to wait."""
        with self._lock:
            sends = self._sends.setdefault(owner, deque())
            now = self._clock()
            while sends and now - sends[0] >= SEND_WINDOW_S:
                sends.popleft()
            if len(sends) >= SEND_LIMIT:
                raise rate_limited(SEND_WINDOW_S - (now - sends[0]))

    def record_send(self, owner: str) -> None:
        with self._lock:
            self._sends.setdefault(owner, deque()).append(self._clock())

    def _expire(self) -> None:
        now = self._clock()
        for key in [k for k, m in self._items.items() if now - m.created > self._ttl]:
            del self._items[key]


def rate_limited(wait_s: float | None) -> ToolFailure:
    """Mail's send limit as an instruction: how long to wait, and never a retry loop."""
    wait = f"in about {max(1, int(wait_s + 0.999))} s" if wait_s is not None else "in a couple of minutes"
    return refused(f"Mail allows {SEND_LIMIT} sends per {int(SEND_WINDOW_S)} s per account and that limit is "
                   f"reached. Tell the user the message was not sent; it can be sent {wait} from the same "
                   "preview.", status=ToolStatus.RATE_LIMITED)
