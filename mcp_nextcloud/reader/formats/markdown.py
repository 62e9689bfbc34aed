"""Markdown: the text as written; ATX and setext headings (outside code fences) to the outline."""
from __future__ import annotations

import re

from ..document import Document, Limits, OutlineEntry
from ._common import decode_text

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")


def headings(text: str) -> list[OutlineEntry]:
    """Headings with level, offset and 1-based line; fenced code blocks are skipped."""
    out: list[OutlineEntry] = []
    fence: str | None = None
    offset = 0
    prev: tuple[int, int, str] | None = None  # (offset, line, text) of the previous plain line
    for lineno, line in enumerate(text.splitlines(keepends=True), 1):
        body = line.rstrip("\r\n")
        m = _FENCE.match(body)
        if m:
            marker = m.group(1)[0]
            fence = None if fence == marker else (fence or marker)
            prev = None
        elif fence is None:
            atx = _ATX.match(body)
            setext = _SETEXT.match(body)
            if atx:
                out.append(OutlineEntry(title=atx.group(2).strip(), level=len(atx.group(1)),
                                        offset=offset + body.index("#"), line=lineno))
                prev = None
            elif setext and prev is not None and prev[2].strip():
                level = 1 if setext.group(1)[0] == "=" else 2
                out.append(OutlineEntry(title=prev[2].strip(), level=level, offset=prev[0], line=prev[1]))
                prev = None
            else:
                prev = (offset, lineno, body)
        offset += len(line)
    return out


def extract(data: bytes, name: str, limits: Limits) -> Document:
    text, warnings = decode_text(data)
    return Document(text=text, kind="markdown", name=name, mime="text/markdown",
                    outline=headings(text), warnings=warnings, engine="markdown")
