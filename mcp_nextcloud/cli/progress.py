"""The CLI's progress bar (tqdm): files done / total, bytes, rate and time left, on stderr when it is a terminal.

Libraries report progress through a callback (`indexer.models.ProgressFn`);
this is the one place that draws it. Off a terminal (pipes, CI, --json
scripts) nothing is drawn, so stdout and stderr stay clean.

Not rich: httpx imports its own command line (click, pygments, rich) whenever
rich is installed, ~150 ms on every process that loads the Nextcloud client.
"""
from __future__ import annotations

from mcp_nextcloud.cli import console
from typing import TextIO

from tqdm import tqdm


class FilesProgress:
    """A `ProgressFn` that draws a bar; use as a context manager around the work."""

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        self._stream = stream or console.stderr()
        self.enabled = self._stream.isatty() if enabled is None else enabled
        self._label = label
        self._bar: tqdm[None] | None = None

    def __enter__(self) -> "FilesProgress":
        if self.enabled:
            self._bar = tqdm(desc=self._label, total=None, unit=" files", file=self._stream,
                             ncols=console.columns(),   # the caller's width: in the service the stream is a proxy
                             leave=True)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __call__(self, done: int, total: int, path: str = "", nbytes: int | None = None) -> None:
        """progress(done, total, path): the callback the indexer and the sync call; `nbytes` downloaded so far
        (a sync) is shown beside the files."""
        if self._bar is None:
            return
        if total and self._bar.total != total:
            self._bar.total = total
        if nbytes:
            self._bar.set_postfix_str(f"{tqdm.format_sizeof(nbytes, 'B', 1024)} downloaded", refresh=False)
        self._bar.update(done - self._bar.n)   # update() keeps tqdm's rate and time left right
