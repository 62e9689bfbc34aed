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
    # the same through a section offset inside the chapter: that section and what follows, in order
    part3 = next(e for e in course.outline if e.title == "1.3 Partie 3")
    o3 = outline(course, offset=part3.offset)
    assert [e.title for e in o3.entries[:4]] == ["1.3 Partie 3", "1.3.1 Exemple 1", "1.3.2 Exemple 2",
                                                 "1.4 Partie 4"]


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
    _, ends = tree(entries)
    o = outline(doc, offset=entries[focus].offset, budget=budget)
    shown = [int(e.title.split()[0][1:]) for e in o.entries]
    assert json_bytes(o.to_dict()) <= budget
    assert shown[0] == first                       # of several at that offset, the outermost
    assert shown == sorted(shown)                  # document order
    descendants = range(first + 1, ends[first])
    hidden = sum(n for i, n in zip(shown, o.subsections, strict=True) if first <= i < ends[first])
    cut = next((i for i, e in enumerate(entries) if o.next_offset is not None and i > shown[-1]
                and e.offset == o.next_offset), ends[first])
    later = max(0, ends[first] - max(cut, first + 1))   # left for the next page of the outline
    inside_shown = sum(1 for i in shown if first < i < ends[first])
    assert inside_shown + hidden + later == len(descendants)
    whole = sum(json_bytes({"title": e.title, "level": e.level, "offset": e.offset, "line": 1, "page": 1}) + 1
                for e in entries[first: ends[first]])
    if whole < budget - 900:                       # room for the section whole: every descendant listed
        assert [i for i in shown if first <= i < ends[first]] == list(range(first, ends[first]))
