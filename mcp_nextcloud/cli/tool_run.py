"""Running a tool command: arguments -> the MCP tool's own call path -> the CLI's output conventions.

Order matters: every check that needs no network (the input file, --fields,
the cursor's binding, required arguments, --confirm) runs before the client
exists, so bad input never causes I/O. The tool then runs through the MCP
server's call path (same pydantic validation, same work module, same answer).
Retries and deadlines live in one layer only, nextcloud/http.py: this module
passes --timeout as the client's total deadline and never retries itself.
"""
from __future__ import annotations

import argparse
import json
from typing import Any, Callable

from mcp_nextcloud.cli import toolspec
from mcp_nextcloud.nextcloud.errors import NextcloudError
from mcp_nextcloud.cli.errors import CliError, report
from mcp_nextcloud.cli.output import emit
from mcp_nextcloud.cli.dates import resolve_all
from mcp_nextcloud.cli.tool_commands import (FIELDS_SEPARATOR, ToolCommand, alias_dest, is_write, needs_confirm,
                                             option)
from mcp_nextcloud.cli.console import current, stdin


def runner(cmd: ToolCommand) -> Callable[[argparse.Namespace], int]:
    """The `func` of a tool command's parser."""

    def run(args: argparse.Namespace) -> int:
        try:
            return _run(cmd, args)
        except (CliError, NextcloudError) as err:
            return report(err, args.json, cmd.full_name and f"mcp-nextcloud {cmd.full_name}")

    return run


def arguments_from(cmd: ToolCommand, spec: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """The tool's arguments: the --input-file object, overridden by the options given; checked for required ones."""
    props: dict[str, Any] = spec["input"].get("properties", {})
    values: dict[str, Any] = {}
    if args.input_file:
        values = read_input_file(args.input_file)
        unknown = sorted(set(values) - set(props))
        if unknown:
            raise CliError(f"{args.input_file} names {', '.join(unknown)}, which {cmd.full_name} does not take "
                           f"(it takes {', '.join(props) or 'no arguments'})", usage=True)
    for prop in props:
        given = _given(cmd, args, prop)
        if given is not None:
            values[prop] = given
    for prop, value in cmd.defaults:
        values.setdefault(prop, value)
    values = resolve_all(values)
    missing = [p for p in spec["input"].get("required", []) if p not in values]
    if missing:
        flags = ", ".join(p.upper() if p in cmd.positional else option(p) for p in missing)
        raise CliError(f"{cmd.full_name} needs {flags} (or the same names in --input-file)", usage=True)
    return values


def _given(cmd: ToolCommand, args: argparse.Namespace, prop: str) -> Any:
    """An argument as given on the command line: a positional one by place or by its flag, not both."""
    given = getattr(args, prop, None)
    alias = getattr(args, alias_dest(prop), None) if prop in cmd.positional else None
    if given is not None and alias is not None and given != alias:
        raise CliError(f"{cmd.full_name} got {prop.upper()} twice ({given!r} and {option(prop)} {alias!r}): "
                       f"give one", usage=True)
    return given if given is not None else alias


def read_input_file(path: str) -> dict[str, Any]:
    """A JSON object from a file ('-' is stdin); a clear error for a missing file or bad JSON."""
    try:
        text = stdin().read() if path == "-" else current().path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CliError(f"--input-file {path} does not exist: give the path of a JSON file", usage=True) from None
    except OSError as exc:
        raise CliError(f"--input-file {path} cannot be read ({exc.strerror or exc})", usage=True) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"--input-file {path} is not valid JSON (line {exc.lineno}: {exc.msg})", usage=True) from None
    if not isinstance(data, dict):
        raise CliError(f"--input-file {path} must hold one JSON object of arguments", usage=True)
    return data


def requested_fields(cmd: ToolCommand, spec: dict[str, Any], raw: str | None) -> list[str] | None:
    """--fields checked against the record's declared fields; an unknown name is an error, never dropped."""
    if raw is None:
        return None
    known = spec["records"][cmd.records]
    asked = [f.strip() for f in raw.split(FIELDS_SEPARATOR) if f.strip()]
    unknown = [f for f in asked if f not in known]
    if unknown or not asked:
        raise CliError(f"--fields {raw!r}: unknown field(s) {', '.join(unknown) or '(none given)'}; "
                       f"{cmd.full_name} records have {', '.join(known)}", usage=True)
    return asked


def _run(cmd: ToolCommand, args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli import cursor as cursors

    spec = toolspec.load()[cmd.tool]
    arguments = arguments_from(cmd, spec, args)
    fields = requested_fields(cmd, spec, getattr(args, "fields", None)) if cmd.records else None
    dry_run = bool(getattr(args, "dry_run", False))
    if needs_confirm(spec) and not dry_run and not getattr(args, "confirm", False):
        raise CliError(f"{cmd.full_name} changes your Nextcloud and needs a person's go-ahead: add --confirm to "
                       "run it, or --dry-run to see what it would do first", usage=True, status="needs_confirm")
    account = _account()
    binding = cursors.binding(cmd.tool, arguments, account) if cmd.records else ""
    if cmd.records and getattr(args, "cursor", None):
        arguments["cursor"] = cursors.unwrap(args.cursor, binding)
    from mcp_nextcloud.cli.tool_exec import execute

    outcome = execute(cmd, spec, arguments, account, args, dry_run=dry_run and is_write(spec))
    if outcome.plan is not None:
        return emit(outcome.plan, args.json, kind="plan")
    payload = outcome.payload
    if cmd.records:
        payload = collection(cmd, payload, fields, binding)
    return emit(payload, args.json, kind="collection" if cmd.records else "record")


def collection(cmd: ToolCommand, payload: dict[str, Any], fields: list[str] | None, binding: str) -> dict[str, Any]:
    """A tool's list answer as {"items", "page"}; --fields trims records only, never ids or the page."""
    from mcp_nextcloud.cli import cursor as cursors

    items = payload.pop(cmd.records or "", []) or []
    if fields is not None:
        keep = set(fields) | set(cmd.ids)
        items = [{k: v for k, v in item.items() if k in keep} for item in items]
    nxt = payload.pop("nextCursor", None)
    # A tool without a cursor still says whether it cut the list: has_more, with no way on but a larger --limit.
    cut = bool(payload.pop("truncated", False))
    if "nextCursor" in str(payload.get("hint", "")):
        del payload["hint"]     # the tool's "pass nextCursor" is said by page.next_cursor here
    page = {"returned": len(items), "has_more": nxt is not None or cut,
            "next_cursor": cursors.wrap(nxt, binding) if nxt is not None else None}
    return {"items": items, "page": page, **payload}


def _account() -> Any:
    from mcp_nextcloud.nextcloud.config import load_account, no_account

    account = load_account()      # a NextcloudError (an unreadable config) is reported as the table words it
    if account is None:
        raise no_account()
    return account
