"""What one agent may touch: its folders, whether it may change anything, which tools it has.

A profile is decided by the person (`serve --folder PATH --read-only --tools A,B`, or one per bearer token
with `mcp-nextcloud token add`) and enforced here, in one place:

- `Profile.allows(path)`: the one path rule. Paths are compared as Nextcloud names them: NFC, `//` and
  a trailing `/` folded, `.` dropped, `..` refused (never resolved: it could climb out), and otherwise
  byte for byte: case-sensitive, `/Projects-old` is not inside `/Projects`, a look-alike letter is
  another name. Every file tool calls it (or `check_path` / `hide_outside`) before it reads, lists,
  writes or shares; a tool added later adopts the jail with one call.
- `Profile.offers(name, annotations)`: whether a tool is listed and callable. Read-only is derived from
  the tools' own readOnlyHint (the one source of truth the approval policy also reads). A profile limited
  to folders offers the file tools (and whoami) only, unless `--tools` names others: Talk, calendars,
  Deck, contacts, tasks and mail live in no folder, so a folder cannot limit them.
- `Profile.summary(tools)`: what it allows in one sentence (whoami, `token add`, `token list` say it).

The profile in force is a context variable: the process's (from `serve` options) unless the HTTP guard
set a bearer token's own for the request it is serving (server/http_auth.py). Worker threads inherit it.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from mcp_nextcloud.nextcloud.errors import Category
from mcp_nextcloud.server.errors import ToolFailure
from mcp_nextcloud.server.status import ToolStatus


@dataclass(frozen=True)
class Profile:
    """Folders (None: the whole account), read-only, an allowlist of tools (None: all), and a name."""

    name: str = "default"
    folders: tuple[str, ...] | None = None
    read_only: bool = False
    tools: frozenset[str] | None = None

    @property
    def unrestricted(self) -> bool:
        return self.folders is None and not self.read_only and self.tools is None

    # -- paths --------------------------------------------------------------------------------
    def allows(self, path: str | None) -> bool:
        """Whether `path` (a file or folder) is inside one of the profile's folders (or there is no jail)."""
        if self.folders is None:
            return True
        norm = canonical(path)
        return norm is not None and any(inside(norm, folder) for folder in self.folders)

    def scopes(self, folder: str | None) -> list[str | None]:
        """The folders a listing under `folder` (None: everything) may look in: [] when none is visible.

        Inside a jail folder: that folder. Above some (`/`, or `/Work` holding `/Work/Scans`): those
        jail folders. Elsewhere: nothing, as for a folder that does not exist.
        """
        if self.folders is None:
            return [folder]
        norm = canonical(folder or "/")
        if norm is None:
            return []
        if self.allows(norm):
            return [norm]
        return [f for f in self.folders if inside(f, norm)]

    # -- tools --------------------------------------------------------------------------------
    def offers(self, name: str, annotations: Any) -> bool:
        """Whether the tool is listed and may be called: in the allowlist (a folder jail without one: the file
        tools and whoami), and read-only when the profile is."""
        read_only = getattr(annotations, "read_only_hint", None) or getattr(annotations, "readOnlyHint", None)
        return self._offers(name, bool(read_only))

    def _offers(self, name: str, read_only_tool: bool) -> bool:
        if self.tools is not None:
            if name not in self.tools:
                return False
        elif self.folders is not None and not in_folders(name):
            return False   # Talk, calendars, Deck, contacts, tasks and mail live in no folder: not for a jail
        return read_only_tool or not self.read_only

    def offered(self, tools: Mapping[str, bool]) -> list[str]:
        """Of `tools` ({name: its readOnlyHint}), the names this profile offers, sorted."""
        return sorted(name for name, read_only_tool in tools.items() if self._offers(name, read_only_tool))

    def summary(self, tools: Mapping[str, bool]) -> str:
        """What the profile allows, in one sentence: its folders, reads or writes, and every tool it offers."""
        where = "only " + ", ".join(self.folders) if self.folders is not None else "every folder"
        mode = "read-only" if self.read_only else "reads and writes"
        text = f"Profile {self.name!r}: {where}, {mode}; tools: {', '.join(self.offered(tools)) or 'none'}."
        if self.tools is not None:
            text += " Only tools named by --tools."
        elif self.folders is not None:
            text += (" A folder profile offers the file tools only (Talk, calendars, tasks, Deck, contacts and mail "
                     "live in no folder), unless --tools names others.")
        if self.read_only:
            text += " No tool that changes anything."
        return text

    def describe(self) -> dict[str, Any]:
        """What whoami shows: the profile's name and limits (None where there is none)."""
        return {"name": self.name, "folders": list(self.folders) if self.folders is not None else None,
                "readOnly": self.read_only, "tools": sorted(self.tools) if self.tools is not None else None}

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.describe().items() if v not in (None, False)}


def in_folders(tool: str) -> bool:
    """The tools a folder profile offers without --tools: the file tools, and whoami (how an agent learns its
    limits)."""
    return tool.startswith("files_") or tool == "nextcloud_whoami"


def canonical(path: str | None) -> str | None:
    """A user-relative path as Nextcloud names it ('/a//b/' -> '/a/b', NFC), or None if it is not one ('..')."""
    from mcp_nextcloud.nextcloud.errors import NextcloudError
    from mcp_nextcloud.nextcloud.paths import normalize

    if not isinstance(path, str):
        return None
    try:
        return normalize(path if path.startswith("/") else "/" + path)
    except NextcloudError:
        return None


def inside(path: str, folder: str) -> bool:
    """`path` is `folder` or below it (both canonical): '/Projects-old' is not inside '/Projects'."""
    return folder == "/" or path == folder or path.startswith(folder.rstrip("/") + "/")


def build(name: str = "default", *, folders: Iterable[str] | None = None, read_only: bool = False,
          tools: Iterable[str] | None = None, known_tools: Iterable[str] | None = None) -> Profile:
    """A profile from options; ValueError naming the fix for a folder that is not a path or an unknown tool."""
    kept: tuple[str, ...] | None = None
    if folders:
        normed = []
        for raw in folders:
            norm = canonical(raw.strip())
            if norm is None or not raw.strip():
                raise ValueError(f"--folder {raw!r} is not a folder path: give an absolute path such as /Projects "
                                 "(no '..')")
            normed.append(norm)
        kept = tuple(dict.fromkeys(normed))
    allow: frozenset[str] | None = None
    if tools is not None:
        allow = frozenset(t.strip() for t in tools if t.strip())
        if known_tools is not None:
            unknown = sorted(allow - set(known_tools))
            if unknown:
                raise ValueError(f"unknown tool name(s) {', '.join(unknown)} in --tools; the tools are: "
                                 f"{', '.join(sorted(known_tools))}")
        if not allow:
            raise ValueError("--tools is empty: name at least one tool, or leave --tools out for all of them")
    return Profile(name=name, folders=kept, read_only=read_only, tools=allow)


# -- the profile in force ---------------------------------------------------------------------------

UNRESTRICTED = Profile()
_CURRENT: contextvars.ContextVar[Profile | None] = contextvars.ContextVar("mcp_nextcloud_profile", default=None)


@dataclass
class _Process:
    profile: Profile = field(default_factory=Profile)


_PROCESS = _Process()


def set_process_profile(profile: Profile) -> None:
    """The profile of this process (serve's options): in force wherever no token set its own."""
    _PROCESS.profile = profile


def current() -> Profile:
    """The profile in force for the call being served."""
    return _CURRENT.get() or _PROCESS.profile


class using:
    """`with profile.using(p):` serve a request (or a test) under `p`."""

    def __init__(self, profile: Profile) -> None:
        self._profile = profile
        self._token: contextvars.Token[Profile | None] | None = None

    def __enter__(self) -> Profile:
        self._token = _CURRENT.set(self._profile)
        return self._profile

    def __exit__(self, *exc: Any) -> None:
        assert self._token is not None
        _CURRENT.reset(self._token)


# -- the answers --------------------------------------------------------------------------------------

OUTSIDE = ToolStatus.OUTSIDE_PROFILE   # telemetry status of a jail refusal (the agent's text is a missing file's)
NOT_OFFERED = ToolStatus.NOT_IN_PROFILE   # telemetry status of a tool the profile does not offer


def as_missing(failure: BaseException) -> BaseException:
    """Mark a 'does not exist' answer as the jail's: same text for the agent, counted as a refusal."""
    failure.outside_profile = True  # type: ignore[attr-defined]
    return failure


def refused_by_profile(exc: BaseException | None) -> bool:
    """Whether a failure (or its cause) is a jail refusal marked by `as_missing`."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if getattr(exc, "outside_profile", False):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def missing_path(path: str) -> BaseException:
    """The error a path that does not exist gets from WebDAV (its 404), marked as the jail's."""
    from mcp_nextcloud.nextcloud.errors import error_for

    return as_missing(error_for("webdav", 404, path=path))


def require(path: str) -> str:
    """`path` when the profile allows it; else the answer a missing file gets (no existence leak)."""
    if not current().allows(path):
        raise missing_path(path)
    return path


def writable(path: str) -> str:
    """`path` when the profile allows writing there; else one answer whatever exists at that path.

    (A missing file's answer cannot serve a write: writing creates what is missing. This one is the
    same for an existing file, a missing one and a folder, so it tells nothing about what is there.)
    """
    p = current()
    if not p.allows(path):
        raise as_missing(ToolFailure(
            f"{path} is outside the folders this agent may use ({', '.join(p.folders or ())}): write inside one "
            "of them.", category=Category.REFUSED, status=OUTSIDE))
    return path


def not_offered(name: str) -> ToolFailure:
    p = current()
    return ToolFailure(f"{name} is not available to this agent (profile {p.name!r} allows "
                       f"{'only read-only tools' if p.read_only else 'only some tools'}). Call tools/list for the "
                       "tools it may use.", category=Category.REFUSED, status=NOT_OFFERED)


def visible(items: Iterable[Any], key: str = "path") -> Iterator[Any]:
    """The items (dicts with a path, or objects with .path) the profile allows; the rest are never seen."""
    p = current()
    for item in items:
        path = item.get(key) if isinstance(item, dict) else getattr(item, key, None)
        if p.allows(path):
            yield item
