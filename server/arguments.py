"""Checks every tool's arguments get before its own validation: names, text length, valid Unicode.

Applied in the call path (server/app.py) to every registered tool, including
tools added later, so no tool has to remember them:

- an argument the tool does not have is refused, naming the ones it has (a
  misspelled `offest` must not silently read from 0);
- every string, at any depth, is at most `DEFAULT_MAX_CHARS` long unless the
  tool's schema declares its own `maxLength` for that argument (then pydantic
  enforces the declared one);
- a string holding a lone surrogate (not encodable as UTF-8, so no HTTP
  header, URL or SQLite row can carry it) is refused naming the argument.

Rejected values are never echoed: an error must stay short whatever was sent.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from server.errors import misuse

# Long enough for any free text a Nextcloud app takes in one field (Talk caps a message at 32,000
# characters); a tool whose argument may be longer (files_write's content) declares its own maxLength.
DEFAULT_MAX_CHARS = 32_000
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ArgumentRules:
    """What one tool accepts: its argument names and those that declare their own length limit."""

    names: tuple[str, ...]
    declared_max: frozenset[str]


def rules_for(tool: Any) -> ArgumentRules:
    """The rules of a registered SDK tool, read from its argument model (not the slimmed published schema)."""
    schema = tool.fn_metadata.arg_model.model_json_schema(by_alias=True)
    props: dict[str, Any] = schema.get("properties") or {}
    declared = frozenset(name for name, sub in props.items() if _declares_max(sub))
    return ArgumentRules(names=tuple(props), declared_max=declared)


def _declares_max(schema: Any) -> bool:
    if not isinstance(schema, dict):
        return False
    if "maxLength" in schema:
        return True
    return any(_declares_max(s) for s in schema.get("anyOf", []))


def check(tool_name: str, rules: ArgumentRules, arguments: dict[str, Any] | None) -> None:
    """Raise a misuse ToolFailure for unknown arguments, over-long strings or lone surrogates."""
    arguments = arguments or {}
    unknown = [key for key in arguments if key not in rules.names]
    if unknown:
        shown = ", ".join(_printable(k) for k in unknown[:3]) + (" …" if len(unknown) > 3 else "")
        valid = ", ".join(rules.names) or "none"
        raise misuse(f"Unknown argument(s) for {tool_name}: {shown}. Its arguments are: {valid}. "
                     "Call again with only these names (check the spelling); do not retry unchanged.",
                     status="unknown_argument")
    for key, value in arguments.items():
        problem = _string_problem(value, None if key in rules.declared_max else DEFAULT_MAX_CHARS)
        if problem:
            raise misuse(f"Invalid arguments for {tool_name}: {key}: {problem}. Fix it and call again; "
                         "do not retry unchanged.", status="bad_argument")


def _string_problem(value: Any, max_chars: int | None) -> str | None:
    """Why a value (or a string nested in it) cannot be accepted, or None."""
    if isinstance(value, str):
        if _SURROGATE.search(value):
            return ("contains a lone surrogate (an invalid Unicode code point U+D800-U+DFFF); "
                    "send valid UTF-8 text")
        if max_chars is not None and len(value) > max_chars:
            return f"is {len(value)} characters long, over the limit of {max_chars}"
        return None
    if isinstance(value, dict):
        items = list(value.keys()) + list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return None
    for item in items:
        problem = _string_problem(item, DEFAULT_MAX_CHARS)
        if problem:
            return problem
    return None


def _printable(name: str) -> str:
    """An unknown argument name as it may be shown: short, and without anything unencodable."""
    text = name[:40] + ("…" if len(name) > 40 else "")
    return repr(_SURROGATE.sub("\ufffd", text))

