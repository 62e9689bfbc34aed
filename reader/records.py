"""typing.NamedTuple's class syntax, built on collections.namedtuple, for the modules every CLI call loads.

`typing` costs a CLI call ~3 ms to import (issue 17), and the search path
needs it for nothing else: its annotations are never evaluated (`from
__future__ import annotations`) and the names they use are imported for the
type checker only. A module on that path declares its records with

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from reader.records import NamedTuple

so mypy checks typing's NamedTuple while the interpreter builds the very
class typing would: a collections.namedtuple whose fields are the annotated
names (with their defaults, in order) and whose other attributes (docstring,
methods, properties, constants) are the class body's.
"""
from collections import namedtuple

# What collections.namedtuple makes itself: a class body may not redefine it (typing refuses it too).
_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults",
                         "_make", "_replace", "_asdict"})
# What the class statement puts in the body and the record gets its own way.
_SPECIAL = frozenset({"__module__", "__qualname__", "__annotations__"})


class _RecordMeta(type):
    """Turns a class statement's body into a namedtuple, as typing's NamedTupleMeta does."""

    def __new__(mcs, name: str, bases: tuple[type, ...], body: dict[str, object]) -> type:
        if bases != (NamedTuple,):
            raise TypeError(f"{name}: a NamedTuple record derives from NamedTuple alone")
        annotations = body.get("__annotations__", {})
        assert isinstance(annotations, dict)
        fields = list(annotations)
        defaults = [body[f] for f in fields if f in body]
        if any(f in body for f in fields[:len(fields) - len(defaults)]):
            raise TypeError(f"{name}: a field without a default follows one with a default")
        record = namedtuple(name, fields, defaults=defaults, module=str(body["__module__"]))  # type: ignore[misc]
        for key, value in body.items():
            if key in _PROHIBITED:
                raise AttributeError(f"{name}: cannot redefine {key}, which namedtuple makes")
            if key not in _SPECIAL and key not in fields:
                setattr(record, key, value)
        record.__qualname__ = str(body["__qualname__"])
        record.__annotations__ = annotations
        return record


# The base a record names (`class Limits(NamedTuple):`); made without running _RecordMeta.__new__ on itself.
NamedTuple: type = type.__new__(_RecordMeta, "NamedTuple", (), {"__doc__": "Base of a record: see reader/records.py."})
