"""The indexer is layered: each of its parts imports only the parts below it (read from the modules' imports).

    index.py                the index as users open it: store + search
    local/  remote/         sources: a folder, the account        -> jobs, store, models
    search/                 grep, name search                     -> store, models
    jobs/                   durable jobs, the extraction pool     -> store, models
    store/                  schema, the one writer, rows          -> models
    models.py               the records passed between them       -> nothing of the indexer
    errors.py               the indexer's own refusals            -> nothing of the indexer

Every import counts, wherever it is written: at the top, inside a function or under TYPE_CHECKING.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

INDEXER = Path(__file__).resolve().parents[2] / "mcp_nextcloud" / "indexer"
PACKAGE = "mcp_nextcloud.indexer"
BELOW = {
    "models": set(),
    "errors": set(),             # the indexer's refusals: every part may raise them
    "embedding": set(),          # the meaning model: the builder (jobs) embeds passages, search the question
    "store": {"models", "errors"},
    "jobs": {"store", "models", "embedding", "errors"},
    "search": {"store", "models", "embedding", "errors"},
    "local": {"jobs", "store", "models", "errors"},
    "remote": {"jobs", "store", "models", "errors"},
    "index": {"search", "local", "remote", "jobs", "store", "models", "embedding", "errors"},
    "__init__": set(),
}


def _part(path: Path) -> str:
    """The layer a module of indexer/ belongs to: its subpackage, or its own name at the top level."""
    rel = path.relative_to(INDEXER)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported_parts(source: str, package: list[str]) -> list[tuple[int, str]]:
    """(line, part) for every import of indexer.<part> in a module of `package`, relative imports resolved."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            # `from mcp_nextcloud.indexer import store`: the names may be parts too
            names = [module] + ([f"{module}.{alias.name}" for alias in node.names] if module == PACKAGE else [])
        else:
            continue
        for name in names:
            if name.startswith(PACKAGE + "."):
                found.append((node.lineno, name[len(PACKAGE) + 1:].split(".")[0]))
    return found


MODULES = sorted(INDEXER.rglob("*.py"))


def test_every_part_has_a_place_in_the_layers() -> None:
    assert {_part(p) for p in MODULES} <= set(BELOW), "a new part of indexer/: give it its place in BELOW"


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(INDEXER)))
def test_a_module_imports_only_the_parts_below_its_own(path: Path) -> None:
    part = _part(path)
    imports = _imported_parts(path.read_text(encoding="utf-8"),
                              [*PACKAGE.split("."), *path.relative_to(INDEXER).parent.parts])
    wrong = [f"line {line}: indexer.{other}" for line, other in imports
             if other != part and other not in BELOW[part]]
    assert not wrong, f"indexer/{path.relative_to(INDEXER)} ({part}) imports above or beside its layer: {wrong}"


def test_the_layers_have_no_cycle() -> None:
    """BELOW itself is a hierarchy: no part is (transitively) below itself."""
    from tests.test_layers import _circles

    assert _circles(BELOW) == [] and not any(part in below for part, below in BELOW.items())


def test_the_reader_sees_imports_wherever_they_are_written() -> None:
    """The check itself: nested, TYPE_CHECKING, relative and package-level imports are all found."""
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from mcp_nextcloud.indexer.search.grep import grep\n"
              "def f():\n    from ..remote import marks\n    import mcp_nextcloud.indexer.local.watch\n"
              "    from mcp_nextcloud.indexer import jobs\n    from . import rows\n")
    found = _imported_parts(source, ["mcp_nextcloud", "indexer", "store"])
    assert sorted(p for _, p in found) == ["jobs", "local", "remote", "search", "store"]
