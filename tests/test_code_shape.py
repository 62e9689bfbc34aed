"""The shape the code keeps: no function longer than 80 lines outside tests and benchmarks."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKED = ("mcp_nextcloud",)   # the product and the emulator; the test-data generators beside it too
MAX_LINES = 80
# Known offenders (none today). Remove an entry when its function is split: the test then keeps it short.
ALLOWED: set[tuple[str, str]] = set()


def _long_functions() -> list[tuple[str, str, int]]:
    found = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        found.append((path.relative_to(ROOT).as_posix(), node.name, lines))
    return found


def test_no_function_is_longer_than_80_lines():
    offenders = [f"{where}: {name} has {lines} lines" for where, name, lines in _long_functions()
                 if (where, name) not in ALLOWED]
    assert not offenders, "split these into functions of at most 80 lines: " + "; ".join(offenders)


def test_the_allowed_offenders_still_exist():
    """An entry that no longer offends must go, so the list never hides a new long function."""
    still = {(where, name) for where, name, _ in _long_functions()}
    assert ALLOWED <= still, f"remove from ALLOWED (now short or gone): {sorted(ALLOWED - still)}"


def test_errors_are_matched_with_isinstance_not_by_name():
    """`type(exc).__name__ == "NextcloudError"` silently stops matching: errors are subclasses by category
    (NotFoundError, MisuseError, ...). Import the class from nextcloud.errors (cheap: no httpx) instead."""
    offenders = []
    for top in CHECKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if "__name__" in line and ("Error\"" in line or "Error'" in line):
                    offenders.append(f"{path.relative_to(ROOT).as_posix()}:{number}")
    assert not offenders, "match errors with isinstance: " + ", ".join(offenders)
