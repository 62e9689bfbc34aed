"""The packages are layered and no module of the product is in an import circle (read from the modules' imports).

    cli/          the command line; the service's entry point and command-line handler  -> everything below
    team/         the team server: OAuth, Nextcloud sign-in, a service per person       -> service and below
    service/      the index service: client, daemon, the serve's tool host              -> server and below
    server/       the MCP app and its tools                                             -> indexer and below
    indexer/      the index: sources, store, search, jobs                               -> nextcloud, reader
    nextcloud/    the only code that speaks HTTP to Nextcloud                            -> environment
    reader/       bytes -> Document; pure (a child process's variables: environment)    -> environment
    environment   the variables of the work at hand (standard library only)             -> nothing of ours

Every import counts, wherever it is written (top, function, TYPE_CHECKING). fixtures/ (the emulator and the
sample documents) may import the reader, and nothing of the product imports it but the CLI's demo. Importing
a module imports its parent packages; that is not an edge.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "mcp_nextcloud"
BELOW: dict[str, set[str]] = {
    "environment": set(),
    "reader": {"environment"},
    "nextcloud": {"environment"},
    "indexer": {"nextcloud", "reader", "environment"},
    "server": {"indexer", "nextcloud", "reader", "environment"},
    "service": {"server", "indexer", "nextcloud", "reader", "environment"},
    "team": {"service", "server", "indexer", "nextcloud", "reader", "environment"},
    "cli": {"team", "service", "server", "indexer", "nextcloud", "reader", "environment", "fixtures"},
    "fixtures": {"reader"},
    "__init__": {"cli"},
    "__main__": {"cli"},
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The modules of ours that `name` imports (the deepest known module of each imported name)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            subs = [f"{module}.{alias.name}" for alias in node.names if f"{module}.{alias.name}" in MODULES]
            names = subs if len(subs) == len(node.names) else [module, *subs]
        else:
            continue
        for imported in names:
            while imported and imported not in MODULES:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not name.startswith(imported + "."):
                out.add(imported)
    return out


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_package_has_a_place_in_the_layers() -> None:
    assert {_layer(name) for name in MODULES} <= set(BELOW), "a new package: give it its place in BELOW"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_imports_only_the_layers_below_its_own(name: str) -> None:
    layer = _layer(name)
    wrong = sorted(other for other in GRAPH[name] if _layer(other) != layer and _layer(other) not in BELOW[layer])
    assert not wrong, f"{name} ({layer}) imports above or beside its layer: {wrong}"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            nxt = next((e for e in edges if e in graph), None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_is_in_an_import_circle() -> None:
    """Anywhere: the product and the emulator it ships for the demo (a circle is how two threads deadlock
    importing, and how a module reads another half-initialised)."""
    assert _circles(GRAPH) == []


def test_the_layers_have_no_cycle() -> None:
    """BELOW itself is a hierarchy: no layer is (transitively) below itself."""
    assert _circles(BELOW) == [] and not any(layer in below for layer, below in BELOW.items())


def test_the_circle_finder_finds_circles() -> None:
    """The check itself: a circle of three is found, a chain is not."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
