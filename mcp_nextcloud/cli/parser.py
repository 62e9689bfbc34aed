"""The CLI's parsers: argparse, plus a record of the sub-commands and arguments (argparse keeps them private).

A group's parser makes its sub-commands with `add_commands(...)` (argparse's
`add_subparsers` arguments) and gets a `Subcommands`, whose `add_parser(...)`
is argparse's; the root help and `iter_commands` read what it recorded. Each
parser also records the arguments declared on it: `mcp-nextcloud manifest` is
generated from these records, the very objects argparse parses with, so the
manifest cannot describe an option the parser does not have.
"""
from __future__ import annotations

import argparse
import re
import sys
from typing import Any, Callable, NoReturn

from mcp_nextcloud.cli.console import columns, stderr, stdout


class Formatter(argparse.HelpFormatter):
    """argparse's help layout, told the terminal's width: left to find it, argparse imports shutil for it
    at every add_argument (~2 ms a call)."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        # argparse's own default: the terminal's width less 2.
        super().__init__(prog, indent_increment, max_help_position,
                         columns() - 2 if width is None else width)


    def _get_help_string(self, action: argparse.Action) -> str | None:
        """An argument's help; one a tool wrote (marked TOOL_WORDS) said in the person's voice."""
        text = super()._get_help_string(action)
        if text and getattr(action, TOOL_WORDS, False):
            from mcp_nextcloud.cli.voice import for_person

            return for_person(text)
        return text


# Marks an argparse action whose help is a tool's own description (for the agent): shown in the person's voice.
TOOL_WORDS = "tool_words"


class RawDescriptionFormatter(Formatter, argparse.RawDescriptionHelpFormatter):
    """argparse.RawDescriptionHelpFormatter (a description kept as written), told the width like Formatter."""


class Declared:
    """One argument as declared: its flags, and argparse's own action (type, default, choices, help)."""

    __slots__ = ("flags", "action", "repeatable")

    def __init__(self, flags: tuple[str, ...], action: argparse.Action, repeatable: bool = False) -> None:
        self.flags = flags
        self.action = action
        self.repeatable = repeatable


class UsageError(Exception):
    """Arguments argparse could not parse: which command, argparse's message, and the usage line."""

    def __init__(self, prog: str, message: str, usage: str) -> None:
        super().__init__(message)
        self.prog, self.message, self.usage = prog, message, usage


_INVALID_CHOICE = re.compile(r"argument (\S+): invalid choice: '([^']*)' \(choose from (.*)\)$", re.DOTALL)


# The words people type for an action, and the action's name here ("tasks add" -> create). A synonym names an
# action only where the command has it (or actions starting with it: deck's create-board, create-card).
SYNONYMS: dict[str, tuple[str, ...]] = {
    "add": ("create",), "new": ("create",), "make": ("create",), "mk": ("create",), "insert": ("create",),
    "remove": ("delete",), "rm": ("delete", "remove"), "del": ("delete", "remove"), "delete": ("remove",),
    "ls": ("list", "search"), "dir": ("list", "search"), "show": ("read", "get", "status", "list"),
    "get": ("read",), "view": ("read",),
    "cat": ("read",), "open": ("read",), "edit": ("update",), "change": ("update",), "modify": ("update",),
    "set": ("update",), "send": ("post",), "say": ("post",), "find": ("search",), "query": ("search",),
    "mv": ("move",), "rename": ("move",), "info": ("status",), "stat": ("status",),
}


def did_you_mean(word: str, known: list[str]) -> str:
    """" Did you mean 'create'?" for the action a synonym names (SYNONYMS) or the nearest known word (difflib),
    or "" when none is near."""
    import difflib

    named = [k for synonym in SYNONYMS.get(word.lower(), ()) for k in known
             if k == synonym or k.startswith(synonym + "-")]
    near = list(dict.fromkeys(named))[:3] or difflib.get_close_matches(word, known, n=2, cutoff=0.6)
    return f" Did you mean {' or '.join(repr(n) for n in near)}?" if near else ""


def dash_hint(command: "CommandParser", argv: list[str]) -> str:
    """" A QUERY that starts with a dash goes after --: ..." when argv holds a dashed word that is none of
    `command`'s options and the command takes a positional text (`grep --max-old-space-size`), else ""."""
    import shlex

    if "--" in argv:
        return ""
    texts = [d for d in command.arguments if not d.flags[0].startswith("-")]
    known = {f for d in command.arguments for f in d.flags} | {"-h", "--help"}
    dashed = [w for w in argv if len(w) > 1 and w.startswith("-") and w.split("=")[0] not in known
              and not w[1:].replace(".", "", 1).isdigit()]
    if not texts or not dashed:
        return ""
    metavar = texts[0].action.metavar
    what = (metavar if isinstance(metavar, str) else texts[0].action.dest).upper()
    return (f" A {what} that starts with a dash goes after --, which ends the options: "
            f"{command.prog} -- {shlex.quote(dashed[0])}")


def _suggesting(message: str, has_commands: bool) -> str:
    """argparse's "invalid choice" as one line with the nearest choice, not the list of every command."""
    match = _INVALID_CHOICE.match(message)
    if match is None:
        return message
    what, word, listed = match.groups()
    choices = re.findall(r"'([^']*)'", listed)
    guess = did_you_mean(word, choices)
    if has_commands and not what.startswith("-"):   # the choice of a command or of a group's action
        kind = "command" if what == "COMMAND" else "action"
        return f"unknown {kind} {word!r}.{guess}" + ("" if guess else " See --help for the list.")
    return f"argument {what}: invalid choice {word!r}.{guess} Choose from {', '.join(choices)}"


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that remembers its sub-commands and their summaries.

    argparse keeps them only in private attributes; recording them as they are
    added (through the public `add_subparsers().add_parser`) lets the root help
    and `iter_commands` walk the tree without touching those.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", Formatter)
        super().__init__(*args, **kwargs)
        self.commands: list[tuple[str, str, CommandParser]] = []
        self.arguments: list[Declared] = []
        self.manifest_extra: dict[str, Any] = {}    # what a command adds to its manifest entry (e.g. a schema)
        self.tool_words = False     # its description and TOOL_WORDS arguments' help are a tool's (cli/voice.py)

    def _print_message(self, message: str, file: Any = None) -> None:
        """argparse's help and version text: to the command line's own streams (cli/console.py)."""
        if message:
            (stderr() if file is sys.stderr else stdout()).write(message)

    def format_help(self) -> str:
        """argparse's help; a description a tool wrote (`tool_words`), and a group's summaries of its actions,
        in the person's voice."""
        if not self.tool_words or not self.description:
            return super().format_help()
        from mcp_nextcloud.cli.voice import for_person

        if self.commands:   # a group: its actions' summaries are the tools' descriptions
            return for_person(super().format_help())
        written, self.description = self.description, for_person(self.description)
        try:
            return super().format_help()
        finally:
            self.description = written

    def error(self, message: str) -> NoReturn:
        """A usage error raised, not printed: `cli.root.parse` words it (JSON with --json)."""
        raise UsageError(self.prog, _suggesting(message, bool(self.commands)), self.format_usage())

    def flags(self) -> list[str]:
        """Every option string this command takes (for "did you mean")."""
        return [f for declared in self.arguments for f in declared.flags if f.startswith("--")] + ["--help"]

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.dest != "help":
            self.arguments.append(Declared(tuple(args), action, kwargs.get("action") == "append"))
        return action

    def add_commands(self, **kwargs: Any) -> Subcommands:
        """`add_subparsers(**kwargs)`, recording each command added through the result."""
        kwargs.setdefault("parser_class", CommandParser)
        return Subcommands(self.add_subparsers(**kwargs), self.commands)

    def help_command(self) -> Callable[[argparse.Namespace], int]:
        """A `func` for a group run without an action: print this parser's help, exit 0."""
        def show(_args: argparse.Namespace) -> int:
            self.print_help()
            return 0
        return show


class Subcommands:
    """What `add_commands` returns: argparse's sub-parsers action, with `add_parser` recording each command."""

    def __init__(self, action: Any, commands: list[tuple[str, str, CommandParser]]) -> None:
        self._action = action
        self._commands = commands

    def add_parser(self, name: str, **options: Any) -> CommandParser:
        child: CommandParser = self._action.add_parser(name, **options)   # the action was made with this class
        self._commands.append((name, options.get("help") or "", child))
        return child

    def __getattr__(self, name: str) -> Any:
        return getattr(self._action, name)


class RootParser(CommandParser):
    """Root help as an index: one line per command; a group names its actions on its line."""

    def format_help(self) -> str:
        rows = []
        for name, summary, child in self.commands:
            actions = ", ".join(sub for sub, _, _ in child.commands)
            rows.append((name, f"{summary} ({actions})" if actions else summary))
        width = max(len(name) for name, _ in rows) + 3
        listing = "\n".join(f"    {name.ljust(width)}{summary}" for name, summary in rows)
        return (f"{self.format_usage()}\n{self.description}\n\n"
                "options:\n  -h, --help  show this help message and exit\n"
                "  --version   print the version of mcp-nextcloud and exit\n\n"
                f"commands:\n  COMMAND\n{listing}\n\n{self.epilog}\n")


def iter_commands(parser: CommandParser, prefix: str = "") -> list[tuple[str, CommandParser]]:
    """Every command and sub-command as ("index sync", its parser), depth first, in help order."""
    out: list[tuple[str, CommandParser]] = []
    for name, _, child in parser.commands:
        out.append((f"{prefix}{name}", child))
        out.extend(iter_commands(child, f"{prefix}{name} "))
    return out
