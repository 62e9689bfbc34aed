"""mail_search's filters in Mail's terms, and what Mail's own matching misses (seen on the real Mail 5.11).

Mail matches `subject:`, `from:` and `to:` in its database letter for letter:
case is ignored for unaccented letters only, so "élodie" does not find
"Élodie" and "reunion" does not find "Réunion". `body:` goes to the IMAP
server: Mail's IMAP library refuses a non-ASCII word (Mail answers 500), and
Dovecot compares accents exactly too ("pret" does not find "prêt"). So a value
with accented letters is sent to Mail as its longest run without them
("Élodie" -> "lodie", "Thé aussi" -> "aussi") and the messages are matched
here, insensitive to case and accents: on their names and subject, and for a
body on Mail's preview of it (a message whose preview cannot confirm it is
kept and named in a warning); an empty answer to an unaccented value says the
accents matter. Given both `subject:` and `body:`, Mail answers messages that
match either (MessageMapper: "a combination of both results"); mail_search means
both, so the subject is then matched here.
"""
from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from unidecode import unidecode

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.errors import misuse

_ASCII_RUN = re.compile(r"[A-Za-z0-9@._+\- ]+")


def fold(text: str) -> str:
    """Case and accents away, whitespace squeezed: how two spellings of a word are compared here."""
    return " ".join(unidecode(text).casefold().split())


def mail_part(value: str) -> str:
    """What Mail is asked for a subject/from/to value: itself when it is ASCII, else its longest ASCII run."""
    value = value.strip()
    if value.isascii():
        return value
    runs = sorted((r.strip() for r in _ASCII_RUN.findall(value)), key=len, reverse=True)
    return runs[0] if runs and len(runs[0]) >= 2 else ""


@dataclass(frozen=True)
class SearchFilters:
    """What mail_search was asked, in Mail's terms."""

    sender: str | None = None
    to: str | None = None
    subject: str | None = None
    body: str | None = None
    after: str | None = None
    before: str | None = None
    unread: bool | None = None

    def _people_fields(self) -> tuple[tuple[str, str | None], ...]:
        return (("from", self.sender), ("to", self.to), ("subject", self.subject))

    def _text_fields(self) -> tuple[tuple[str, str | None], ...]:
        return (*self._people_fields(), ("body", self.body))

    def _subject_here(self) -> bool:
        """Mail ORs a subject with a body; both given, the subject is matched here instead."""
        return bool(self.subject and self.body and self.subject.strip() and mail_part(self.body))

    def to_mail(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for key, value in self._text_fields():
            if value and mail_part(value) and not (key == "subject" and self._subject_here()):
                out[key] = mail_part(value)
        if self.after:
            out["start"] = str(_epoch(self.after, "after"))
        if self.before:
            out["end"] = str(_epoch(self.before, "before", end_of_day=True))
        if self.unread is not None:
            out["is" if self.unread else "not"] = "unread"
        return out

    def narrowed_here(self) -> bool:
        """Whether some value is matched here after Mail (it has accented letters Mail would compare exactly)."""
        return self._subject_here() or any(value and not value.strip().isascii() for _, value in self._text_fields())

    def body_unconfirmed(self, msg: Any) -> bool:
        """An accented body value that Mail's preview of `msg` does not show (Mail matched only a part of it)."""
        return bool(self.body and not self.body.strip().isascii() and fold(self.body) not in fold(msg.preview))

    def caveat(self, found: bool) -> str:
        """What an empty answer may owe to Mail's exact matching of unaccented words."""
        plain = [v.strip() for _, v in self._text_fields() if v and v.strip().isascii() and v.strip()]
        if found or not plain:
            return ""
        return (" Mail compares words letter for letter, accents included: "
                f"{plain[0]!r} does not find the same word written with accents; search again with the accents "
                "(they are then ignored), or with a part of the word that has none.")


def matches(filters: SearchFilters, msg: Any) -> bool:
    """Whether a message Mail listed also matches the accented values, insensitive to case and accents."""
    fields = {"from": getattr(msg, "from_text", msg.sender), "to": getattr(msg, "to_text", " ".join(msg.to)),
              "subject": msg.subject}
    for key, value in filters._people_fields():
        here = not (value or "").strip().isascii() or (key == "subject" and filters._subject_here())
        if value and here and fold(value) not in fold(fields[key]):
            return False
    return True


def _epoch(value: str, name: str, *, end_of_day: bool = False) -> int:
    """An ISO date or date-time (UTC unless it says otherwise) as unix seconds."""
    try:
        if len(value) == 10:
            day = dt.date.fromisoformat(value)
            moment = dt.datetime.combine(day, dt.time.max if end_of_day else dt.time.min, dt.timezone.utc)
        else:
            moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=dt.timezone.utc)
    except ValueError:
        raise misuse(f"{name} must be an ISO date like 2026-01-31 (or a date-time with its zone).",
                     status=ToolStatus.BAD_DATE) from None
    return int(moment.timestamp())
