"""The readable view of an answer: tables and `key: value` lines, names beside ids, never JSON inside text.

Scripts read `--json` (cli/output.py prints it unchanged); this is what a
person at a terminal sees. Simple records line up as a table; records that
carry passages, long text or nested lists print as blocks of `key: value`.
An id the answer can name (a Deck board or stack, a task list) is shown as
"Name (id)", the id kept: it is what the next command takes. Text from
Nextcloud stays data: control characters are escaped by `plain`.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from mcp_nextcloud.cli.voice import for_person

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x1b]")
LONG = 200          # a text longer than this (or with a line break) prints as its own section
CELL = 60           # a record with a longer cell prints as a block, not a table row
EMPTY = "(none)"


def plain(value: Any) -> str:
    """Provider text as inert terminal text: control and escape characters shown, not obeyed."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def scalar(value: Any) -> str:
    """A value in one line: a list as "a, b", an object as "k=v, k=v", text with its whitespace folded."""
    if isinstance(value, list):
        return ", ".join(scalar(v) for v in value) if value else EMPTY
    if isinstance(value, dict):
        return ", ".join(f"{k}={scalar(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, str):
        return plain(" ".join(value.split()))
    return plain(value)


def _simple(item: dict[str, Any]) -> bool:
    return all(not (isinstance(v, list) and any(isinstance(x, dict) for x in v)) and not isinstance(v, dict)
               and len(scalar(v)) <= CELL for v in item.values())


def table(items: list[dict[str, Any]], indent: str = "") -> list[str]:
    """Records as aligned columns (every key any record has), or as blocks when a record is too rich for a row."""
    if not items:
        return [indent + EMPTY]
    if not all(_simple(item) for item in items):
        lines: list[str] = []
        for number, item in enumerate(items):
            lines += ([""] if number else []) + block(item, indent)
        return lines
    columns: list[str] = []
    for item in items:
        columns += [k for k in item if k not in columns]
    rows = [[scalar(item[c]) if item.get(c) is not None else "" for c in columns] for item in items]
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(columns)]

    def line(cells: list[str]) -> str:
        return (indent + "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))).rstrip()

    return [line(columns), *(line(r) for r in rows)]


def block(record: dict[str, Any], indent: str = "") -> list[str]:
    """A record as `key: value` lines; nested objects and lists of records indented under their key."""
    lines: list[str] = []
    for key, value in record.items():
        if value is None:
            continue
        if isinstance(value, dict) and value:
            lines += [f"{indent}{key}:", *block(value, indent + "  ")]
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines += [f"{indent}{key}:", *table(value, indent + "  ")]
        elif isinstance(value, str) and ("\n" in value or len(value) > LONG):
            lines += [f"{indent}{key}:", *(f"{indent}  {plain(part)}" for part in value.splitlines())]
        else:
            lines.append(f"{indent}{key}: {scalar(value)}")
    return lines


# Names beside ids: an answer that carries a lookup (Deck's boards, the task lists) names its records' ids.
def _deck_names(payload: dict[str, Any], items: list[dict[str, Any]]) -> None:
    boards = {b.get("board"): b for b in payload.pop("boards", None) or [] if isinstance(b, dict)}
    for item in items:
        board = boards.get(item.get("board"))
        if board is None:
            continue
        stacks = {s.get("stack"): s.get("title") for s in board.get("stacks") or [] if isinstance(s, dict)}
        item["board"] = _named(board.get("title"), item["board"])
        if item.get("stack") in stacks:
            item["stack"] = _named(stacks[item["stack"]], item["stack"])


def _id_names(lookup: str, field: str) -> Callable[[dict[str, Any], list[dict[str, Any]]], None]:
    """A namer for an answer whose `lookup` maps ids to names (task lists, calendars) and whose records say
    `field`: the record shows "Name (id)"."""
    def name(payload: dict[str, Any], items: list[dict[str, Any]]) -> None:
        names = payload.get(lookup)
        if not isinstance(names, dict) or not all(isinstance(v, str) for v in names.values()):
            return
        del payload[lookup]
        for item in items:
            if item.get(field) in names:
                item[field] = _named(names[item[field]], item[field])
    return name


def _named(name: Any, ident: Any) -> Any:
    return f"{name} ({ident})" if name and str(name) != str(ident) else ident


NAMERS: dict[str, Callable[[dict[str, Any], list[dict[str, Any]]], None]] = {
    "boards": _deck_names, "lists": _id_names("lists", "list"), "calendars": _id_names("calendars", "calendar")}


def name_ids(payload: dict[str, Any], items: list[dict[str, Any]]) -> None:
    for key, namer in NAMERS.items():
        if key in payload:
            namer(payload, items)


def collection(payload: dict[str, Any]) -> list[str]:
    """{"items", "page", ...}: the records, where the page ends, the rest of the answer, the hint."""
    payload = dict(payload)
    items = [dict(item) for item in payload.pop("items")]
    page = payload.pop("page")
    hint = payload.pop("hint", None)
    payload.pop("warnings", None)
    name_ids(payload, items)
    more = f"; next page: --cursor {page['next_cursor']}" if page["has_more"] and page["next_cursor"] else (
        "; more exist: raise --limit" if page["has_more"] else "; no more")
    lines = [*table(items), f"{page['returned']} shown{more}", *block(payload)]
    return lines + ([f"hint: {plain(for_person(hint))}"] if hint else [])


def record(payload: dict[str, Any]) -> list[str]:
    """One answer as `key: value` lines; its lists of records as tables; long text last, in its own section."""
    payload = dict(payload)
    hint = payload.pop("hint", None)
    payload.pop("warnings", None)
    for value in list(payload.values()):
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            name_ids(payload, value)
    short = {k: v for k, v in payload.items() if not (isinstance(v, str) and ("\n" in v or len(v) > LONG))}
    lines = block(short)
    if hint:
        lines.append(f"hint: {plain(for_person(hint))}")
    for key, value in payload.items():
        if key not in short:
            lines.append(f"--- {key} ---\n{plain(value)}\n---")
    return lines


def plan(plan: dict[str, Any]) -> list[str]:
    """A dry run: nothing written, the first write it would make, its effects, how to run it for real."""
    lines = [f"Dry run of {plan['command']}: nothing was written."]
    first = plan.get("wouldWrite")
    if first:
        lines += [f"It would call {first['call']} with:", *block(first["with"], "  ")]
    else:
        lines.append("It would write nothing: " + plain(for_person(plan.get("result", {}).get("hint")
                                                                  or "no change needed")))
    lines += [f"effect: {plain(for_person(e))}" for e in plan.get("effects", [])]
    if plan.get("needsConfirm"):
        lines.append("Run it again with --confirm instead of --dry-run to do it.")
    return lines
