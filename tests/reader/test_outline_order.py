"""A PDF's outline keeps its bookmark tree's order, and expanding a section returns all of it (issue 22, 8c).

The course fixture reproduces the real manual's shape: a chapter's first section is bookmarked under
a title not printed on the page, so it used to be placed at the page start, sorted before its
chapter ("Introduction à Scheme" before "1 Tutoriel Scheme") and dropped when the chapter was expanded.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcp_nextcloud.fixtures import large_docs
from mcp_nextcloud.reader import Document, OutlineEntry, extract, outline
from mcp_nextcloud.reader.outline import OUTLINE_BUDGET
from mcp_nextcloud.reader.outline_budget import json_bytes, tree


@pytest.fixture(scope="module")
def course() -> Document:
    return extract(large_docs.scheme_course_pdf(), "course.pdf")


def test_a_parent_comes_before_its_children(course):
    titles = [e.title for e in course.outline]
    assert titles[:3] == ["1 Tutoriel Scheme", "Introduction à Scheme", "1.2 Partie 2"]
    for c, topic in enumerate(["Listes et paires", "Récursion"], start=2):
        chapter = titles.index(f"{c} {topic}")
        assert titles[chapter + 1] == f"Introduction à {topic.split()[-1]}"
    offsets = [e.offset for e in course.outline]
    assert offsets == sorted(offsets)        # this fixture's bookmarks follow the pages: offsets never go back
    intro = course.outline[1]
    assert intro.offset == course.outline[0].offset   # not found on its page: where its chapter starts


def test_expanding_a_chapter_returns_every_section_and_subsection(course):
    chapter = course.outline[0]
    o = outline(course, offset=chapter.offset)
    shown = [e.title for e in o.entries]
    inside = [e.title for e in course.outline[: 1 + 10]]   # the chapter, its 4 sections, their 6 subsections
    assert shown[: len(inside)] == inside
    assert shown[len(inside)] == "2 Listes et paires"
    assert o.subsections[: len(inside)] == [0] * len(inside)
    # the same through a section offset inside the chapter: its branch and its siblings, in order
    part3 = next(e for e in course.outline if e.title == "1.3 Partie 3")
    shown3 = [e.title for e in outline(course, offset=part3.offset).entries]
    at = shown3.index("1.3 Partie 3")
    assert shown3[at: at + 4] == ["1.3 Partie 3", "1.3.1 Exemple 1", "1.3.2 Exemple 2", "1.4 Partie 4"]
    assert shown3[:3] == ["1 Tutoriel Scheme", "Introduction à Scheme", "1.2 Partie 2"]   # its path and siblings


def test_the_top_level_counts_every_entry_of_each_chapter(course):
    o = outline(course, budget=700)
    counted = dict(zip([e.title for e in o.entries], o.subsections, strict=True))
    assert counted["1 Tutoriel Scheme"] == 10


@st.composite
def outlines(draw: st.DrawFn) -> list[OutlineEntry]:
    """A well-formed tree of 1..60 entries (a child one level below its parent) with non-decreasing offsets."""
    levels = [1]
    for _ in range(draw(st.integers(0, 59))):
        levels.append(draw(st.integers(1, min(levels[-1] + 1, 5))))
    gaps = draw(st.lists(st.integers(0, 40), min_size=len(levels), max_size=len(levels)))
    words = draw(st.lists(st.integers(0, 30), min_size=len(levels), max_size=len(levels)))
    offsets, at = [], 0
    for gap in gaps:
        at += gap                                  # a gap of 0: several bookmarks at one place
        offsets.append(at)
    return [OutlineEntry(f"E{i} " + "x" * words[i], level, offset)
            for i, (level, offset) in enumerate(zip(levels, offsets, strict=True))]


@settings(max_examples=150, deadline=None)
@given(entries=outlines(), pick=st.integers(0, 10_000), budget=st.sampled_from([900, 1500, OUTLINE_BUDGET]))
def test_expanding_any_section_accounts_for_all_its_descendants_in_order(entries, pick, budget):
    text = "t" * (entries[-1].offset + 50)
    doc = Document(text, "pdf", outline=entries)
    focus = pick % len(entries)
    if entries[focus].offset == 0:
        return                                     # offset 0 means "the whole outline", not a section
    first = next(i for i, e in enumerate(entries) if e.offset == entries[focus].offset)
    parents, ends = tree(entries)
    o = outline(doc, offset=entries[focus].offset, budget=budget)
    shown = [int(e.title.split()[0][1:]) for e in o.entries]
    assert json_bytes(o.to_dict()) <= budget
    assert shown == sorted(shown)                  # document order
    if not all(i in shown for i, p in enumerate(parents) if p is None):
        assert shown[0] == first                   # the top level does not fit: paged from the section on,
        return                                     # of several at that offset the outermost first
    assert first in shown and all(p in shown for p in _ancestors(parents, first))   # the branch and its path
    assert len(shown) + sum(o.subsections) == len(entries)    # every entry listed or counted once
    for i, n in zip(shown, o.subsections, strict=True):        # counted on its nearest listed ancestor
        assert n == sum(1 for j in range(i + 1, ends[i]) if j not in shown
                        and next(a for a in _ancestors(parents, j) if a in shown) == i)
    path = [first, *_ancestors(parents, first)]
    whole = sum(json_bytes({"title": e.title, "level": e.level, "offset": e.offset, "line": 1, "page": 1}) + 20
                for i, e in enumerate(entries) if parents[i] is None or i in path or first <= i < ends[first])
    if whole < budget - 900:                       # room for the top level and the section whole: all of it listed
        assert [i for i in shown if first <= i < ends[first]] == list(range(first, ends[first]))


def _ancestors(parents: list[int | None], i: int) -> list[int]:
    out = []
    at = parents[i]
    while at is not None:
        out.append(at)
        at = parents[at]
    return out


@settings(max_examples=150, deadline=None)
@given(entries=outlines(), budget=st.sampled_from([700, 1500, OUTLINE_BUDGET]))
def test_without_a_focus_every_entry_is_listed_or_counted_once(entries, budget):
    doc = Document("t" * (entries[-1].offset + 50), "pdf", outline=entries)
    parents, _ = tree(entries)
    o = outline(doc, budget=budget)
    shown = [int(e.title.split()[0][1:]) for e in o.entries]
    assert json_bytes(o.to_dict()) <= budget and shown == sorted(shown)
    if o.next_offset is not None:                  # the top level does not fit: paged
        return
    assert all(parents[i] is None or parents[i] in shown for i in shown)   # a listed entry's parent is listed
    assert len(shown) + sum(o.subsections) == len(entries)
