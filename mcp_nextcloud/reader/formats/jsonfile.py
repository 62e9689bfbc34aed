"""JSON: the original text, plus a small key skeleton (types, array lengths) for the outline.

Skeleton form: an object is a dict of its keys' skeletons; an array is
`[length, skeleton of its first item]`; a scalar is its type name
("string", "number", "boolean", "null"). Depth and size are capped ("…").
"""
from __future__ import annotations

import json
from typing import Any

from ..document import Document, Limits
from ._common import decode_text

MAX_DEPTH = 6
MAX_KEYS = 40
MAX_NODES = 400


def skeleton(value: Any, depth: int = 0, budget: list[int] | None = None) -> Any:
    """The key skeleton of a parsed JSON value, capped in depth, keys and total nodes."""
    budget = budget if budget is not None else [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0 or depth >= MAX_DEPTH:
        return "…"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for i, (k, v) in enumerate(value.items()):
            if i >= MAX_KEYS:
                out["…"] = f"{len(value) - MAX_KEYS} more keys"
                break
            out[str(k)] = skeleton(v, depth + 1, budget)
        return out
    if isinstance(value, list):
        return [len(value), skeleton(value[0], depth + 1, budget) if value else None]
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if value is None:
        return "null"
    return "string"


def extract(data: bytes, name: str, limits: Limits) -> Document:
    text, warnings = decode_text(data)
    structure: dict[str, Any] = {}
    try:
        structure["skeleton"] = skeleton(json.loads(text))
    except json.JSONDecodeError as exc:
        warnings.append(f"invalid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}): shown as plain text")
    except RecursionError:
        warnings.append("JSON nested too deeply for a skeleton: shown as plain text")
    return Document(text=text, kind="json", name=name, mime="application/json", structure=structure,
                    warnings=warnings, engine="json")
