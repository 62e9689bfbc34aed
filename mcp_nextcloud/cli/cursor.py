"""CLI cursors: the tool's cursor wrapped in an opaque token bound to the query and the account.

A token replayed with other filters or another account would page through a
different result set and silently skip or repeat records; `unwrap` refuses
it instead. --limit is not part of the binding: changing the page size
between pages is fine.
"""
from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from mcp_nextcloud.cli.output import CliError

# Arguments that move through the result set rather than choose it.
_NOT_BOUND = ("cursor", "limit")


def binding(tool: str, arguments: dict[str, Any], account: Any) -> str:
    """A short digest of what selects the records: the tool, its filters and the account."""
    query = {k: v for k, v in arguments.items() if k not in _NOT_BOUND}
    who = f"{getattr(account, 'url', '')}|{getattr(account, 'user', '')}"
    raw = json.dumps([tool, query, who], sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()[:16]


def wrap(tool_cursor: str, bound_to: str) -> str:
    raw = json.dumps([bound_to, tool_cursor], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def unwrap(token: str, bound_to: str) -> str:
    """The tool cursor inside `token`; an error when it is damaged or belongs to another query/account."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        bound, inner = json.loads(raw)
    except (ValueError, TypeError):
        raise CliError("--cursor is not a cursor this command made: pass page.next_cursor exactly as printed",
                       usage=True, status="bad_cursor") from None
    if bound != bound_to or not isinstance(inner, str):
        raise CliError("--cursor belongs to another query or account: repeat the first command with the same "
                       "filters, or drop --cursor to start again", usage=True, status="cursor_mismatch")
    return inner
