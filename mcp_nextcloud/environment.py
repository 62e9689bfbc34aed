"""The environment a piece of work runs with: the process's own, or the one a request brought.

The index service runs the calls of many callers side by side; each brings its
own variables (credentials, settings, HOME and XDG folders). A call's code asks
`environ()` instead of reading `os.environ`, and the service wraps each request
in `using(its_env)`: a context variable, so threads serving other calls never
see it and nothing of the process changes. Standard library only: every
package may import this module (tests/test_layers.py).
"""
from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

APP = "mcp-nextcloud"
# The variables a caller's work runs with when the index service runs it (they travel with each call,
# service/client.py): every NEXTCLOUD_* and MCP_NEXTCLOUD_*, the user's folders, locale and zone.
CARRIED_PREFIXES = ("NEXTCLOUD_", "MCP_NEXTCLOUD_")
CARRIED = ("HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", "TZ",
           "LANG", "LC_ALL", "LC_CTYPE", "LC_TIME", "NO_COLOR")
_ENV: contextvars.ContextVar[Mapping[str, str] | None] = contextvars.ContextVar("mcp_nextcloud_env", default=None)

# The XDG base folders (Linux and the BSDs): variable, default under $HOME.
_XDG = {"data": ("XDG_DATA_HOME", ".local/share"), "config": ("XDG_CONFIG_HOME", ".config"),
        "cache": ("XDG_CACHE_HOME", ".cache"), "state": ("XDG_STATE_HOME", ".local/state")}


def environ() -> Mapping[str, str]:
    """The variables of the work running in this context (a request's, else the process's)."""
    env = _ENV.get()
    return os.environ if env is None else env


def process() -> Mapping[str, str]:
    """The process's own variables, whatever call runs: for what belongs to the process, never to a caller
    (the index service's idle time, the variables a command sends with its request to the service)."""
    return os.environ


def set_process_default(name: str, value: str) -> None:
    """Give the process a variable it lacks (a library reads it when it loads: OpenMP's spin count)."""
    os.environ.setdefault(name, value)


def carried(name: str) -> bool:
    """Whether a variable is the caller's (it travels with a call) rather than the process's."""
    return name.startswith(CARRIED_PREFIXES) or name in CARRIED


def for_child() -> dict[str, str]:
    """The environment of a process this work starts: the process's own, with this work's carried variables
    in place of the process's (another caller's credentials never reach it)."""
    env = _ENV.get()
    if env is None:
        return dict(os.environ)
    child = {k: v for k, v in os.environ.items() if not carried(k)}
    child.update(env)
    return child


@contextlib.contextmanager
def using(env: Mapping[str, str]) -> Iterator[None]:
    """Run the block (and what it calls in this thread) with `env` as its environment."""
    token = _ENV.set(env)
    try:
        yield
    finally:
        _ENV.reset(token)


def home() -> Path:
    """$HOME of this context (os.path.expanduser's rule, without reading the process's variables)."""
    value = environ().get("HOME")
    return Path(value) if value else Path(os.path.expanduser("~"))


def expand(path: str | os.PathLike[str]) -> Path:
    """A user's path with `~` expanded against this context's HOME."""
    text = os.fspath(path)
    if text == "~" or text.startswith("~/"):
        return home() / text[2:]
    return Path(text).expanduser()


def user_dir(kind: str) -> Path:
    """This app's folder of a kind ("data", "config", "cache", "state"), as platformdirs places it.

    On Linux and the BSDs from this context's XDG variables and HOME (platformdirs reads the process's);
    elsewhere platformdirs decides (macOS and Windows folders do not follow variables a host passes)."""
    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        name, default = _XDG[kind]
        base = environ().get(name, "").strip()
        return (Path(base) if base else home() / default) / APP
    import platformdirs

    finder = {"data": platformdirs.user_data_dir, "config": platformdirs.user_config_dir,
              "cache": platformdirs.user_cache_dir, "state": platformdirs.user_state_dir}[kind]
    return Path(finder(APP))
