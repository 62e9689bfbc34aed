"""Log levels are the application's choice: the CLI sets them here, libraries only create loggers.

httpx logs every request's full URL at INFO and httpcore logs hosts at DEBUG;
the rule is no internal URL in any log line, so they stay at WARNING unless
the user configured those loggers. pdfminer logs a warning per damaged object
("MediaBox missing ..."); the Document's warnings already say the file is
damaged, so it stays at ERROR.

A command that can load none of these libraries sets `chatty_libraries=False`
in its parser's defaults (grep: it reads the index only) and is spared
importing `logging` (~3 ms of a call an agent pays each time, issue 17).
"""
from __future__ import annotations

import logging

QUIET = {"httpx": logging.WARNING, "httpcore": logging.WARNING, "pdfminer": logging.ERROR}


def quiet_libraries() -> None:
    """Raise the chatty libraries' log levels, leaving any level already configured alone."""
    for name, level in QUIET.items():
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(level)
