"""What a CLI command prints: compact JSON with --json, a readable view otherwise.

One place decides the shapes: a collection is {"items", "page"}, a dry run
is a plan; a failure is rendered by cli/errors.py (`report`). Text from
Nextcloud (names, titles, passages) is printed as data: never interpreted,
and control characters are escaped so a file name cannot drive the terminal.
"""
from __future__ import annotations

import json
import re
from typing import Any

from mcp_nextcloud.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, report
from mcp_nextcloud.cli.console import stderr, stdout

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "CliError", "dump", "emit", "plain", "report"]

def dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")


def plain(value: Any) -> str:
    """Provider text as inert terminal text: control and escape characters shown, not obeyed."""
    text = value if isinstance(value, str) else dump(value)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def emit(payload: dict[str, Any], as_json: bool, *, kind: str) -> int:
    """Print an answer; notes (warnings, hints) go to stderr in the readable view."""
    if as_json:
        print(dump(payload), file=stdout())
        return EXIT_OK
    lines = {"collection": _collection, "plan": _plan}.get(kind, _record)(payload)
    print("\n".join(lines), file=stdout())
    for w in payload.get("warnings") or []:
        print(f"note: {plain(w)}", file=stderr())
    return EXIT_OK


def _fields(item: dict[str, Any]) -> str:
    return "  ".join(f"{k}={plain(v)}" for k, v in item.items())


def _collection(payload: dict[str, Any]) -> list[str]:
    lines = [_fields(item) for item in payload["items"]]
    page = payload["page"]
    more = f"; next page: --cursor {page['next_cursor']}" if page["has_more"] else "; no more"
    lines.append(f"{page['returned']} shown{more}")
    if payload.get("hint"):
        lines.append(f"hint: {plain(payload['hint'])}")
    return lines


def _record(payload: dict[str, Any]) -> list[str]:
    lines, long = [], []
    for key, value in payload.items():
        if key == "warnings":
            continue
        if isinstance(value, str) and ("\n" in value or len(value) > 200):
            long.append(f"--- {key} ---\n{plain(value)}\n---")
        else:
            lines.append(f"{key}: {plain(value)}")
    return lines + long


def _plan(plan: dict[str, Any]) -> list[str]:
    lines = [f"Dry run of {plan['command']}: nothing was written."]
    first = plan.get("wouldWrite")
    if first:
        lines.append(f"It would call {first['call']} with {_fields(first['with'])}")
    else:
        lines.append("It would write nothing: " + plain(plan.get("result", {}).get("hint", "no change needed")))
    lines += [f"effect: {plain(e)}" for e in plan.get("effects", [])]
    if plan.get("needsConfirm"):
        lines.append("Run it again with --confirm instead of --dry-run to do it.")
    return lines
