"""What a CLI command prints: compact JSON with --json, a readable view otherwise.

One place decides the shapes: a collection is {"items", "page"}, a dry run
is a plan; a failure is rendered by cli/errors.py (`report`). The readable
view (tables, `key: value`, names beside ids) is cli/human.py; notes, hints
and warnings are said in the person's voice (cli/voice.py). Text from
Nextcloud (names, titles, passages) is printed as data: never interpreted,
and control characters are escaped so a file name cannot drive the terminal.
"""
from __future__ import annotations

import json
from typing import Any

from mcp_nextcloud.cli import human
from mcp_nextcloud.cli.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, CliError, report
from mcp_nextcloud.cli.console import stderr, stdout
from mcp_nextcloud.cli.human import plain
from mcp_nextcloud.cli.voice import for_person

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "CliError", "dump", "emit", "note", "plain", "report"]


def dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def note(text: str) -> None:
    """A note for the person at the terminal (stderr), in their voice."""
    print(f"note: {plain(for_person(text))}", file=stderr())


def emit(payload: dict[str, Any], as_json: bool, *, kind: str) -> int:
    """Print an answer; notes (warnings) go to stderr in the readable view."""
    if as_json:
        print(dump(payload), file=stdout())
        return EXIT_OK
    lines = {"collection": human.collection, "plan": human.plan}.get(kind, human.record)(payload)
    print("\n".join(lines), file=stdout())
    for w in payload.get("warnings") or []:
        note(w)
    return EXIT_OK
