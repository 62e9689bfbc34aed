"""The CLI speaks to the person at the terminal (issue 38): every command's errors and hints name flags and
commands, never a tool's argument names or `tool_name(`.

The walk drives every leaf command of the real parser in-process against the session's emulator: with no
arguments, with each option given a value that cannot be right, and (for the tool commands) their own
example, whose hints and notes are collected too. Writes run as dry runs: nothing is written.
"""
from __future__ import annotations

import argparse
import re
from typing import Any

import pytest

from mcp_nextcloud.cli import build_parser, iter_commands, toolspec
from mcp_nextcloud.cli.tool_commands import all_commands, is_write
from mcp_nextcloud.cli.voice import for_person

SPECS = toolspec.load()
COMMANDS = {c.full_name: c for c in all_commands(SPECS)}
# The tools' camelCase argument names (never English words) and the tools' names.
CAMEL = sorted({p for s in SPECS.values() for p in s["input"].get("properties", {}) if p != p.lower()})
LEAKS = [re.compile(rf"(?<![-\w]){name}\b") for name in CAMEL] + \
    [re.compile(rf"\b{tool}\b") for tool in SPECS] + [re.compile(r"\b[a-z]+_[a-z_]+\("),
                                                      re.compile(r"\b(?:[Aa]sk|[Tt]ell|for) the user\b")]
# Commands that run until stopped, wait for a browser, or start or stop processes: not walked.
SKIP = {"serve", "demo", "report", "index watch", "index sync", "login", "service start", "service stop",
        "jobs wait"}
BAD = {int: "987654", float: "987654", str: "/no/such/thing-zz"}


# What only an agent or an MCP host knows: which server it runs, how the tools see it (issue 50).
AGENT_WORDS = [re.compile(r"\bmcp-mail\b"), re.compile(r"\bthe MCP tools see\b")]


def leaks(text: str) -> list[str]:
    return [m.group() for pattern in LEAKS for m in pattern.finditer(text)]


def person_lines(out: str, err: str) -> str:
    """What a person reads as words (not data): stderr, and the hint lines of an answer."""
    return "\n".join([err, *(line for line in out.splitlines() if line.startswith("hint:"))])


@pytest.fixture
def cli(person_cli: Any) -> Any:
    return person_cli


def _variants(name: str, parser: Any) -> list[list[str]]:
    """argv lists for one command: none, its example, and the example with each option given a bad value."""
    cmd = COMMANDS.get(name)
    base = list(cmd.example[len(name.split()):]) if cmd else []
    if cmd and is_write(SPECS[cmd.tool]) and "--dry-run" not in base:
        base.append("--dry-run")
    out = [[], base] if base else [[]]
    for declared in parser.arguments:
        action = declared.action
        flags = [f for f in declared.flags if f.startswith("--")]
        if not flags or action.nargs == 0 or action.choices or isinstance(action, argparse.BooleanOptionalAction):
            continue
        if flags[0] in ("--index", "--input-file", "--timeout", "--cursor", "--fields", "--wait"):
            continue
        out.append([*base, flags[0], BAD.get(action.type, BAD[str])])
    if any(not d.flags[0].startswith("-") for d in parser.arguments):
        out.append([*[a for a in base if a == "--dry-run"], BAD[str]])
    return out


def test_every_command_speaks_with_flags_and_commands(cli: Any) -> None:
    found: dict[str, list[str]] = {}
    walked = 0
    for name, parser in iter_commands(build_parser()):
        if name in SKIP or parser.commands or name.split()[0] in SKIP:
            continue
        for extra in _variants(name, parser):
            argv = [*name.split(), *extra]
            _, out, err = cli(*argv)
            walked += 1
            bad = leaks(person_lines(out, err))
            if bad:
                found[" ".join(argv)] = sorted(set(bad))
    assert walked > 150, walked
    assert not found, found


def test_every_help_speaks_with_flags_and_commands() -> None:
    """A tool's description shown as a command's help (its summary and its arguments') names commands."""
    # --fields lists the record fields by name (fileId is one), which --fields takes; serve and demo describe
    # what the MCP server gives an agent, by its tools' names
    found = {name: leaks(re.sub(r"\n  --fields.*?(?=\n  -|\n\n)", "", parser.format_help(), flags=re.DOTALL))
             for name, parser in iter_commands(build_parser()) if name not in ("serve", "demo")}
    assert not {name: bad for name, bad in found.items() if bad}, found
    helps = [build_parser().format_help(), *(parser.format_help() for name, parser in iter_commands(build_parser())
                                             if name.split()[0] not in ("serve", "demo", "connect"))]
    assert not [m.group() for text in helps for p in AGENT_WORDS for m in p.finditer(text)]


def test_the_words_are_translated_from_the_tool_and_argument_names() -> None:
    """The agent's words, as the person reads them (the renderer, not the messages, does it)."""
    assert for_person("Confirm the path with files_search; do not guess variants.") == \
        "Confirm the path with `mcp-nextcloud files search`; do not guess variants."
    assert for_person("1 not listed; includeAppCalendars=true adds them.") == \
        "1 not listed; --include-app-calendars adds them."
    assert for_person("read around a match with files_read(offset=its offset)") == \
        "read around a match with `mcp-nextcloud files read --offset OFFSET`"
    assert for_person("Confirm with files_search(path='/X')") == "Confirm with `mcp-nextcloud files search --path /X`"
    assert for_person("mail_read(id) reads a message.") == "`mcp-nextcloud mail read ID` reads a message."
    assert for_person("Several people match: ask the user which one.") == "Several people match: choose which one."
    assert for_person("No calendar. Ask the user to create one in Nextcloud.") == \
        "No calendar. Create one in Nextcloud."


def test_a_tool_failure_is_said_with_the_flag(cli: Any) -> None:
    code, out, err = cli("files", "read", "/no/such/file-zz.pdf")
    assert code == 2 and out == ""
    assert "`mcp-nextcloud files search`" in err and "files_search" not in err
    code, out, _ = cli("files", "read", "/no/such/file-zz.pdf", "--json")   # the CLI's JSON: the same words
    assert "`mcp-nextcloud files search`" in out


def test_a_calendar_note_names_the_flag(cli: Any) -> None:
    code, out, err = cli("calendar", "list", "--start", "2026-12-01")
    assert code == 0 and "work-single-1@nextcloud.test" in out
    assert "--include-app-calendars" in err and "includeAppCalendars" not in err
