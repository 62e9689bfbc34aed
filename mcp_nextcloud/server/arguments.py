"""Checks every tool's arguments get before its own validation: names, text length, valid Unicode.

Applied in the call path (server/app.py) to every registered tool, including
tools added later, so no tool has to remember them:

- an argument the tool does not have is refused, naming the ones it has (a
  misspelled `offest` must not silently read from 0);
- every string, at any depth, is at most `DEFAULT_MAX_CHARS` long unless the
  tool's schema declares its own `maxLength` for that argument (then pydantic
  enforces the declared one);
- a string holding a lone surrogate (not encodable as UTF-8, so no HTTP
  header, URL or SQLite row can carry it) is refused naming the argument;
- every value has exactly its declared type (pydantic strict mode on the tool's
  own argument model): no "5" for an integer, no true for an id, no "yes" for
  a boolean. A JSON array sent as a string is still parsed first, as the SDK
  does for hosts that send them so;
- control and format characters are refused by the kind of text each argument
  is, and "" where a time or an id is required (`server/argument_text.py`).

Rejected values are never echoed: an error must stay short whatever was sent.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable

from pydantic import ValidationError

from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.server.argument_text import LINE, character_problem, kind_of, must_not_be_empty
from mcp_nextcloud.server.errors import invalid_arguments, misuse

# Long enough for any free text a Nextcloud app takes in one field (Talk caps a message at 32,000
# characters); a tool whose argument may be longer (files_write's content) declares its own maxLength.
DEFAULT_MAX_CHARS = 32_000
_SURROGATE = re.compile("[\ud800-\udfff]")


@dataclass(frozen=True)
class ArgumentRules:
    """What one tool accepts: its argument names, those with their own length limit, each one's text kind."""

    names: tuple[str, ...]
    declared_max: frozenset[str]
    kinds: dict[str, str] = field(default_factory=dict)      # argument -> argument_text kind (default line)
    not_empty: frozenset[str] = frozenset()
    strict: Callable[[dict[str, Any]], None] | None = None    # raises ValidationError on a loose type
    parse: Callable[[dict[str, Any]], dict[str, Any]] | None = None   # the SDK's JSON-in-a-string pre-parse


def rules_for(tool: Any) -> ArgumentRules:
    """The rules of a registered SDK tool, read from its argument model (not the slimmed published schema)."""
    meta = tool.fn_metadata
    schema = meta.arg_model.model_json_schema(by_alias=True)
    props: dict[str, Any] = schema.get("properties") or {}
    declared = frozenset(name for name, sub in props.items() if _declares_max(sub))

    def strict(parsed: dict[str, Any]) -> None:
        meta.arg_model.model_validate(parsed, strict=True)

    return ArgumentRules(names=tuple(props), declared_max=declared,
                         kinds={name: kind_of(tool.name, name) for name in props},
                         not_empty=frozenset(n for n in props if must_not_be_empty(tool.name, n)), strict=strict,
                         parse=meta.pre_parse_json)


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
                     "Call again with only these names (check the spelling).",
                     status=ToolStatus.UNKNOWN_ARGUMENT)
    for key, value in arguments.items():
        problem = _string_problem(value, None if key in rules.declared_max else DEFAULT_MAX_CHARS)
        if problem:
            raise _bad(tool_name, key, problem)
    # What the tool will receive: an array sent as a JSON string is checked as the array it becomes.
    parsed = rules.parse(arguments) if rules.parse is not None else arguments
    _check_types(tool_name, rules, parsed)
    for key, value in parsed.items():
        if value == "" and key in rules.not_empty:
            raise _bad(tool_name, key, "is empty; give a value, or leave the argument out where it is optional")
        problem = _text_problem(value, rules.kinds.get(key, LINE))
        if problem:
            raise _bad(tool_name, key, problem)


def _bad(tool_name: str, key: str, problem: str) -> Exception:
    return misuse(f"Invalid arguments for {tool_name}: {key}: {problem}. Fix it and call again.",
                  status=ToolStatus.BAD_ARGUMENT)


_JSON_NAMES = {str: "a string", bool: "a boolean", int: "an integer", float: "a number", list: "an array",
               dict: "an object", type(None): "null"}


def _check_types(tool_name: str, rules: ArgumentRules, arguments: dict[str, Any]) -> None:
    """Each value exactly of its declared type: the tool's model in pydantic's strict mode, no coercion."""
    if rules.strict is None:
        return
    try:
        rules.strict(arguments)
    except ValidationError as exc:
        errors: list[dict[str, Any]] = []
        for detail in exc.errors():
            e: dict[str, Any] = dict(detail)
            if str(e.get("type", "")).endswith("_type"):
                got = _JSON_NAMES.get(type(e.get("input")), "another type")
                e["msg"] = f"{e.get('msg')} (got {got})"
            errors.append(e)
        raise invalid_arguments(tool_name, errors) from None


def _text_problem(value: Any, kind: str) -> str | None:
    """Why a string (or one nested in a list or object) holds characters its kind refuses, or None."""
    if isinstance(value, str):
        return character_problem(value, kind)
    items = (list(value.keys()) + list(value.values()) if isinstance(value, dict)
             else value if isinstance(value, list) else [])
    for index, item in enumerate(items):
        problem = _text_problem(item, kind)
        if problem:
            return f"item {index} {problem}" if isinstance(value, list) else problem
    return None


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

