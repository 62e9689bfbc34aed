"""The installed form of this project: one top-level name, so it can sit next to any other distribution.

The repository is organised by its packages (`reader/`, `indexer/`,
`nextcloud/`, `server/`, and `fixtures/` for the emulator the demo runs), and
the code imports them by those names (`from indexer.index import Index`).
Installed, they would be generic top-level names that other distributions use
too (PyPI has `reader`, `fixtures`, `server`...). So the wheel puts them inside
this package (`mcp_nextcloud/reader/`, ...: a setuptools package-dir mapping,
see pyproject.toml), and importing this package lets the project's own
absolute imports find them there: a meta path finder answers for exactly those
five top-level names, in this process only. Nothing is installed under a
generic name, and another distribution's `reader` is untouched on disk.

In a source checkout (or an editable install of one) the folders sit next to
this one; the finder then looks there, so the console script works from any
directory. `python -m server` from the checkout does not need it at all.
"""
import os
import sys

# The finder runs in every CLI call, so this module imports nothing that site has not loaded already
# (not even __future__): pathlib, typing and importlib.abc cost ~20 ms together, more than a whole call
# handed to the warm process.
try:  # CPython: importlib.machinery's PathFinder, already loaded by the interpreter
    from _frozen_importlib_external import PathFinder
except ImportError:  # pragma: no cover - other interpreters
    from importlib.machinery import PathFinder

TYPE_CHECKING = False
if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from typing import Sequence

PACKAGES = ("reader", "indexer", "nextcloud", "server", "fixtures")
HERE = os.path.dirname(os.path.realpath(__file__))
# Installed: the packages are inside this one. Source checkout: they are its siblings.
ROOT = HERE if os.path.isdir(os.path.join(HERE, "server")) else os.path.dirname(HERE)


class _OwnPackages:
    """Find this project's top-level packages inside `mcp_nextcloud/` (submodules follow their parent).

    A meta path finder needs only `find_spec` (importlib.abc.MetaPathFinder adds nothing else we use)."""

    def find_spec(self, fullname: str, path: "Sequence[str] | None" = None,
                  target: object = None) -> "ModuleSpec | None":
        if fullname not in PACKAGES:
            return None
        return PathFinder.find_spec(fullname, [ROOT])


def _install() -> None:
    if not any(isinstance(f, _OwnPackages) for f in sys.meta_path):
        sys.meta_path.insert(0, _OwnPackages())


_install()


def main() -> int:
    """The `mcp-nextcloud` console script."""
    from server.cli import process_main

    return process_main()
