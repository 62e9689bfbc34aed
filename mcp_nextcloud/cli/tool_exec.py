"""Executing a tool for the CLI: context, the server's call path, dry runs, artifacts. Heavy imports live here.

A dry run runs the real tool with a client that lets reads through and
stops at the first write: everything up to it (argument validation, name
resolution, every check the tool makes before writing) really happens, and
the write it was about to make - with the resolved ids - is the plan. The
block sits on the HTTP layer, so a write the recorder does not know still
never leaves the process (fails closed).
"""
from __future__ import annotations

import argparse
import hashlib
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_nextcloud.cli.output import CliError
from mcp_nextcloud.server.faultlog import CallStopped
from mcp_nextcloud.cli.tool_commands import ARTIFACT_BYTES, ToolCommand, needs_confirm
from mcp_nextcloud.environment import environ, user_dir
from mcp_nextcloud.cli.console import current, index_file

# HTTP methods that never change anything on a Nextcloud (WebDAV SEARCH and REPORT are queries).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PROPFIND", "REPORT", "SEARCH"})
# The app clients whose method calls a dry run names (NextcloudClient attributes).
APP_CLIENTS = ("webdav", "ocs", "deck", "mail", "caldav", "carddav", "talk")


@dataclass
class Outcome:
    payload: dict[str, Any]
    plan: dict[str, Any] | None = None


class WriteBlocked(CallStopped):
    """Raised on the HTTP layer in a dry run at the first request that could change something.

    A CallStopped: the server's call path answers it as a stop, not as an internal fault (no traceback
    logged), and ToolSession.call turns it into the plan.
    """


class DryRun:
    """Records the app-client call in progress and blocks the first unsafe request it makes."""

    def __init__(self) -> None:
        self.current: dict[str, Any] | None = None
        self.blocked: dict[str, Any] | None = None
        self.writes = 0

    def on_request(self, request: Any) -> None:
        if request.method.upper() in SAFE_METHODS:
            return
        self.writes += 1    # counted, never sent
        if self.blocked is None:
            self.blocked = self.current or {"call": "an unnamed write", "with": {}}
        raise WriteBlocked(self.blocked["call"])


class _Recorder:
    """An app client whose method calls are named (with their bound arguments) while they run."""

    def __init__(self, target: Any, name: str, dry: DryRun) -> None:
        self._target, self._name, self._dry = target, name, dry

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._target, attr)
        if not callable(value) or attr.startswith("_"):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            outer = self._dry.current is None
            if outer:
                self._dry.current = {"call": f"{self._name}.{attr}", "with": _bound(value, args, kwargs)}
            try:
                return value(*args, **kwargs)
            finally:
                if outer:
                    self._dry.current = None

        return call


def _bound(fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A call's arguments by name, JSON-safe: bytes as their size, None left out."""
    try:
        named = dict(inspect.signature(fn).bind(*args, **kwargs).arguments)
    except (TypeError, ValueError):
        named = {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}
    out: dict[str, Any] = {}
    for key, value in named.items():
        if value is None:
            continue
        if isinstance(value, (bytes, bytearray)):
            value = {"bytes": len(value)}
        elif not isinstance(value, (str, int, float, bool, list, dict)):
            value = str(value)
        out[key] = value
    return out


class _DryClient:
    """A NextcloudClient whose app clients are recorded and whose transport refuses unsafe requests."""

    def __init__(self, real: Any, dry: DryRun) -> None:
        self._real, self._dry = real, dry
        real.transport.client.event_hooks["request"] = [dry.on_request]

    def __getattr__(self, attr: str) -> Any:
        value = getattr(self._real, attr)
        return _Recorder(value, attr, self._dry) if attr in APP_CLIENTS else value


class ToolSession:
    """One context and server for one or more tool calls (a batch makes many); dry or real."""

    def __init__(self, spec: dict[str, Any], account: Any, args: argparse.Namespace, *, dry_run: bool) -> None:
        from mcp_nextcloud.nextcloud.client import NextcloudClient

        self.dry = DryRun() if dry_run else None
        self.args = args
        resources = current().resources   # the index service's (service/resources.py)
        pool = resources.clients if resources is not None else None
        self.pooled = pool is not None and not dry_run   # a dry run hooks its client's transport: its own
        self.real = (pool.get(account, args.timeout) if pool is not None and self.pooled
                     else NextcloudClient(account, total_timeout=args.timeout))
        client = _DryClient(self.real, self.dry) if self.dry else self.real
        try:
            self.ctx = _context(spec, account, args, client=client)
            self.server = _server(spec, self.ctx)
        except BaseException:
            if not self.pooled:
                self.real.close()
            raise

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The tool's CallToolResult; a ToolFailure becomes a CliError (a blocked dry-run write returns None)."""
        from mcp_nextcloud.nextcloud.errors import Category
        from mcp_nextcloud.server.errors import ToolFailure
        from mcp_nextcloud.service import loops

        if self.dry is not None:
            self.dry.blocked = None
        try:   # the request thread's kept loop (in the service: no new loop and worker thread per command)
            return loops.run(lambda: self.server.run_tool(tool, arguments))
        except ToolFailure as failure:
            if self.dry is not None and self.dry.blocked is not None:
                return None
            raise CliError(failure.cause, action=failure.action, usage=failure.category is Category.MISUSE,
                           status=failure.code, category=failure.category, retry=failure.retry,
                           source=failure.source, spoken=False) from None

    def close(self) -> None:
        try:
            if current().resources is not None:
                self.ctx.index = None   # the service's kept index outlives this call
            if self.pooled:
                self.ctx._client = None   # the pooled client outlives this call (ctx.close would close it)
            self.ctx.close()
        finally:
            if not self.pooled:
                self.real.close()

    def __enter__(self) -> "ToolSession":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def execute(cmd: ToolCommand, spec: dict[str, Any], arguments: dict[str, Any], account: Any,
            args: argparse.Namespace, *, dry_run: bool) -> Outcome:
    """Run the tool once through its server; a dry run returns the plan instead of writing."""
    with ToolSession(spec, account, args, dry_run=dry_run) as session:
        result = session.call(cmd.tool, arguments)
        if session.dry is not None:
            payload = dict(result.structured_content or {}) if result is not None else None
            return Outcome({}, plan(cmd, spec, arguments, session.dry, payload))
    payload = dict(result.structured_content or {})
    _artifacts(cmd, payload, result)
    return Outcome(payload)


def plan(cmd: ToolCommand, spec: dict[str, Any], arguments: dict[str, Any], dry: DryRun,
         result: dict[str, Any] | None) -> dict[str, Any]:
    """What a dry run shows: the validated arguments, the first write with resolved ids, the effects."""
    effects = [spec["description"]]
    hints = spec["annotations"]
    if hints.get("destructiveHint"):
        effects.append("may replace or remove what is there now")
    if not hints.get("idempotentHint"):
        effects.append("not idempotent: running it twice does it twice")
    out: dict[str, Any] = {"dryRun": True, "command": cmd.full_name, "tool": cmd.tool, "arguments": arguments,
                           "wouldWrite": dry.blocked, "effects": effects, "writes": 0,
                           "needsConfirm": needs_confirm(spec)}
    if result is not None:
        out["result"] = result      # the tool finished on reads alone: nothing needed writing
    return out


def _context(spec: dict[str, Any], account: Any, args: argparse.Namespace, *, client: Any) -> Any:
    from mcp_nextcloud.server.context import ServerContext, Settings

    index = None
    if spec["server"] == "main":
        resources = current().resources
        index = _open_index(getattr(args, "index", None), resources.kept if resources is not None else None)
    ctx = ServerContext(account=account, index=index, settings=Settings.from_env(machine_zone=True),
                        client_factory=lambda: client)
    return ctx


def _open_index(path: str | None, kept: Any = None) -> Any:
    """The index the tools read; a named file that does not exist is an error (never created by a typo).

    In the index service, its kept index (service/kept_index.py): every call shares its one writer."""
    from mcp_nextcloud.indexer.index import Index

    target = index_file(path)
    if path and not target.exists():
        raise CliError(f"no index at {target}: check the path, or build one with 'mcp-nextcloud index sync "
                       f"--index {target}'", usage=True, status="no_index")
    if kept is not None and target.exists():
        return kept.open(target)
    return Index.open(target)   # it makes the folder 0700 and the database 0600


def _server(spec: dict[str, Any], ctx: Any) -> Any:
    if spec["server"] == "mail":
        from mcp_nextcloud.server.mail_app import build_mail_server
        return build_mail_server(ctx)
    from mcp_nextcloud.server.app import build_server
    return build_server(ctx, modules=(spec["module"],))   # the tool's own module: the others are not needed


def artifact_dir() -> Path:
    """Where large answers are written: $MCP_NEXTCLOUD_ARTIFACTS, else the platform cache directory."""
    env = environ().get("MCP_NEXTCLOUD_ARTIFACTS")
    if env:
        return current().path(env).resolve()

    return user_dir("cache").resolve() / "artifacts"


def write_artifact(data: bytes, media_type: str, summary: str, suffix: str) -> dict[str, Any]:
    """Store bytes under a content-addressed name; the record says where, what, how big."""
    from mcp_nextcloud.indexer.store.filemodes import write_private

    path = artifact_dir() / f"{hashlib.sha256(data).hexdigest()[:16]}{suffix}"
    if not path.exists():
        write_private(path, data)   # 0600 in a 0700 folder: it is a document's text or image
    return {"path": str(path), "mediaType": media_type, "size": len(data), "summary": summary}


def _artifacts(cmd: ToolCommand, payload: dict[str, Any], result: Any) -> None:
    """Images and large text fields leave stdout for artifact files; the answer names them."""
    import base64

    from mcp.types import ImageContent

    found = []
    for block in result.content:
        if isinstance(block, ImageContent):
            raw = base64.b64decode(block.data)
            ext = "." + block.mime_type.split("/")[-1].split("+")[0]
            found.append(write_artifact(raw, block.mime_type, f"image from {cmd.tool}", ext))
            payload["hint"] = "The image is in the artifact file named in artifacts."
    for key in cmd.artifact:
        text = payload.get(key)
        if isinstance(text, str) and len(text.encode("utf-8")) > ARTIFACT_BYTES:
            data = text.encode("utf-8")
            first = " ".join(text[:120].split())
            found.append(write_artifact(data, "text/plain; charset=utf-8",
                                        f"{key}: {len(text)} characters, starting {first!r}", ".txt"))
            payload[key] = None
            payload.setdefault("hint", f"{key} was written to the artifact file (too large for stdout)")
    if found:
        payload["artifacts"] = found
