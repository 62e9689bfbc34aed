"""The MCP tools' definitions as data: the snapshot the CLI builds its tool commands from.

The CLI must start without importing the MCP SDK (tests/server/test_cli_startup.py),
so the tools' input schemas, annotations and output item fields are kept in
`tools.json` next to this module, generated from the live tool registrations:

    python3 -m mcp_nextcloud.cli.toolspec --write

tests/server/test_cli_conventions.py regenerates it in memory and fails when
the file differs, so the CLI's arguments cannot drift from the tools'.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from mcp_nextcloud.cli.console import stdout

SNAPSHOT = Path(__file__).with_name("tools.json")
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint")


def _clean(schema: Any) -> Any:
    """A pydantic JSON schema without titles, with `X | None` as X (absence already means None)."""
    if isinstance(schema, list):
        return [_clean(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (_clean_props(v) if k == "properties" else _clean(v)) for k, v in schema.items() if k != "title"}
    any_of = out.get("anyOf")
    if isinstance(any_of, list):
        rest = [s for s in any_of if s != {"type": "null"}]
        if len(rest) == 1:
            del out["anyOf"]
            out = {**rest[0], **out}
    if out.get("default", 0) is None:
        del out["default"]
    return out


def _clean_props(props: dict[str, Any]) -> dict[str, Any]:
    return {name: _clean(sub) for name, sub in props.items()}


def _item_fields(output_model: Any) -> dict[str, list[str]]:
    """For each list-of-records field of an output model: the record's declared field names."""
    import typing   # here, with pydantic: `grep --json --fields` reads the snapshot and needs neither

    from pydantic import BaseModel

    out: dict[str, list[str]] = {}
    for name, field in getattr(output_model, "model_fields", {}).items():
        ann = field.annotation
        args = [a for a in typing.get_args(ann) if a is not type(None)]
        inner = ann if typing.get_origin(ann) is list else (args[0] if len(args) == 1 else None)
        if typing.get_origin(inner) is not list:
            continue
        (item,) = typing.get_args(inner) or (None,)
        if isinstance(item, type) and issubclass(item, BaseModel):
            out[name] = [f.alias or n for n, f in item.model_fields.items()]
    return out


def _tool_entry(tool: Any, server: str) -> dict[str, Any]:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else {}
    meta = tool.meta or {}
    entry: dict[str, Any] = {
        "server": server,
        "description": tool.description,
        "annotations": {h: annotations.get(h) for h in HINTS},
        "input": _clean(tool.fn_metadata.arg_model.model_json_schema()),
    }
    if "app" in ((meta.get("ui") or {}).get("visibility") or []) and "model" not in meta["ui"]["visibility"]:
        entry["appOnly"] = True
    model = getattr(tool.fn_metadata, "output_model", None)
    if model is not None:
        entry["output"] = list(model.model_fields)
        items = _item_fields(model)
        if items:
            entry["records"] = items
    return entry


def live_tools() -> dict[str, dict[str, Any]]:
    """Every tool of both servers (files/Deck/whoami, and mcp-mail), as the snapshot records it.

    A main-server tool also records the tool module that registers it (`module`): a CLI tool command builds
    a server of that module alone.
    """
    from mcp_nextcloud.server.app import TOOL_MODULES, build_server
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.mail_app import build_mail_server

    ctx = ServerContext(account=None, index=None)   # registration does no I/O
    out: dict[str, dict[str, Any]] = {}
    for module in TOOL_MODULES:
        for tool in build_server(ctx, modules=(module,))._tool_manager.list_tools():
            out[tool.name] = {**_tool_entry(tool, "main"), "module": module}
    for tool in build_mail_server(ctx)._tool_manager.list_tools():
        out[tool.name] = _tool_entry(tool, "mail")
    return dict(sorted(out.items()))


def render(tools: dict[str, dict[str, Any]]) -> str:
    """The snapshot file's text (stable: tools sorted by name, arguments in the tool's order).

    Compact JSON, one tool per line: a change to one tool is a one-line diff.
    """
    lines = [f"{json.dumps(name)}:{json.dumps(entry, separators=(',', ':'), ensure_ascii=False)}"
             for name, entry in tools.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def load() -> dict[str, dict[str, Any]]:
    """The snapshot, as the CLI reads it (cheap: one small JSON file)."""
    data: dict[str, dict[str, Any]] = json.loads(SNAPSHOT.read_text(encoding="utf-8"))
    return data


def main(argv: list[str]) -> int:
    text = render(live_tools())
    if "--write" in argv:
        SNAPSHOT.write_text(text, encoding="utf-8")
        print(f"wrote {SNAPSHOT}", file=stdout())
        return 0
    same = SNAPSHOT.exists() and SNAPSHOT.read_text(encoding="utf-8") == text
    print("up to date" if same else (f"{SNAPSHOT} is out of date: run "
                                     "python3 -m mcp_nextcloud.cli.toolspec --write"), file=stdout())
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
