"""The CLI's progress bar: drawn on a terminal with done/total, silent elsewhere."""
from __future__ import annotations

import io

from mcp_nextcloud.cli.progress import FilesProgress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_shows_files_done_of_total_on_a_terminal() -> None:
    out = _Terminal()
    with FilesProgress("indexing", stream=out) as progress:
        progress(1, 5, "/a.pdf")
        progress(3, 5, "/b.pdf")
    drawn = out.getvalue()
    assert "indexing" in drawn and "3/5" in drawn and drawn.endswith("\n")


def test_nothing_is_drawn_off_a_terminal() -> None:
    out = io.StringIO()
    with FilesProgress("indexing", stream=out) as progress:
        progress(2, 4, "/a.pdf")
    assert out.getvalue() == ""
