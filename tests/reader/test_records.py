"""reader/records.py builds what typing.NamedTuple builds, so the search path's records behave the same."""
from __future__ import annotations

import pickle
import typing

import pytest

from reader.document import ImageData, Limits
from reader.records import NamedTuple


class Point(NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str | None = None
    ORIGIN_NAME = "origin"

    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    @property
    def named(self) -> bool:
        return self.label is not None


class TypedPoint(typing.NamedTuple):
    """A point."""

    x: int
    y: int = 0
    label: str | None = None


def test_a_record_is_the_namedtuple_typing_would_make() -> None:
    p = Point(3, -4)
    t = TypedPoint(3, -4)
    assert p == t == (3, -4, None) and tuple(p) == tuple(t)
    assert Point._fields == TypedPoint._fields and Point._field_defaults == TypedPoint._field_defaults
    assert repr(p) == repr(t).replace("TypedPoint", "Point")
    assert p._replace(label="a").named and not p.named and p.norm1() == 7
    assert Point.ORIGIN_NAME == "origin" and Point.__doc__ == "A point."
    assert Point.__qualname__ == "Point" and Point.__module__ == __name__
    assert list(Point.__annotations__) == ["x", "y", "label"]
    x, y, label = p
    assert (x, y, label) == (3, -4, None) and hash(p) == hash((3, -4, None))
    with pytest.raises(AttributeError):
        p.x = 1  # type: ignore[misc]   # immutable, like any tuple


def test_records_pickle_across_processes() -> None:
    """The extraction child sends Limits and ImageData back to its parent by pickle."""
    for record in (Limits(max_pages=3), ImageData(b"\x89PNG", "image/png", 2, 1), Point(1, 2, "p")):
        again = pickle.loads(pickle.dumps(record))
        assert again == record and type(again) is type(record)


def test_what_typing_refuses_is_refused() -> None:
    with pytest.raises(TypeError, match="without a default follows"):
        class _Bad(NamedTuple):
            a: int = 0
            b: int
    with pytest.raises(AttributeError, match="cannot redefine _replace"):
        class _Clash(NamedTuple):
            a: int

            def _replace(self) -> None:   # type: ignore[override]
                pass
