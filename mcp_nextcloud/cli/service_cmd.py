"""`mcp-nextcloud service status|stop|start`: the per-user index service that runs every command (service.py)."""
from __future__ import annotations

import argparse
import json
import os
from typing import Any

from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import current, stderr, stdout
from mcp_nextcloud.cli.output import plain


def register(subparsers: Subcommands) -> None:
    p = subparsers.add_parser(
        "service", help="the background process that runs every command",
        description="Every command and every `serve` is run by one index service per user, index and "
                    "account settings: started on first use, gone after $MCP_NEXTCLOUD_SERVICE_IDLE_S seconds "
                    "(600) without calls or attached serves. MCP_NEXTCLOUD_SERVICE=0 runs a command in its own "
                    "process instead, with the same output.",
        epilog="Example: mcp-nextcloud service stop --all")
    actions = p.add_commands(dest="action", metavar="ACTION", title="actions")
    p.set_defaults(func=p.help_command())
    for action, text in (("status", "whether the service of this index runs, its pid, memory and calls"),
                         ("stop", "stop the service of this index (the next command starts a new one)"),
                         ("start", "start the service of this index now (any command also does)")):
        a = actions.add_parser(action, help=text, description=text[0].upper() + text[1:] + ".",
                               epilog=f"Example: mcp-nextcloud service {action}")
        a.add_argument("--index", metavar="PATH", default=None,
                       help="the index whose service (default: $MCP_NEXTCLOUD_INDEX, else the platform data dir)")
        a.add_argument("--json", action="store_true", help="compact JSON")
        if action == "stop":
            a.add_argument("--all", action="store_true", help="stop every index service of this user")
        a.set_defaults(func=_run)


def _argv(args: argparse.Namespace) -> list[str]:
    return ["service", *(["--index", args.index] if args.index else [])]


def _ask(name: str, kind: str, *, start: bool = False) -> dict[str, Any] | None:
    """The service's answer to a status or stop request, or None when none runs."""
    from mcp_nextcloud.service.client import EXIT, PROTOCOL, Frames, ServiceGone, connect, netstring, pack

    try:
        sock = connect(name, start=start)
    except OSError:
        return None
    try:
        sock.sendall(netstring(pack([PROTOCOL, kind])))
        if sock.recv(1) != b"+":
            return None
        tag, payload = Frames(sock).read()
    except (OSError, ServiceGone):
        return None
    finally:
        sock.close()
    if tag != EXIT:
        return None
    return json.loads(payload) if kind == "status" else {"stopped": True}


def _run(args: argparse.Namespace) -> int:
    from mcp_nextcloud.service.client import runtime_folder, service_name

    if args.action == "stop" and args.all:
        folder = runtime_folder()
        names = sorted(f[:-5] for f in os.listdir(folder) if f.endswith(".sock")) if os.path.isdir(folder) else []
        stopped = [n for n in names if _ask(n, "stop") is not None]
        return _print({"stopped": len(stopped)}, args.json, f"stopped {len(stopped)} index service(s)")
    name = service_name(_argv(args), current().env, current().cwd)
    if args.action == "stop":
        done = _ask(name, "stop") is not None
        return _print({"stopped": done}, args.json,
                      "stopped the index service" if done else "no index service runs for this index")
    status = _ask(name, "status", start=args.action == "start")
    if status is None:
        if args.action == "start":
            print("mcp-nextcloud service: the service did not start; see its log in " + runtime_folder(),
                  file=stderr())
            return 1
        return _print({"running": False}, args.json, "no index service runs for this index (the next command "
                      "starts one)")
    status["running"] = True
    mb = status.get("memoryBytes", 0) / (1024 * 1024)
    sync = status.get("sync") or {}
    failed = (f"; background sync failed ({plain(sync.get('cause'))}), next try in {sync.get('nextTryInSeconds')} s"
              if sync.get("state") == "failed" else "")
    return _print(status, args.json, f"index service pid {status['pid']}: {status['requests']} calls, "
                  f"{status['attachedServes']} serve(s) attached, {mb:.0f} MB, exits after "
                  f"{status['idleExitSeconds']:g} s idle; socket {status['socket']}{failed}")


def _print(data: dict[str, Any], as_json: bool, text: str) -> int:
    print(json.dumps(data, separators=(",", ":")) if as_json else text, file=stdout())
    return 0
