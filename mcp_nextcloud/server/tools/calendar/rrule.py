"""Recurrence rules: the one check every RRULE passes, whether the model writes it or another client stored it.

icalendar splits the rule into its parts and dateutil builds it; between
them sits what neither refuses but what hangs or floods an expansion:
INTERVAL=0 (dateutil never advances), COUNT < 1, BY* values out of RFC 5545's
ranges, parts no client means. The real server (Sabre) refuses INTERVAL and
COUNT below 1 with a 500; the rest it stores, so the read side checks too.
Writing, the tools also refuse repeats more often than hourly: no calendar
offers them, and they are how a hostile rule floods every listing.
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any

import icalendar
from dateutil.rrule import rrulestr

FREQS = ("SECONDLY", "MINUTELY", "HOURLY", "DAILY", "WEEKLY", "MONTHLY", "YEARLY")
WRITABLE_FREQS = FREQS[2:]
# RFC 5545 3.3.10: each BY part's allowed values (negative ones count from the end; 0 is never allowed).
_RANGES = {"BYSECOND": (0, 60, False), "BYMINUTE": (0, 59, False), "BYHOUR": (0, 23, False),
           "BYMONTHDAY": (1, 31, True), "BYYEARDAY": (1, 366, True), "BYWEEKNO": (1, 53, True),
           "BYMONTH": (1, 12, False), "BYSETPOS": (1, 366, True)}
_KNOWN = {"FREQ", "UNTIL", "COUNT", "INTERVAL", "BYDAY", "WKST", *_RANGES}
_WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
_BYDAY = re.compile(r"^([+-]?)(\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)$")


class BadRule(ValueError):
    """A rule no expansion should run: the message says which part and why (shown to the model)."""


def _ints(parts: dict[str, Any], name: str) -> list[int]:
    try:
        return [int(v) for v in parts.get(name, [])]
    except (TypeError, ValueError):
        raise BadRule(f"{name} must be whole numbers") from None


def _check_by(parts: dict[str, Any]) -> None:
    for name, (low, high, signed) in _RANGES.items():
        for value in _ints(parts, name):
            ok = low <= abs(value) <= high and value != 0 if signed else low <= value <= high
            if not ok:
                span = f"±{low}..{high}" if signed else f"{low}..{high}"
                raise BadRule(f"{name}={value} is outside {span}")
    freq = str((parts.get("FREQ") or [""])[0]).upper()
    in_month = freq == "MONTHLY" or (freq == "YEARLY" and parts.get("BYMONTH"))
    for day in parts.get("BYDAY", []):
        found = _BYDAY.match(str(day).upper())
        if not found or (found.group(2) is not None and not 1 <= int(found.group(2)) <= 53):
            raise BadRule(f"BYDAY={day} is not a weekday (MO..SU, optionally numbered like 1MO or -1FR)")
        if found.group(2) is None:
            continue
        # RFC 5545 3.3.10: a numbered weekday only in MONTHLY or YEARLY rules; a month has at most five of each.
        if freq not in ("MONTHLY", "YEARLY"):
            raise BadRule(f"BYDAY={day} is numbered, which only a MONTHLY or YEARLY rule allows")
        if in_month and int(found.group(2)) > 5:
            raise BadRule(f"BYDAY={day}: a month has at most five of each weekday (use 1..5 or -1..-5)")
    wkst = [str(w).upper() for w in parts.get("WKST", [])]
    if any(w not in _WEEKDAYS for w in wkst):
        raise BadRule(f"WKST={wkst[0]} is not a weekday")


# BYSETPOS makes dateutil build every candidate of a period at once: a YEARLY rule with every hour, minute
# and second is 31 million of them. Above this many candidates per period the rule is refused.
MAX_SETPOS_CANDIDATES = 50_000
_DAYS_PER_PERIOD = {"YEARLY": 366, "MONTHLY": 31, "WEEKLY": 7}


def _check_setpos(parts: dict[str, Any], freq: str) -> None:
    if "BYSETPOS" not in parts:
        return
    days = len(parts.get("BYDAY", [])) * 53 if parts.get("BYDAY") else _DAYS_PER_PERIOD.get(freq, 1)
    candidates = days * max(1, len(parts.get("BYHOUR", []))) * max(1, len(parts.get("BYMINUTE", []))) \
        * max(1, len(parts.get("BYSECOND", [])))
    if candidates > MAX_SETPOS_CANDIDATES:
        raise BadRule(f"BYSETPOS over {candidates} candidates per period is more than {MAX_SETPOS_CANDIDATES}")


def check_rule(text: str, start: dt.date | dt.datetime, *, writing: bool) -> str:
    """The rule's text without an RRULE: prefix; BadRule naming the part that is wrong.

    `writing` adds the tools' own limit (repeats at most hourly); a stored rule only needs to be valid.
    """
    rule = text.strip()
    if rule.upper().startswith("RRULE:"):
        rule = rule[6:]
    try:
        parts = {k.upper(): v for k, v in icalendar.vRecur.from_ical(rule).items()}
    except (ValueError, TypeError) as exc:
        raise BadRule(str(exc) or "not an RRULE") from None
    unknown = sorted(set(parts) - _KNOWN)
    if unknown:
        raise BadRule(f"{unknown[0]} is not an RRULE part")
    freq = str((parts.get("FREQ") or [""])[0]).upper()
    if freq not in FREQS:
        raise BadRule("FREQ is missing or unknown (DAILY, WEEKLY, MONTHLY or YEARLY)")
    if writing and freq not in WRITABLE_FREQS:
        raise BadRule(f"FREQ={freq} repeats more often than hourly, which no calendar offers")
    if any(n < 1 for n in _ints(parts, "INTERVAL")):
        raise BadRule("INTERVAL must be 1 or more")
    if any(n < 1 for n in _ints(parts, "COUNT")):
        raise BadRule("COUNT must be 1 or more")
    if "COUNT" in parts and "UNTIL" in parts:
        raise BadRule("COUNT and UNTIL cannot both be given")
    _check_by(parts)
    _check_setpos(parts, freq)
    anchor = start if isinstance(start, dt.datetime) else dt.datetime(start.year, start.month, start.day)
    try:
        rrulestr(rule, dtstart=anchor)
    except (ValueError, TypeError, OverflowError) as exc:
        raise BadRule(str(exc) or "dateutil cannot build it") from None
    return rule


def stored_rules(comp: Any) -> list[str]:
    """The RRULE texts of a stored component (a component may hold several)."""
    raw = comp.get("RRULE")
    if raw is None:
        return []
    return [r.to_ical().decode("utf-8", "replace") for r in (raw if isinstance(raw, list) else [raw])]
