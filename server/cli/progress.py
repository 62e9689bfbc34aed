"""The CLI's progress bar (rich): files done / total, rate and time left, on stderr when it is a terminal.

Libraries report progress through a callback (`indexer.models.ProgressFn`);
this is the one place that draws it. Off a terminal (pipes, CI, --json
scripts) nothing is drawn, so stdout and stderr stay clean.
"""
from __future__ import annotations

import sys
from typing import TextIO

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn,
                           TimeRemainingColumn)


class FilesProgress:
    """A `ProgressFn` that draws a bar; use as a context manager around the work."""

    def __init__(self, label: str, *, stream: TextIO | None = None, enabled: bool | None = None) -> None:
        stream = stream or sys.stderr
        self.enabled = stream.isatty() if enabled is None else enabled
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._label = label
        if self.enabled:
            self._bar = Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                console=Console(file=stream), transient=False)

    def __enter__(self) -> "FilesProgress":
        if self._bar is not None:
            self._bar.start()
            self._task = self._bar.add_task(self._label, total=None, rate="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def __call__(self, done: int, total: int, path: str = "") -> None:
        """progress(done, total, path): the callback the indexer and the sync call."""
        if self._bar is None or self._task is None:
            return
        speed = self._bar.tasks[0].speed
        rate = f"{speed:.0f} files/s" if speed else ""
        self._bar.update(self._task, completed=done, total=total or None, rate=rate)
