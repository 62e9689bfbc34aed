"""JSON with comments (Zed's settings.json, VS Code's mcp.json): read it, and add members without losing a comment.

`parse` reads JSON plus `//` and `/* */` comments and trailing commas, as those editors do. `add_members` inserts
new members into a top-level object by text, right after its opening brace, so every comment and every byte
already there stays as it was; the result is parsed again by the caller before it is written.
"""
from __future__ import annotations

import json
from typing import Any, Iterator


def _scan(text: str) -> Iterator[tuple[int, str]]:
    """(index, kind) of each significant character: "s" a string's opening quote, "c" any other; comments and
    whitespace are skipped. A string is yielded once, at its opening quote."""
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            yield i, "s"
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("a /* comment is not closed")
            i = end + 2
        elif ch.isspace():
            i += 1
        else:
            yield i, "c"
            i += 1


def strip(text: str) -> str:
    """The same document as plain JSON: comments blanked, trailing commas dropped (offsets are kept)."""
    out = list(text)
    keep = [False] * len(text)
    last_comma = -1
    for i, kind in _scan(text):
        if kind == "s":
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            for k in range(i, j + 1):
                keep[k] = True
            last_comma = -1
            continue
        keep[i] = True
        if text[i] in "}]" and last_comma >= 0:
            keep[last_comma] = False
        last_comma = i if text[i] == "," else -1
    for i, ch in enumerate(text):
        if not keep[i] and not ch.isspace():
            out[i] = " "
    return "".join(out)


def parse(text: str) -> Any:
    """The value of a JSON-with-comments document; ValueError when it is not one."""
    if not text.strip():
        return {}
    return json.loads(strip(text))


def has_comments(text: str) -> bool:
    """Whether rewriting the document from its value would lose something (comments or trailing commas)."""
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


def _object_at(text: str, path: tuple[str, ...]) -> int:
    """The index of the `{` of the object at `path` (() is the top level); ValueError when it is not there."""
    plain = strip(text)
    depth, at, want = 0, None, list(path)
    if not want:
        first = next((i for i, kind in _scan(plain) if kind == "c"), None)
        if first is None or plain[first] != "{":
            raise ValueError("the document is not an object")
        return first
    pending_key: str | None = None
    for i, kind in _scan(plain):
        if kind == "s":
            if depth == 1:
                end = plain.index('"', i + 1)
                while plain[end - 1] == "\\":
                    end = plain.index('"', end + 1)
                pending_key = json.loads(plain[i:end + 1])
            continue
        ch = plain[i]
        if ch == "{" and depth == 1 and pending_key == want[0]:
            at = i
            if len(want) == 1:
                return at
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == ",":
            pending_key = None
    raise ValueError(f"no object at {'.'.join(path)}")


def add_members(text: str, path: tuple[str, ...], members: dict[str, Any], has_others: bool,
                indent: str = "  ") -> str:
    """`text` with `members` added first in the object at `path` (top level or one key deep), by text.

    `has_others`: whether that object already holds members (a comma then follows ours)."""
    brace = _object_at(text, path)
    pad = indent * (len(path) + 1)
    body = ",\n".join(f"{pad}{json.dumps(k)}: " + json.dumps(v, indent=len(indent)).replace("\n", "\n" + pad)
                      for k, v in members.items())
    tail = "," if has_others else "\n" + indent * len(path)
    return text[:brace + 1] + "\n" + body + tail + text[brace + 1:]
