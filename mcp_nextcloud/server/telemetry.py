"""Call telemetry: one SQLite row per tool call, never an argument value or any content.

Recorded: tool name, failure kind (ok / refused / misuse / fault), a short
status (an HTTP status or an error code such as "bad_argument"), duration and
the bytes returned to the model. That is enough to see which descriptions
make models misuse a tool and what an answer costs, and nothing a person
would mind being stored. `mcp-nextcloud report` reads it back per tool.
"""
from __future__ import annotations

import contextlib
import contextvars
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator

from mcp_nextcloud.environment import environ, user_dir

from mcp_nextcloud.indexer.store.filemodes import secure_database
from mcp_nextcloud.server.status import ToolStatus

KINDS = ("ok", "refused", "misuse", "fault")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls(
    id INTEGER PRIMARY KEY,
    at REAL NOT NULL,
    tool TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('ok','refused','misuse','fault')),
    status TEXT NOT NULL,
    duration_ms REAL NOT NULL,
    bytes_out INTEGER NOT NULL,
    profile TEXT
);
CREATE INDEX IF NOT EXISTS calls_tool ON calls(tool, kind);
"""
# Statuses that are a profile's refusals (server/profile.py): a tool it does not offer, a path outside it.
# A tool the profile does not offer, a path outside its folders (the statuses profile.py gives them).
PROFILE_REFUSALS = (ToolStatus.NOT_IN_PROFILE.value, ToolStatus.OUTSIDE_PROFILE.value)


# The call log of the call being run, where one process runs calls for several callers (the index service:
# each serve's calls go to the log its own environment names); None: the server context's own.
_CALL_LOG: contextvars.ContextVar["CallLog | None"] = contextvars.ContextVar("mcp_nextcloud_call_log", default=None)


@contextlib.contextmanager
def logging_to(log: "CallLog | None") -> Iterator[None]:
    """Record the calls run in this block (this thread, and the tasks it starts) in `log`."""
    token = _CALL_LOG.set(log)
    try:
        yield
    finally:
        _CALL_LOG.reset(token)


def call_log_in_force(default: "CallLog | None") -> "CallLog | None":
    """The log of the call being run: the one `logging_to` set, else `default` (the context's)."""
    return _CALL_LOG.get() or default


def default_telemetry_path() -> Path:
    """Where the call log lives: $MCP_NEXTCLOUD_TELEMETRY, else the platform's data directory."""
    env = environ().get("MCP_NEXTCLOUD_TELEMETRY")
    if env:
        return Path(env)
    return user_dir("data") / "calls.sqlite"


class CallLog:
    """The call log. Thread-safe: tools run in worker threads, so one lock guards one connection."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        secure_database(self.path)   # 0700 folder, 0600 log: private like the index beside it
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        # WAL + NORMAL: a commit costs no fsync, so logging stays off the latency budget.
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=2000")
        self._db.executescript(_SCHEMA)
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        if "profile" not in columns:   # a log written before profiles existed
            self._db.execute("ALTER TABLE calls ADD COLUMN profile TEXT")

    def record(self, tool: str, kind: str, status: str | int, duration_ms: float, bytes_out: int,
               profile: str | None = None) -> None:
        """Store one call (`profile`: the restricted profile it ran under). Never raises: losing a row must
        not fail the tool call."""
        if kind not in KINDS:
            kind = "fault"
        try:
            with self._lock:
                self._db.execute(
                    "INSERT INTO calls(at, tool, kind, status, duration_ms, bytes_out, profile) "
                    "VALUES (?,?,?,?,?,?,?)",
                    (time.time(), tool, kind, str(status), float(duration_ms), int(bytes_out), profile),
                )
        except sqlite3.Error:
            pass

    def profile_refusals(self) -> list[dict[str, Any]]:
        """Per profile: calls, and the refusals of its limits (tools it does not offer, paths outside it)."""
        marks = ",".join("?" * len(PROFILE_REFUSALS))
        with self._lock:
            rows = self._db.execute(
                f"SELECT profile, COUNT(*), SUM(status=?), SUM(status=?), "
                f"SUM(status IN ({marks})) FROM calls WHERE profile IS NOT NULL GROUP BY profile ORDER BY profile",
                (*PROFILE_REFUSALS, *PROFILE_REFUSALS)).fetchall()
        return [{"profile": r[0], "calls": int(r[1]), "toolNotOffered": int(r[2] or 0),
                 "outsideFolders": int(r[3] or 0), "refusals": int(r[4] or 0)} for r in rows]

    def rows(self) -> list[dict[str, Any]]:
        """Every recorded call, oldest first (for tests and exports)."""
        with self._lock:
            cur = self._db.execute("SELECT at, tool, kind, status, duration_ms, bytes_out FROM calls ORDER BY id")
            cols = [c[0] for c in cur.description]
            return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]

    def summary(self) -> list[dict[str, Any]]:
        """Per tool: calls, count per kind, p50 duration, mean bytes returned, top failure statuses."""
        with self._lock:
            tools = [r[0] for r in self._db.execute("SELECT DISTINCT tool FROM calls ORDER BY tool")]
            out = []
            for tool in tools:
                kinds = dict(self._db.execute(
                    "SELECT kind, COUNT(*) FROM calls WHERE tool=? GROUP BY kind", (tool,)).fetchall())
                durations = [r[0] for r in self._db.execute(
                    "SELECT duration_ms FROM calls WHERE tool=? ORDER BY duration_ms", (tool,))]
                mean_bytes = self._db.execute(
                    "SELECT AVG(bytes_out) FROM calls WHERE tool=? AND kind='ok'", (tool,)).fetchone()[0]
                statuses = self._db.execute(
                    "SELECT status, COUNT(*) AS n FROM calls WHERE tool=? AND kind<>'ok' "
                    "GROUP BY status ORDER BY n DESC LIMIT 3", (tool,)).fetchall()
                out.append({
                    "tool": tool,
                    "calls": len(durations),
                    **{k: int(kinds.get(k, 0)) for k in KINDS},
                    "p50Ms": round(durations[len(durations) // 2], 2) if durations else 0.0,
                    "meanBytes": int(mean_bytes or 0),
                    "failures": {s: n for s, n in statuses},
                })
            return out

    def close(self) -> None:
        with self._lock:
            self._db.close()


def open_call_log(path: Path | str) -> tuple[CallLog | None, str | None]:
    """(log, note): the call log at `path`; a damaged one is set aside and a new one started.

    The log is optional: a file that is not a database (or a damaged one) is
    renamed `<name>.damaged-<unix time>` and a fresh log takes its place; if
    even that fails (a folder in the way, no permission) calls go unlogged.
    The note says which happened, for the person running the server.
    """
    path = Path(path)
    try:
        return CallLog(path), None
    except (sqlite3.Error, OSError) as exc:
        problem = f"{type(exc).__name__}: {exc}"
    if path.is_file():
        aside = path.with_name(f"{path.name}.damaged-{int(time.time())}")
        try:
            path.rename(aside)
            return CallLog(path), (f"the call log {path} could not be opened ({problem}); it was set aside as "
                                   f"{aside.name} and a new log started")
        except (sqlite3.Error, OSError) as exc:
            problem = f"{type(exc).__name__}: {exc}"
    return None, (f"the call log {path} cannot be used ({problem}); calls are not logged. Remove or fix it "
                  "to log them again")


def format_table(summary: list[dict[str, Any]]) -> str:
    """A plain-text table of `CallLog.summary()` for the terminal."""
    if not summary:
        return "no calls recorded yet"
    head = ("tool", "calls", "ok", "refused", "misuse", "fault", "p50 ms", "bytes", "top failures")
    rows = [head]
    for s in summary:
        fails = ", ".join(f"{k}×{v}" for k, v in s["failures"].items()) or "-"
        rows.append((s["tool"], str(s["calls"]), str(s["ok"]), str(s["refused"]), str(s["misuse"]),
                     str(s["fault"]), f"{s['p50Ms']:.1f}", str(s["meanBytes"]), fails))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
