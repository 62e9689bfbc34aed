"""The person's voice: a tool's words for an agent, said with the CLI's commands and flags.

The tools speak to an agent: "Confirm the path with files_search",
`files_read(offset=...)`, `includeAppCalendars=true`, "Ask the user which
one". The MCP answers keep that voice. At a terminal the reader is the person
who typed a command, so everything the CLI shows a person (a failure's cause
and action, an answer's hint, warnings and notes) passes through `for_person`
once: a tool name becomes the command that runs it, a tool argument the flag
that gives it, and a step meant for "the user" is addressed to the reader.

The names come from the tools' own spec (cli/tools.json) and the commands
declared over them (cli/tool_commands.py): nothing is listed twice.
"""
from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import NamedTuple

PROG = "mcp-nextcloud"


class _Names(NamedTuple):
    commands: dict[str, str]            # tool name -> "files search"
    arguments: dict[str, set[str]]      # tool name -> its argument names
    positional: dict[str, tuple[str, ...]]
    kinds: dict[str, str]               # argument name -> JSON type ("boolean", ...), any tool
    camel: frozenset[str]               # argument names with a capital (never English words)
    tool_re: re.Pattern[str]


@lru_cache(maxsize=1)
def _names() -> _Names:
    from mcp_nextcloud.cli import toolspec
    from mcp_nextcloud.cli.tool_commands import all_commands

    tools = toolspec.load()
    commands: dict[str, str] = {}
    arguments: dict[str, set[str]] = {}
    positional: dict[str, tuple[str, ...]] = {}
    kinds: dict[str, str] = {}
    for cmd in all_commands(tools):
        commands[cmd.tool] = cmd.full_name
        props = tools[cmd.tool]["input"].get("properties", {})
        arguments[cmd.tool] = set(props)
        positional[cmd.tool] = cmd.positional
        for prop, schema in props.items():
            kinds.setdefault(prop, schema.get("type", "string"))
    for tool in tools:   # app-only tools have no command: named by what runs them
        commands.setdefault(tool, "")
    camel = frozenset(k for k in kinds if k != k.lower())
    names = "|".join(sorted(map(re.escape, commands), key=len, reverse=True))
    return _Names(commands, arguments, positional, kinds, camel, re.compile(rf"`?\b({names})\b`?"))


def flag(prop: str) -> str:
    """A tool argument's CLI flag: modifiedAfter -> --modified-after (cli/tool_commands.option)."""
    from mcp_nextcloud.cli.tool_commands import option

    return option(prop)


def _value(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        raw = raw[1:-1]
    elif " " in raw:   # `offset=its offset`: a description of the value, not one
        return raw.upper().replace(" ", "_").removeprefix("ITS_").removeprefix("THE_")
    return raw if raw in ("...", "…") or raw.startswith("<") else shlex.quote(raw)


def _given(prop: str, raw: str, positional: tuple[str, ...] = ()) -> str:
    """One `prop=value` as the command line gives it: a flag and its value, a bare flag, or the value alone."""
    value = raw.strip().strip("'\"")
    if _names().kinds.get(prop) == "boolean" and value.lower() in ("true", "false"):
        return flag(prop) if value.lower() == "true" else "--no-" + flag(prop)[2:]
    if prop in positional:
        return _value(raw)
    return f"{flag(prop)} {_value(raw)}"


_PAIR = re.compile(r"([A-Za-z]+)\s*=\s*('[^']*'|\"[^\"]*\"|\.\.\.|…|[^,)]+)")


def _call(tool: str, inside: str | None) -> str:
    names = _names()
    command = names.commands[tool]
    if not command:
        return "the preview app" if tool.startswith("mail_") else "the MCP server"
    words = [PROG, command]
    for bare in re.findall(r"(?:^|,)\s*([A-Za-z]+)\s*(?=,|$)", inside or ""):   # `mail_read(id)`
        if bare in names.arguments[tool]:
            words.append(bare.upper() if bare in names.positional.get(tool, ()) else f"{flag(bare)} {bare.upper()}")
    for prop, raw in _PAIR.findall(inside or ""):
        words.append(_given(prop, raw, names.positional.get(tool, ())) if prop in names.arguments[tool]
                     else f"{prop}={raw}")
    return "`" + " ".join(words) + "`"


def _tools(text: str) -> str:
    """`files_read(offset=...)` -> `mcp-nextcloud files read --offset ...`; a bare tool name -> its command."""
    names = _names()
    out, at = [], 0
    pattern = names.tool_re
    for match in pattern.finditer(text):
        tool = match.group(1)
        end = match.end()
        inside = None
        if text.startswith("(", end):
            close = text.find(")", end)
            if close != -1:
                inside, end = text[end + 1:close], close + 1
        else:   # `deck_create_card board=3`: the pairs that follow belong to the call
            trail = re.match(r"(?:\s+[A-Za-z]+=[^\s,;.)]+)+", text[end:])
            if trail and all(p in names.arguments[tool] for p, _ in _PAIR.findall(trail.group())):
                inside, end = trail.group(), end + trail.end()
        out += [text[at:match.start()], _call(tool, inside)]
        at = end
    return "".join(out) + text[at:]


def _arguments(text: str) -> str:
    """Tool arguments outside a call: `includeAppCalendars=true` -> `--include-app-calendars`, fileId -> --file-id."""
    names = _names()

    def pair(match: re.Match[str]) -> str:
        prop, raw = match.group(1), match.group(2)
        if prop not in names.kinds:
            return match.group()
        return _given(prop, raw)

    text = re.sub(r"(?<![-\w`])([A-Za-z]+)=('[^']*'|\"[^\"]*\"|[^\s,;)]+?)(?=[\s,;)]|\.(?:\s|$)|$)", pair, text)
    if names.camel:
        camel = "|".join(sorted(names.camel, key=len, reverse=True))
        text = re.sub(rf"(?<![-\w.])({camel})\b(?!\()", lambda m: flag(m.group(1)), text)
    return text


# Steps the tools address to "the user": at a terminal the user is the reader. A step that loses its lead words
# ("Ask the user to create one" -> "Create one") keeps the capital of a sentence's start.
_TO_READER: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\s*Tell the user this\."), ""),
    (re.compile(r"Tell the user \(no tool can do this\) to run"), "run"),
    (re.compile(r"\b[Tt]ell the user to "), ""),
    (re.compile(r"\b[Aa]sk the user to "), ""),
    (re.compile(r"\b[Aa]sk the user (?=which|whom|what)"), "choose "),
    (re.compile(r"\b[Aa]sk the user for\b"), "give"),
    (re.compile(r"\b[Aa]sk the user before "), "check before "),
    (re.compile(r"\b[Tt]ell the user (?:that )?"), ""),
    (re.compile(r"\blet the user "), ""),
    (re.compile(r"\bshow the user\b"), "look at"),
    (re.compile(r"\bcall again\b"), "run it again"),
    (re.compile(r"\bwith the user\b"), "yourself"),
    (re.compile(r"\bby the user\b"), "by you"),
    (re.compile(r"\bfor the user\b"), "for you"),
    (re.compile(r"\bthe user's\b"), "your"),
    (re.compile(r"\b[Cc]all (?=`mcp-nextcloud)"), "run "),
)
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)$")


def _reword(pattern: re.Pattern[str], replacement: str, text: str) -> str:
    """One step for the reader; where it starts a sentence, what now starts it gets the capital."""
    def one(match: re.Match[str]) -> str:
        said = replacement + match.group("next")
        if _SENTENCE_START.search(text[:match.start()]) is None:
            return said
        return said[:1].upper() + said[1:]

    return re.compile(pattern.pattern + r"(?P<next>\w?)").sub(one, text)


def for_person(text: str) -> str:
    """Text a tool wrote for an agent, as the CLI says it to the person at the terminal."""
    if not text:
        return text
    text = _arguments(_tools(text))
    for pattern, replacement in _TO_READER:
        text = _reword(pattern, replacement, text)
    return text
