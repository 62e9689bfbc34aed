"""The process's meaning builders, one per index file: who is building now.

Apart from the builder itself (indexer/jobs/embed.py, which loads the vectors and the model's glue), so a
long-lived process can ask "is a build running?" at any moment without loading, or racing the import of,
the builder's module (the index service asks before every idle exit).
"""
from __future__ import annotations

import threading
from typing import Protocol


class Registered(Protocol):
    """What the registry asks of a builder (indexer/jobs/embed.py's Builder; not imported: it is a layer up)."""

    @property
    def building(self) -> bool: ...

    def stop(self) -> None: ...


_builders: dict[str, Registered] = {}
_lock = threading.Lock()


def get(key: str) -> Registered | None:
    with _lock:
        return _builders.get(key)


def put(key: str, builder: Registered) -> None:
    with _lock:
        _builders[key] = builder


def pop(key: str) -> Registered | None:
    with _lock:
        return _builders.pop(key, None)


def building_any() -> bool:
    """Whether a builder of this process is embedding now (a long-lived process waits for it before it exits)."""
    with _lock:
        builders = list(_builders.values())
    return any(b.building for b in builders)
