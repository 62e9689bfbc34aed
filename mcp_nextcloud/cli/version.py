"""`mcp-nextcloud version` and `mcp-nextcloud --version`: the package's version (importlib.metadata)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_nextcloud.cli.console import stdout
from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import Subcommands

DISTRIBUTION = "mcp-nextcloud"


def register(subparsers: Subcommands) -> None:
    """Add the `version` command."""
    p = subparsers.add_parser("version", help="the version of mcp-nextcloud (also --version)",
                              description="Print the installed version of mcp-nextcloud.",
                              epilog="Example: mcp-nextcloud version")
    add_json(p, "the version")
    p.set_defaults(func=run)


def package_version() -> str:
    """The installed distribution's version; from a checkout that is not installed, its pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
        try:
            return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown (not installed)"


def run(args: argparse.Namespace) -> int:
    """Print the version: `mcp-nextcloud 0.1.0`, or {"version": "0.1.0"} with --json."""
    if getattr(args, "json", False):
        print(json.dumps({"version": package_version()}, separators=(",", ":")), file=stdout())
    else:
        print(f"{DISTRIBUTION} {package_version()}", file=stdout())
    return 0


class VersionFlag(argparse.Action):
    """`--version` on the root: the version, looked up only when asked (importlib.metadata is not free)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        run(argparse.Namespace(json=False))
        parser.exit(0)
