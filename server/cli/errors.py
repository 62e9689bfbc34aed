"""Errors worded for the person at the terminal (the MCP answer's wording lives in server/errors.py).

Same model, other audience: a Nextcloud error's step (`mcp-nextcloud login
URL`) is something this person runs themselves, so it reads "Run `...`".
Cheap to import: `nextcloud.errors` (no httpx, no reader) is loaded only when an
error is worded, so commands that never meet one (a CLI grep) do not pay for it.
"""
from __future__ import annotations

import json
import sys

TYPE_CHECKING = False   # typing.TYPE_CHECKING without importing typing (mypy knows the name)
if TYPE_CHECKING:
    from typing import Any

RUN = "Run"


def person_text(err: BaseException) -> str:
    """The instruction for a person: cause, next step, and whether trying again helps."""
    from nextcloud.errors import NextcloudError

    if isinstance(err, NextcloudError):
        return err.render(RUN)
    return str(err)


def print_error(err: BaseException, as_json: bool, prog: str) -> None:
    """An error as an instruction: one line on stderr, and {"error":...} on stdout with --json."""
    message = person_text(err)
    if as_json:
        to_dict = getattr(err, "to_dict", None)   # NextcloudError, JobNotFound: kind and flags too
        payload: dict[str, Any] = to_dict() if callable(to_dict) else {}
        payload["message"] = message
        print(json.dumps({"error": payload}, separators=(",", ":"), ensure_ascii=False))
    print(f"{prog}: {message}", file=sys.stderr)
