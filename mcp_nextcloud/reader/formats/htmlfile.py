"""HTML: visible text only (no tags, scripts, styles); h1–h6 become outline entries."""
from __future__ import annotations

from html.parser import HTMLParser

from ..document import Document, Limits
from ._common import PagedText, decode_text

_SKIP = {"script", "style", "template", "noscript", "svg", "head"}
_BLOCK = {"p", "div", "br", "li", "tr", "table", "section", "article", "header", "footer", "ul", "ol",
          "blockquote", "pre", "hr", "title", "dd", "dt", "nav", "main", "aside", "form", "figure"}
_HEADINGS = {f"h{i}": i for i in range(1, 7)}


class _TextParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out = PagedText()
        self.skip = 0
        self.buf: list[str] = []
        self.heading: tuple[int, list[str]] | None = None

    def _flush(self) -> None:
        text = " ".join("".join(self.buf).split())
        self.buf = []
        if text:
            self.out.line(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag in _HEADINGS:
            self._flush()
            self.heading = (_HEADINGS[tag], [])
        elif tag in _BLOCK:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag in _HEADINGS and self.heading is not None:
            level, parts = self.heading
            self.heading = None
            title = " ".join("".join(parts).split())
            if title:
                self.out.heading(title, level)
        elif tag in _BLOCK:
            self._flush()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        (self.heading[1] if self.heading is not None else self.buf).append(data)


def extract(data: bytes, name: str, limits: Limits) -> Document:
    text, warnings = decode_text(data)
    parser = _TextParser()
    parser.feed(text)
    parser.close()
    parser._flush()
    return parser.out.build("html", name, "text/html", warnings=warnings, engine="html.parser")
