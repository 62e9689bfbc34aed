"""The options many commands share, declared once: `--json` and `--index`.

Every command that prints a result takes `--json` (compact JSON on stdout, and
a failure as {"error": {...}}, see cli/errors.py); every command that
reads or writes the local index takes `--index PATH`. A command says what its
JSON holds in `what`; the flag, its action and its default are the same
everywhere, so scripts and the manifest see one option.
"""
from __future__ import annotations

import argparse

INDEX_HELP = "index database (default: $MCP_NEXTCLOUD_INDEX, else the platform data directory)"


def add_json(parser: argparse.ArgumentParser, what: str = "") -> None:
    """--json: compact JSON on stdout (`what` says what it holds), and a failure as one JSON error."""
    parser.add_argument("--json", action="store_true",
                        help="print compact JSON" + (f": {what}" if what else ""))


def add_index(parser: argparse.ArgumentParser, note: str = "") -> None:
    """--index PATH: the index database the command uses (`note` adds what it is for here)."""
    parser.add_argument("--index", metavar="PATH", default=None,
                        help=INDEX_HELP + (f"; {note}" if note else ""))
