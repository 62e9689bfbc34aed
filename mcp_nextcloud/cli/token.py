"""`mcp-nextcloud token add|list|remove`: bearer tokens for `serve --http`, each with its own profile.

Several agents can share one server and one account, each limited to what the person decided:
`token add --name scanner --folder /Scans --tools files_write,files_search` prints a new token once
(stdout) and stores only its SHA-256 and the profile, beside the account config (mode 0600). A running
`serve --http` reads them at start.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import current, stderr, stdout

PROG = "mcp-nextcloud token"


def register(subparsers: Subcommands) -> None:
    """Add `token add`, `token list` and `token remove`."""
    group = subparsers.add_parser("token", help="bearer tokens for serve --http, each with its own profile",
                                  description="Bearer tokens for `serve --http`, each limited to folders, "
                                  "read-only tools or a tool list.",
                                  epilog="Example: mcp-nextcloud token add --name scanner --folder /Scans")
    sub = group.add_commands(dest="action", metavar="ACTION", title="actions")
    group.set_defaults(func=group.help_command())
    add = sub.add_parser("add", help="make a token with its own profile (printed once)",
                         description="Make a new bearer token whose agent sees only the given folders, only "
                         "read-only tools, or only the named tools. The token is printed once; only its "
                         "SHA-256 is stored. Restart `serve --http` to accept it.",
                         epilog="Example: mcp-nextcloud token add --name research --read-only")
    add.add_argument("--name", required=True, help="the profile's name (whoami and report show it)")
    add.add_argument("--folder", action="append", metavar="PATH", help="a folder the agent may use (repeatable)")
    add.add_argument("--read-only", action="store_true", help="only tools that change nothing")
    add.add_argument("--tools", metavar="A,B", help="only these tools (comma-separated names)")
    add.add_argument("--config", type=Path, default=None, help="account config file (default: the usual one)")
    add_json(add)
    add.set_defaults(func=run_add)
    ls = sub.add_parser("list", help="the tokens' names and profiles (never the tokens)",
                        epilog="Example: mcp-nextcloud token list --json")
    ls.add_argument("--config", type=Path, default=None, help="account config file")
    add_json(ls)
    ls.set_defaults(func=run_list)
    rm = sub.add_parser("remove", help="revoke a token by its name",
                        epilog="Example: mcp-nextcloud token remove --name scanner")
    rm.add_argument("--name", required=True, help="the token's profile name")
    rm.add_argument("--config", type=Path, default=None, help="account config file")
    add_json(rm)
    rm.set_defaults(func=run_remove)


def _config(args: argparse.Namespace) -> Path:
    from mcp_nextcloud.nextcloud.config import default_config_path

    return current().path(args.config) if args.config else default_config_path()


def known_tools() -> list[str]:
    """Every tool name of both servers (the snapshot the CLI is generated from)."""
    return sorted(tool_modes())


def tool_modes() -> dict[str, bool]:
    """{tool name: whether it is read-only} of both servers (the snapshot's readOnlyHint)."""
    from mcp_nextcloud.cli import toolspec

    return {name: spec.get("annotations", {}).get("readOnlyHint") is True for name, spec in toolspec.load().items()}


def run_add(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli.errors import CliError, report
    from mcp_nextcloud.server.http_auth import add_token
    from mcp_nextcloud.server.profile import build

    try:
        limits = build(args.name.strip(), folders=args.folder, read_only=args.read_only,
                       tools=args.tools.split(",") if args.tools is not None else None, known_tools=known_tools())
    except ValueError as exc:
        return report(CliError(str(exc), usage=True), args.json)
    if not limits.name:
        return report(CliError("--name is empty: give the profile a name", usage=True), args.json)
    if limits.unrestricted:
        return report(CliError("this token would have no limits: give --folder, --read-only or --tools (the serve "
                             "token already has the whole account)", usage=True), args.json)
    token = add_token(_config(args), limits.name, limits.to_dict())
    modes = tool_modes()
    if args.json:
        print(json.dumps({"name": limits.name, "token": token, "profile": _shown(limits, modes)},
                         separators=(",", ":")), file=stdout())
    else:
        print(token, file=stdout())
        print(f"{PROG}: {limits.summary(modes)}", file=stderr())
        print(f"{PROG}: token for profile {limits.name!r} (printed once, only its SHA-256 is stored); restart "
              "`mcp-nextcloud serve --http` and send it as 'Authorization: Bearer <token>'", file=stderr())
    return 0


def run_list(args: argparse.Namespace) -> int:
    from mcp_nextcloud.server.http_auth import profile_of, stored_tokens

    modes = tool_modes()
    limits = [profile_of(t) for t in stored_tokens(_config(args))]
    rows = [{"name": p.name, "profile": _shown(p, modes)} for p in limits]
    if args.json:
        print(json.dumps({"tokens": rows}, separators=(",", ":")), file=stdout())
    else:
        for p in limits:
            print(p.summary(modes), file=stdout())
        if not rows:
            print("no tokens added (mcp-nextcloud token add --name NAME --folder PATH)", file=stdout())
    return 0


def _shown(limits: Any, modes: dict[str, bool]) -> dict[str, Any]:
    """The profile's limits and every tool it offers (of both servers)."""
    return {**limits.describe(), "offered": limits.offered(modes), "summary": limits.summary(modes)}


def run_remove(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli.errors import CliError, report
    from mcp_nextcloud.server.http_auth import save_tokens, stored_tokens

    config = _config(args)
    tokens = stored_tokens(config)
    kept = [t for t in tokens if t["name"] != args.name]
    if len(kept) == len(tokens):
        return report(CliError(f"no token named {args.name!r}: `{PROG} list` shows them", usage=True,
                             status="not_found"), args.json)
    save_tokens(config, kept)
    if args.json:
        print(json.dumps({"removed": args.name}, separators=(",", ":")), file=stdout())
    else:
        print(f"removed {args.name}; restart `mcp-nextcloud serve --http` to stop accepting it", file=stdout())
    return 0
