"""Spend an outline's budget on the branch asked for, the rest of the document collapsed into counts.

A 300-page manual's bookmarks do not fit in an outline, and its top level
alone ("I Gnuplot", "II Plotting styles", "III Commands" with 384 entries
below it) sends the agent back for a second outline before it can read one
command. So, when the whole top level fits:

- with a focus (the entry an offset points into, or a section asked by
  name), the entries on the path to it are shown, then its subsections, its
  siblings and its ancestors' siblings (nearest first when a list does not
  fit whole), then its deeper levels;
- without one, every level that fits whole, then the subsections of the
  biggest entries first (a book's biggest part opened where the budget allows);
- every entry left out is counted once, on its nearest shown ancestor.

When the top level does not fit (400 slides), `outline_budget.select_entries`
pages through it from the focus (or the start) with a next offset.
"""
from __future__ import annotations

import heapq
from typing import Callable

from .document import OutlineEntry
from .outline_budget import Selection, select_entries, tree


def _count_field(hidden: int) -> int:
    """Bytes of ',"subsections":N' on an entry that hides `hidden` entries (none when 0)."""
    return 16 + len(str(hidden)) if hidden else 0


class _Picker:
    """The entries shown so far, the count each hides, and the bytes they cost: kept exact as entries are added."""

    def __init__(self, entries: list[OutlineEntry], size: Callable[[int], int], budget: int) -> None:
        self.parents, ends = tree(entries)
        self.below = [end - i - 1 for i, end in enumerate(ends)]   # entries in each subtree, itself excepted
        self.children: dict[int | None, list[int]] = {}
        for i, parent in enumerate(self.parents):
            self.children.setdefault(parent, []).append(i)
        self.size, self.budget = size, budget
        self.hidden: dict[int, int] = {}
        self.used = 0

    def _delta(self, i: int, parent_hidden: int) -> tuple[int, int]:
        """Bytes that showing entry i adds, and its parent's new hidden count (its parent's is `parent_hidden`)."""
        delta = self.size(i) + _count_field(self.below[i])
        if self.parents[i] is None:
            return delta, 0
        after = parent_hidden - 1 - self.below[i]
        return delta + _count_field(after) - _count_field(parent_hidden), after

    def add(self, group: list[int], *, force: bool = False) -> bool:
        """Show every entry of `group` (children of shown entries, parents first), or none if they do not fit."""
        pending: dict[int, int] = {}
        total = 0
        for i in group:
            parent = self.parents[i]
            before = pending.get(parent, self.hidden.get(parent, 0)) if parent is not None else 0
            delta, after = self._delta(i, before)
            total += delta
            if not force and self.used + total > self.budget + 24 * len(pending):
                return False   # over already: a count that shrinks later wins back at most 24 bytes an entry
            if parent is not None:
                pending[parent] = after
            pending[i] = self.below[i]
        if not force and self.used + total > self.budget:
            return False
        self.used += total
        self.hidden.update(pending)
        return True

    def shown(self, i: int) -> bool:
        return i in self.hidden

    def open_near(self, parent: int | None, near: int | None) -> None:
        """Show the children of `parent`, nearest to `near` first (the first child when None), while they fit."""
        kids = [k for k in self.children.get(parent, []) if not self.shown(k)]
        if not kids:
            return
        order = kids
        if near is not None:
            siblings = self.children[parent]
            at = siblings.index(near)
            place = {k: n for n, k in enumerate(siblings)}
            order = sorted(kids, key=lambda k: (abs(place[k] - at), place[k] < at))
        for k in order:
            if not self.add([k]):
                break

    def open_whole(self, parents: list[int]) -> bool:
        """Show all the children of every entry in `parents`, or none of them."""
        group = [k for p in parents for k in self.children.get(p, []) if not self.shown(k)]
        return not group or self.add(group)

    def open_biggest(self, within: range | None = None) -> None:
        """Open shown entries by size of their subtree, biggest first, each whole or not at all."""
        heap = [(-self.below[i], i) for i in self.hidden if self.hidden[i] and (within is None or i in within)]
        heapq.heapify(heap)
        while heap:
            _, i = heapq.heappop(heap)
            if self.open_whole([i]):
                for k in self.children.get(i, []):
                    if self.hidden.get(k):
                        heapq.heappush(heap, (-self.below[k], k))

    def selection(self) -> Selection:
        shown = sorted(self.hidden)
        hidden = {i: h for i, h in self.hidden.items() if h}
        return Selection(shown, hidden, None, bool(hidden))


def _path(parents: list[int | None], focus: int) -> list[int]:
    """The entries from the top level down to `focus`, in that order."""
    path: list[int] = []
    at: int | None = focus
    while at is not None:
        path.append(at)
        at = parents[at]
    return path[::-1]


def _by_depth(picker: _Picker, top: list[int]) -> None:
    """Open level after level below `top` while a whole level fits."""
    level = top
    while level:
        if not picker.open_whole(level):
            return
        level = [k for p in level for k in picker.children.get(p, [])]


def choose(entries: list[OutlineEntry], size: Callable[[int], int], budget: int,
           focus: int | None = None) -> Selection:
    """The entries to show within `budget` bytes (`size(i)`: bytes of entry i), spent on `focus`'s branch first."""
    if not entries:
        return Selection([], {}, None, False)
    picker = _Picker(entries, size, budget)
    path = _path(picker.parents, focus) if focus is not None else []
    picker.add(picker.children[None] + [i for i in path if picker.parents[i] is not None], force=True)
    if picker.used > budget:
        return select_entries(entries, size, budget, focus)
    if focus is None:
        _by_depth(picker, picker.children[None])
        picker.open_biggest()
        return picker.selection()
    picker.open_near(focus, None)
    for child in reversed(path[1:]):      # its siblings, then its parent's, up to the top level's children
        picker.open_near(picker.parents[child], child)
    _by_depth(picker, picker.children.get(focus, []))
    picker.open_biggest(range(focus, focus + picker.below[focus] + 1))
    picker.open_biggest()
    return picker.selection()
