"""An ArgumentParser that remembers what was declared on it, so help, the manifest and tests can read it back.

argparse keeps its actions and sub-parsers in private attributes; reading
those would tie the manifest to argparse internals. Instead every parser of
the CLI is a `DeclaredParser`: `add_argument` and `add_subparsers(...).add_parser`
record what they made in public lists. The manifest is generated from these
records, the same objects argparse parses with, so the two cannot drift.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Declared:
    """One argument as declared: its flags, and argparse's own action (type, default, choices, help)."""

    flags: tuple[str, ...]
    action: argparse.Action
    repeatable: bool = False


@dataclass
class Child:
    name: str
    help: str | None
    parser: "DeclaredParser"
    line: Any = None        # the line root help prints for it (its help can be completed later)


@dataclass
class Declarations:
    arguments: list[Declared] = field(default_factory=list)
    children: list[Child] = field(default_factory=list)


class DeclaredParser(argparse.ArgumentParser):
    """argparse.ArgumentParser recording its arguments and sub-commands in `self.declared`."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.declared = Declarations()
        self.manifest_extra: dict[str, Any] = {}    # what a command adds to its manifest entry (e.g. a schema)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.dest != "help":
            self.declared.arguments.append(Declared(tuple(args), action, kwargs.get("action") == "append"))
        return action

    def add_subparsers(self, **kwargs: Any) -> Any:
        kwargs.setdefault("parser_class", DeclaredParser)
        sub = super().add_subparsers(**kwargs)
        make = sub.add_parser
        children = self.declared.children

        def add_parser(name: str, **kw: Any) -> DeclaredParser:
            kw.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
            child: DeclaredParser = make(name, **kw)
            # argparse keeps the help line of each choice in a private list: read in this one place only.
            lines = getattr(sub, "_choices_actions", None) or [None]
            children.append(Child(name, kw.get("help"), child, lines[-1] if "help" in kw else None))
            return child

        sub.add_parser = add_parser  # type: ignore[method-assign]
        return sub


def walk(parser: DeclaredParser, prefix: str = "") -> list[tuple[str, DeclaredParser, str | None]]:
    """Every command and sub-command as ("index sync", its parser, its summary), depth first, in help order."""
    out: list[tuple[str, DeclaredParser, str | None]] = []
    for child in parser.declared.children:
        name = f"{prefix}{child.name}"
        out.append((name, child.parser, child.help))
        out.extend(walk(child.parser, name + " "))
    return out
