"""What part of an account the index mirrors: included folders, excluded folders, a size budget.

An account of terabytes (photos, archives) need not be mirrored to search the
folders that matter. The selection is kept in the index itself (one index per
account), so `index sync`, the background refresher of `serve` and files_grep
all read the same one. No include means the whole account; an exclude wins
over an include; the budget bounds the index file on disk.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from typing import Any

META_SELECTION = "selection"           # what the user chose
META_APPLIED = "selection_applied"     # what the remembered folder etags were walked with


def _norm(path: str) -> str:
    return "/" + path.strip().strip("/")


def _under(path: str, folder: str) -> bool:
    return folder == "/" or path == folder or path.startswith(folder + "/")


@dataclass(frozen=True)
class Selection:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    max_index_bytes: int | None = None

    @classmethod
    def of(cls, include: list[str] | None = None, exclude: list[str] | None = None,
           max_index_bytes: int | None = None) -> "Selection":
        """A normalised selection: absolute paths, no duplicates, a budget only when positive."""
        inc = tuple(sorted({_norm(p) for p in include or []}))
        exc = tuple(sorted({_norm(p) for p in exclude or []}))
        if "/" in inc:
            inc = ()
        if "/" in exc:
            raise ValueError("excluding / would leave nothing to index; name the folders to leave out")
        return cls(inc, exc, max_index_bytes if max_index_bytes and max_index_bytes > 0 else None)

    @property
    def whole_account(self) -> bool:
        return not self.include and not self.exclude

    def covers(self, path: str) -> bool:
        """Whether files at `path` (a file or folder path) are indexed."""
        path = _norm(path)
        if any(_under(path, e) for e in self.exclude):
            return False
        return not self.include or any(_under(path, i) for i in self.include)

    def walk_into(self, folder: str) -> bool:
        """Whether the sync lists `folder`: it is covered, or an included folder lies below it."""
        folder = _norm(folder)
        if any(_under(folder, e) for e in self.exclude):
            return False
        return self.covers(folder) or any(_under(i, folder) for i in self.include)

    def left_out(self) -> list[str]:
        """Folders an answer must name as not indexed (excluded ones; "everything but …" with includes)."""
        if self.include:
            return [f"everything outside {', '.join(self.include)}", *self.exclude]
        return list(self.exclude)

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> "Selection":
        if not text:
            return cls()
        data: dict[str, Any] = json.loads(text)
        return cls.of(data.get("include"), data.get("exclude"), data.get("max_index_bytes"))


def load(index: Any) -> Selection:
    """The selection stored in `index` (the whole account when none was chosen)."""
    return Selection.from_json(index.get_meta(META_SELECTION))


def save(index: Any, selection: Selection) -> None:
    index.writer().set_meta(META_SELECTION, selection.to_json())


def index_bytes(index: Any) -> int:
    """The index's size on disk (database and write-ahead log)."""
    base = str(index.path)
    return sum(os.path.getsize(base + s) for s in ("", "-wal") if os.path.exists(base + s))
