"""What a CLI command prints: compact JSON with --json, a readable view otherwise; errors for each audience.

One place decides the shapes: a collection is {"items", "page"}, a dry run
is a plan, a failure is {"error": {...}} on stdout with --json (so an agent
parses one stream) and one plain sentence on stderr without it. Text from
Nextcloud (names, titles, passages) is printed as data: never interpreted,
and control characters are escaped so a file name cannot drive the terminal.
"""
from __future__ import annotations

import json
import re
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class CliError(Exception):
    """A failure to report: `usage` means the arguments were wrong (exit 2, nothing was done)."""

    def __init__(self, message: str, *, usage: bool = False, status: str | None = None,
                 kind: str | None = None, retry: bool = False) -> None:
        super().__init__(message)
        self.usage = usage
        self.status = status or ("bad_argument" if usage else "failed")
        self.kind = kind or ("misuse" if usage else "fault")
        self.retry = retry


def dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


# Sentences written for an agent ("Do not retry.", "stop and report it") say nothing useful to a person.
# Compiled on first use (re caches it): only a failure needs it.
_AGENT_ONLY = (r"\s*[^.]*\b(?:[Dd]o not retry|[Rr]etry once|stop and report|[Cc]all (?:files|deck|mail)_"
               r"\w+|tools/list|the tool's schema)[^.]*\.")


def for_person(text: str) -> str:
    """An instruction written for an agent, as a person at a terminal reads it."""
    out = re.sub(_AGENT_ONLY, "", text).strip()
    return out or text


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")


def plain(value: Any) -> str:
    """Provider text as inert terminal text: control and escape characters shown, not obeyed."""
    text = value if isinstance(value, str) else dump(value)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def fail(err: CliError, as_json: bool) -> int:
    if as_json:
        print(dump({"error": {"message": str(err), "kind": err.kind, "status": err.status, "retry": err.retry}}))
    else:
        print(f"error: {for_person(str(err))}", file=sys.stderr)
    return EXIT_USAGE if err.usage else EXIT_FAILED


def emit(payload: dict[str, Any], as_json: bool, *, kind: str) -> int:
    """Print an answer; notes (warnings, hints) go to stderr in the readable view."""
    if as_json:
        print(dump(payload))
        return EXIT_OK
    lines = {"collection": _collection, "plan": _plan}.get(kind, _record)(payload)
    print("\n".join(lines))
    for w in payload.get("warnings") or []:
        print(f"note: {plain(w)}", file=sys.stderr)
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
