"""Log levels are the application's choice: the CLI sets them here, libraries only create loggers.

httpx logs every request's full URL at INFO and httpcore logs hosts at DEBUG;
the rule is no internal URL in any log line, so they stay at WARNING unless
the user configured those loggers. pdfminer logs a warning per damaged object
("MediaBox missing ..."); the Document's warnings already say the file is
damaged, so it stays at ERROR.

The levels are set when the first of these libraries is imported (or at once
when `logging` is already loaded): a command that loads none of them (grep,
inspect of a sound PDF) never imports `logging`, ~3 ms of a call an agent pays
each time (issue 17).
"""
from __future__ import annotations

import sys
from typing import Any

QUIET = {"httpx": "WARNING", "httpcore": "WARNING", "pdfminer": "ERROR"}


def quiet_libraries() -> None:
    """Raise the chatty libraries' log levels, leaving any level already configured alone."""
    if "logging" in sys.modules or any(name in sys.modules for name in QUIET):
        _set_levels()
    elif not any(isinstance(f, _QuietOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietOnImport())


def _set_levels() -> None:
    import logging

    for name, level in QUIET.items():
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)


class _QuietOnImport:
    """An import hook that finds nothing: it sets the levels as the first chatty library starts importing.

    That library imports `logging` itself and logs only once loaded, so no
    line it writes comes before its level is set.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name in QUIET:
            sys.meta_path.remove(self)
            _set_levels()
        return None
