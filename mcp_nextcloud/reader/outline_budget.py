"""Fit an outline into a byte budget: top levels first, deeper levels collapsed into counts.

An outline is what an agent reads before deciding where to spend tokens, so it
must stay small whatever the document: a 600-bookmark manual, a 400-slide deck,
a sheet with 300 columns, a deep JSON. Two pieces, each a pure function:

- `select_entries`: which headings to show when the top level does not fit
  whole (outline_branch.py chooses otherwise). Every level up to the deepest one
  that fits is shown; deeper entries are counted on their nearest shown
  ancestor ("subsections"). With a focus (the section an offset points into),
  that section is shown first, as deep as fits, then what follows it. When even
  the top level does not fit, the first entries that fit are shown and the
  caller says where to continue.
- `fit_structure`: the format skeleton (sheet headers and first rows, CSV
  header, JSON key skeleton) reduced step by step (fewer sample rows, fewer
  columns, shallower, fewer keys) until it fits; what was left out is named
  in place ("…12 more columns").
"""
from __future__ import annotations

import json
from typing import Any, Callable, Iterator, NamedTuple

from .document import OutlineEntry


def json_bytes(value: Any) -> int:
    """Size of `value` as compact UTF-8 JSON, as results are sent."""
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


# ---------------------------------------------------------------- entries

class Selection(NamedTuple):
    """Indices (into the entries) shown, with the count of hidden entries below each, and where to go on."""

    shown: list[int]
    hidden: dict[int, int]
    next_index: int | None  # first entry left out after the shown ones (the caller continues there)
    collapsed: bool         # some entries are shown only as counts


def tree(entries: list[OutlineEntry]) -> tuple[list[int | None], list[int]]:
    """Parent index (None at the top) and subtree end (exclusive index) of each entry, from levels in text order."""
    parents: list[int | None] = []
    ends = [len(entries)] * len(entries)
    stack: list[int] = []
    for i, entry in enumerate(entries):
        while stack and entries[stack[-1]].level >= entry.level:
            ends[stack.pop()] = i
        parents.append(stack[-1] if stack else None)
        stack.append(i)
    return parents, ends


def _candidates(entries: list[OutlineEntry], parents: list[int | None], start: int, focus_end: int,
                focus_depth: float, rest_depth: float) -> list[int]:
    """Entries shown at these depths: an entry whose parent is not in the window is always shown."""
    out = []
    for i in range(start, len(entries)):
        parent = parents[i]
        depth = focus_depth if i < focus_end else rest_depth
        if parent is None or parent < start or entries[i].level <= depth:
            out.append(i)
    return out


def _hidden_counts(parents: list[int | None], shown: list[int], start: int, stop: int) -> dict[int, int]:
    """For each shown entry, how many entries in [start, stop) below it are not shown."""
    shown_set = set(shown)
    counts: dict[int, int] = {}
    for j in range(start, stop):
        if j in shown_set:
            continue
        ancestor = parents[j]
        while ancestor is not None and ancestor not in shown_set:
            ancestor = parents[ancestor]
        if ancestor is not None:
            counts[ancestor] = counts.get(ancestor, 0) + 1
    return counts


def _cost(shown: list[int], hidden: dict[int, int], size: Callable[[int], int]) -> int:
    # ',"subsections":N' on an entry that hides some
    return sum(size(i) + (16 + len(str(hidden[i])) if i in hidden else 0) for i in shown)


def _fit(entries: list[OutlineEntry], parents: list[int | None], start: int, focus_end: int,
         focus_depth: float, rest_depth: float, size: Callable[[int], int], budget: int) -> Selection:
    """The candidates at these depths, cut to the first ones that fit in `budget`."""
    candidates = _candidates(entries, parents, start, focus_end, focus_depth, rest_depth)
    used, kept = 0, 0
    for i in candidates:
        used += size(i) + 4  # a collapsed count may add more: the caller trims the last entries if so
        if used > budget and kept:
            break
        kept += 1
    shown = candidates[:kept]
    stop = candidates[kept] if kept < len(candidates) else len(entries)
    hidden = _hidden_counts(parents, shown, start, stop)
    return Selection(shown, hidden, stop if stop < len(entries) else None, bool(hidden))


def _fits_whole(entries: list[OutlineEntry], parents: list[int | None], start: int, focus_end: int,
                focus_depth: float, rest_depth: float, size: Callable[[int], int], budget: int,
                stop: int | None = None) -> bool:
    """Whether the candidates at these depths before `stop` (default: all) fit in `budget`, counts included."""
    stop = len(entries) if stop is None else stop
    shown = [i for i in _candidates(entries, parents, start, focus_end, focus_depth, rest_depth) if i < stop]
    return _cost(shown, _hidden_counts(parents, shown, start, stop), size) <= budget


def select_entries(entries: list[OutlineEntry], size: Callable[[int], int], budget: int,
                   focus: int | None = None) -> Selection:
    """The entries to show within `budget` bytes (`size(i)`: bytes of entry i), starting at `focus` if given.

    Depths are chosen deepest first among those that fit whole: first for the
    focus section (when there is one), then for what follows. If nothing fits
    whole, the shallowest view is cut after the entries that fit.
    """
    if not entries:
        return Selection([], {}, None, False)
    parents, ends = tree(entries)
    start = focus if focus is not None else 0
    focus_end = ends[start] if focus is not None else start
    levels = sorted({e.level for e in entries[start:]})
    shallow = float("-inf")
    focus_depth = shallow
    if focus is not None:
        inner = sorted({e.level for e in entries[start + 1 : focus_end]}) or [entries[start].level]
        focus_depth = next((lv for lv in reversed(inner)
                            if _fits_whole(entries, parents, start, focus_end, lv, shallow, size, budget,
                                           focus_end)),
                           inner[0])
    rest_depth = next((lv for lv in reversed(levels)
                       if _fits_whole(entries, parents, start, focus_end, focus_depth, lv, size, budget)), shallow)
    return _fit(entries, parents, start, focus_end, focus_depth, rest_depth, size, budget)


# ---------------------------------------------------------------- structure

_ROWS = (5, 3, 1, 0)
_COLUMNS = (None, 40, 20, 10, 5)
_DEPTHS = (6, 4, 3, 2, 1)
_KEYS = (40, 20, 10, 5)


def _columns(row: Any, keep: int | None) -> Any:
    if not isinstance(row, list) or keep is None or len(row) <= keep:
        return row
    return row[:keep] + [f"…{len(row) - keep} more columns"]


def _table(part: dict[str, Any], rows_key: str, rows: int, cols: int | None) -> dict[str, Any]:
    out = dict(part)
    if isinstance(out.get("header"), list):
        out["header"] = _columns(out["header"], cols)
    if isinstance(out.get(rows_key), list):
        out[rows_key] = [_columns(r, cols) for r in out[rows_key][:rows]]
    return out


def prune_skeleton(value: Any, depth: int, keys: int) -> Any:
    """A key skeleton cut at `depth` levels and `keys` keys per object (both skeleton forms: [n, item] and dict)."""
    if isinstance(value, dict):
        if depth <= 0:
            return f"object[{len(value)} keys]"
        items = list(value.items())
        out = {k: prune_skeleton(v, depth - 1, keys) for k, v in items[:keys]}
        if len(items) > keys:
            out["…"] = f"{len(items) - keys} more keys"
        return out
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], int):
        return f"array[{value[0]}]" if depth <= 0 else [value[0], prune_skeleton(value[1], depth - 1, keys)]
    return value


def _variants(structure: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Ever smaller versions of a structure, the full one first; top levels are kept longest."""
    yield structure
    if "skeleton" in structure:
        for keys in _KEYS:
            for depth in _DEPTHS:
                yield {**structure, "skeleton": prune_skeleton(structure["skeleton"], depth, keys)}
        return
    for rows in _ROWS:
        for cols in _COLUMNS:
            out = _table(structure, "rows", rows, cols)
            if isinstance(structure.get("sheets"), list):
                out["sheets"] = [_table(s, "firstRows", rows, cols) if isinstance(s, dict) else s
                                 for s in structure["sheets"]]
            yield out


def fit_structure(structure: dict[str, Any], budget: int) -> tuple[dict[str, Any], bool]:
    """The largest variant of `structure` within `budget` bytes, and whether anything was left out."""
    if not structure:
        return structure, False
    for n, variant in enumerate(_variants(structure)):
        if json_bytes(variant) <= budget:
            return variant, n > 0
    sheets = structure.get("sheets")
    if isinstance(sheets, list) and sheets:  # too many sheets even without sample rows: keep the first ones
        kept = list(list(_variants(structure))[-1]["sheets"])
        while kept and json_bytes({"sheets": kept + [f"{len(sheets) - len(kept)} more sheets"]}) > budget:
            kept.pop()
        return {"sheets": kept + [f"{len(sheets) - len(kept)} more sheets"]}, True
    return {"omitted": "too large for the outline: read the text from offset 0"}, True
