"""The approval policy: derived from a tool's annotations, failing closed.

A host (or our own `serve`) asks `approval_for(tool)` whether a call may run
without a person confirming it. The rule is the product's:

- readOnlyHint true                       -> category "data",   no approval
- destructiveHint true                    -> category "action", approval
- idempotentHint true and not destructive -> category "action", no approval
- anything absent, partial or otherwise   -> category "action", approval

"Partial" means any of the three hints left undeclared: the spec's defaults
(destructive=True, idempotent=False) are exactly what we must not guess.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint")


@dataclass(frozen=True)
class Approval:
    """What a call of a tool is and whether a person must confirm it."""

    category: Literal["data", "action"]
    needs_approval: bool
    reason: str


def _declared(annotations: Any) -> dict[str, bool | None]:
    """The three hints as declared on the wire (None when absent), from a dict or a ToolAnnotations."""
    if annotations is None:
        return {h: None for h in HINTS}
    if isinstance(annotations, dict):
        raw = annotations
    else:
        raw = annotations.model_dump(by_alias=True, exclude_none=True)
    return {h: raw.get(h) for h in HINTS}


def approval_for(annotations: Any) -> Approval:
    """Approval category for one tool's annotations (a ToolAnnotations, a wire dict, or None)."""
    hints = _declared(annotations)
    missing = [h for h, v in hints.items() if not isinstance(v, bool)]
    if missing:
        return Approval("action", True, "undeclared " + ", ".join(missing))
    if hints["readOnlyHint"]:
        return Approval("data", False, "read-only")
    if hints["destructiveHint"]:
        return Approval("action", True, "destructive")
    if hints["idempotentHint"]:
        return Approval("action", False, "idempotent, not destructive")
    return Approval("action", True, "not idempotent")


def policy_table(tools: list[Any]) -> dict[str, Approval]:
    """Approval for every tool of a tools/list answer (objects with .name and .annotations)."""
    return {t.name: approval_for(t.annotations) for t in tools}
