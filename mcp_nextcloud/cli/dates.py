"""Dates as a person types them: `today`, `tomorrow`, `yesterday` (alone or before a time) for any date option.

The tools take ISO dates ("2026-12-24", "2026-12-10T14:00 Europe/Paris"); the
CLI turns a leading day word into today's date on this machine's calendar, so
`calendar list --start tomorrow` and `calendar create --start "today 14:00 Europe/Paris"`
work. Anything else is passed on untouched: the tool checks it.
"""
from __future__ import annotations

import datetime as dt
import re

# The tool arguments that hold a date (a day word is accepted in each).
DATE_ARGUMENTS = frozenset({"start", "end", "due", "dueBefore", "since", "after", "before", "modifiedAfter"})
_DAY_WORD = re.compile(r"^\s*(today|tomorrow|yesterday)\b(?:\s+(?=\d))?", re.IGNORECASE)
_SHIFT = {"today": 0, "tomorrow": 1, "yesterday": -1}


def today() -> dt.date:
    return dt.date.today()


def resolve(value: str) -> str:
    """`tomorrow` -> "2026-12-05"; `today 14:00Z` -> "2026-12-04T14:00Z"; anything else unchanged."""
    match = _DAY_WORD.match(value)
    if match is None:
        return value
    day = (today() + dt.timedelta(days=_SHIFT[match.group(1).lower()])).isoformat()
    rest = value[match.end():]
    return f"{day}T{rest}" if rest else day


def resolve_all(values: dict[str, object]) -> dict[str, object]:
    """Every date argument of a tool call with its day word resolved."""
    return {k: resolve(v) if k in DATE_ARGUMENTS and isinstance(v, str) else v for k, v in values.items()}
