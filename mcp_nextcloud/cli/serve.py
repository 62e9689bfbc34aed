"""`mcp-nextcloud serve`, `report` and `demo`: run the MCP server, read its call log, show it working.

serve speaks stdio (what desktop MCP hosts launch) unless --http is given;
then it serves streamable HTTP on 127.0.0.1 behind a bearer token, keeping
the SDK's DNS-rebinding protection. Diagnostics go to stderr only: on stdio,
stdout belongs to the protocol.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import index_file, stderr, stdout
from mcp_nextcloud.environment import environ, expand


def register(subparsers: Subcommands) -> None:
    """Add serve, report and demo."""
    p = subparsers.add_parser(
        "serve", help="run the MCP server (stdio, or --http)",
        description="Run the MCP server for the configured Nextcloud account (mcp-nextcloud login, or "
        "NEXTCLOUD_URL / NEXTCLOUD_USER / NEXTCLOUD_APP_PASSWORD). Speaks stdio unless --http is given, and "
        "keeps the index fresh in the background.",
        epilog="Example: mcp-nextcloud serve --http --port 8765")
    p.add_argument("--mail", action="store_true",
                   help="serve mcp-mail instead: the Nextcloud Mail tools and their preview apps")
    p.add_argument("--http", action="store_true",
                   help="serve streamable HTTP on 127.0.0.1 (requires the bearer token printed on first use)")
    p.add_argument("--port", type=_port, default=8765, help="HTTP port, 1-65535 (default 8765; with --http)")
    p.add_argument("--interval", type=float, default=300.0, metavar="SECONDS",
                   help="background sync period in seconds (default 300; 0 turns it off)")
    add_index(p, "the same as `mcp-nextcloud index sync`")
    p.add_argument("--max-read-mb", type=float, default=None, metavar="MB",
                   help="files_read refuses larger files without downloading them (default 10)")
    p.add_argument("--telemetry", metavar="PATH", help="call log database (default: $MCP_NEXTCLOUD_TELEMETRY "
                   "or the platform data directory)")
    p.add_argument("--folder", action="append", metavar="PATH",
                   help="every tool sees only this folder (repeatable); a file elsewhere is answered as missing")
    p.add_argument("--read-only", action="store_true", help="list and allow only tools that change nothing")
    p.add_argument("--tools", metavar="A,B", help="list and allow only these tools (unknown names are refused)")
    p.add_argument("--public-url", metavar="URL",
                   help="with --http: serve a whole team at this https origin, each person signing in with their "
                        "own Nextcloud account through OAuth (docs/team-server.md)")
    p.add_argument("--nextcloud-url", metavar="URL", help="with --public-url: the Nextcloud people sign in to")
    p.add_argument("--state", metavar="DIR", help="with --public-url: the team server's state folder (default: "
                   "the platform data folder's team/)")
    p.set_defaults(func=run_serve)

    r = subparsers.add_parser(
        "report", help="per-tool call outcomes from the call log",
        description="Print, per tool, how calls ended (ok / refused / misuse / fault), their median duration "
        "and the bytes returned. The log never holds argument values or content.",
        epilog="Example: mcp-nextcloud report --json")
    add_json(r, "instead of a table")
    r.add_argument("--telemetry", metavar="PATH", help="call log database to read")
    r.set_defaults(func=run_report)

    d = subparsers.add_parser(
        "demo", help="start an emulated Nextcloud with sample files and show what an agent sees",
        description="Start the bundled Nextcloud emulator seeded with the sample documents, sync it into a "
        "temporary index, then list the tools and run files_grep and files_read(find=...) on the manual "
        "through an in-process MCP client, printing every answer. Needs no account and no network.",
        epilog="Example: mcp-nextcloud demo --query budget")
    d.add_argument("--query", default="install", help="what to grep for (default: install)")
    d.add_argument("--serve", action="store_true",
                   help="keep the emulator running and print the configuration that points `serve` (an MCP "
                        "host, the MCP Inspector) at it, until Ctrl-C")
    add_json(d, "one object (with --serve: the configuration)")
    d.set_defaults(func=run_demo)


def _port(text: str) -> int:
    """--port as a TCP port number, or argparse's one-line error naming the argument."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:20]!r} is not a number; give a port from 1 to 65535") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port; give a port from 1 to 65535")
    return port


def _settings(args: argparse.Namespace) -> Any:
    from mcp_nextcloud.server.context import MB, Settings

    return Settings.from_env(sync_interval_s=args.interval if args.interval and args.interval > 0 else None,
                             max_read_bytes=int(args.max_read_mb * MB) if args.max_read_mb else None)


def run_serve(args: argparse.Namespace) -> int:
    """Load the account, open the index, and serve until the host closes the connection.

    Without an account, serve still answers (server/account_gate.py): the host completes its handshake and hears
    how to log in, and the full server takes over once an account is stored, without a restart."""
    import anyio
    from mcp_nextcloud.nextcloud.config import default_config_path, load_account, no_account
    from mcp_nextcloud.nextcloud.errors import NextcloudError
    from mcp_nextcloud.server import faultlog
    from mcp_nextcloud.server.account_gate import AccountGate
    from mcp_nextcloud.server.telemetry import default_telemetry_path

    if args.public_url or args.nextcloud_url or args.state:
        from mcp_nextcloud.cli.team_serve import run_team

        return run_team(args, _bind)
    try:
        account = load_account()
    except NextcloudError:
        account = None           # an unreadable config file: the gate names it
    sock = None
    if args.http:  # bound before anything is printed or opened: a busy port is one clear line
        sock = _bind(args.port)
        if sock is None:
            return 2
    faultlog.install((expand(args.telemetry) if args.telemetry else default_telemetry_path()).parent,
                     stderr=True)
    opened: list[Any] = []
    server: Any
    if account is None:
        problem = no_account()
        print(f"mcp-nextcloud serve: {problem.cause}. Serving only nextcloud_login until an account is stored: "
              "run `mcp-nextcloud login URL` in a terminal (or let the agent call nextcloud_login); the tools "
              "appear without a restart.", file=stderr())
        server = AccountGate(lambda found: _opened(opened, _open_full(args, found)), problem,
                             mail=bool(args.mail))
    else:
        full = _open_full(args, account)
        if isinstance(full, str):
            print(f"mcp-nextcloud serve: {full}", file=stderr())
            if sock is not None:
                sock.close()
            return 2
        server = _opened(opened, full)
    try:
        if not args.http:
            from mcp_nextcloud.server.stdio_guard import run_stdio

            anyio.run(run_stdio, server)
            return 0
        return _serve_http(server, args.port, default_config_path(), sock)
    except KeyboardInterrupt:
        return 130
    finally:
        for close in opened:
            close()


def _opened(opened: list[Any], full: tuple[Any, Any] | str) -> Any:
    """The server of `_open_full`, its closer kept in `opened`; a problem string passed on."""
    if isinstance(full, str):
        return full
    server, close = full
    opened.append(close)
    return server


def _open_full(args: argparse.Namespace, account: Any) -> tuple[Any, Any] | str:
    """(the MCP server for `account` under serve's options, its closer), or the problem that stops it."""
    from mcp_nextcloud.indexer.errors import index_unusable, is_storage_error
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import Settings, open_context
    from mcp_nextcloud.server.mail_app import build_mail_server

    index_path = index_file(args.index)
    remote = _service_tools(args, index_path)
    try:
        ctx = open_context(account, index_path=index_path, telemetry_path=args.telemetry,
                           settings=_settings(args) if remote is None else Settings.from_env(),
                           telemetry=remote is None)
    except Exception as exc:  # apsw.Error or OSError of the call log's folder (a damaged index is the ctx's)
        if not is_storage_error(exc):
            raise
        return index_unusable(index_path, exc).line()
    for note in ctx.notes:
        print(f"mcp-nextcloud serve: {note}", file=stderr())
    if remote is not None and ctx.index is not None:   # the service owns the index (its one writer, the
        ctx.index.close()                               # sync): this process only asks
        ctx.index = None
    if args.mail:
        mail_server = build_mail_server(ctx)
        server: Any = mail_server
    else:
        server = build_server(ctx)
        server.remote = remote
    problem = _apply_profile(args, server)
    if problem:
        ctx.close()
        return problem
    if args.mail:
        mail_server.mail_state()  # asked before the first session: its instructions then agree with its lists
    if remote is not None:
        remote.attach()

    def close() -> None:
        if remote is not None:
            remote.close()
        ctx.close()
    return server, close


def _service_tools(args: argparse.Namespace, index_path: Path) -> Any:
    """serve's link to the index service (service/tools.py), or None to run the tools here.

    Here: with MCP_NEXTCLOUD_SERVICE=0, for --mail (no index), and with --telemetry or --max-read-mb, which
    would give this serve a context unlike the service's."""

    from mcp_nextcloud.service.client import SWITCH, service_name

    if environ().get(SWITCH) == "0" or args.mail or args.telemetry or args.max_read_mb:
        return None
    from mcp_nextcloud.service.client import connect
    from mcp_nextcloud.service.tools import ServiceTools

    interval = args.interval if args.interval and args.interval > 0 else 0.0
    name = service_name(["serve", *(["--index", str(index_path)])], environ())
    try:
        connect(name).close()            # started now: the first tool call does not wait for it
    except OSError as exc:               # no private runtime folder of ours...: this serve runs its tools itself
        print(f"mcp-nextcloud serve: the index service cannot be used ({exc}); running the tools in this "
              "process", file=stderr())
        return None
    return ServiceTools(name, index_path, interval, dict(environ()))


def _apply_profile(args: argparse.Namespace, server: Any) -> str | None:
    """Put serve's --folder / --read-only / --tools in force for this process; the problem, if any."""
    from mcp_nextcloud.server import profile

    names = [t.name for t in server._tool_manager.list_tools()]
    try:
        chosen = profile.build("serve", folders=args.folder, read_only=args.read_only,
                               tools=args.tools.split(",") if args.tools is not None else None, known_tools=names)
    except ValueError as exc:
        return str(exc)
    profile.set_process_profile(chosen)
    return None


def _bind(port: int) -> Any:
    """A socket bound to 127.0.0.1:port, or None after printing why not (busy port, no permission).

    Bound, not yet listening: uvicorn listens once the app (and the bearer
    token) are ready, so a connection is never accepted before there is a token.
    """
    from mcp_nextcloud.server.http_protocol import listening_socket

    try:
        sock = listening_socket(port)
    except OSError as exc:
        import errno

        why = ("is already in use (another `mcp-nextcloud serve`, or another program)"
               if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror or exc})")
        print(f"mcp-nextcloud serve: --port {port}: 127.0.0.1:{port} {why}; choose another port with --port",
              file=stderr())
        return None
    return sock


HTTP_CONNECTIONS = 64   # requests at once; past it a JSON-RPC error with Retry-After (server/http_overload.py)


def _serve_http(server: Any, port: int, config_path: Path, sock: Any) -> int:
    from mcp_nextcloud.server.http_auth import BearerGuard, ensure_token, repair_token_mode, token_path
    from mcp_nextcloud.server.http_limits import MAX_BODY_BYTES, BodyLimit

    note = repair_token_mode(config_path)
    if note:
        print(f"mcp-nextcloud serve: {note}", file=stderr())
    token, created = ensure_token(config_path)
    if created:
        # Printed once, to stderr only, so a person can paste it into the MCP host's configuration.
        print(f"mcp-nextcloud: new bearer token for --http (stored in {token_path(config_path)}, mode 0600):\n"
              f"  {token}\nConfigure your MCP host to send the header 'Authorization: Bearer <token>' to "
              f"http://127.0.0.1:{port}/mcp", file=stderr())
    else:
        print(f"mcp-nextcloud: serving http://127.0.0.1:{port}/mcp; bearer token in {token_path(config_path)}",
              file=stderr())
    # host="127.0.0.1" makes the SDK switch on its DNS-rebinding protection (Host/Origin allow-lists).
    from mcp_nextcloud.server.http_auth import token_profiles

    profiles = token_profiles(config_path)
    if profiles:
        print(f"mcp-nextcloud: {len(profiles)} added token(s) accepted, each with its own profile "
              "(mcp-nextcloud token list)", file=stderr())
    # The token is checked first, on the headers alone: a caller without it never gets a byte of its body read.
    app = BearerGuard(BodyLimit(server.streamable_http_app(host="127.0.0.1", max_request_body_size=MAX_BODY_BYTES)),
                      token, profiles)
    from mcp_nextcloud.server.http_protocol import http_server

    http_server(app, connections=HTTP_CONNECTIONS, port=port).run(sockets=[sock])
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Print the call log per tool."""
    from mcp_nextcloud.server.telemetry import default_telemetry_path, format_table, open_call_log

    path = Path(args.telemetry) if args.telemetry else default_telemetry_path()
    if not path.exists():
        message = f"no call log at {path} yet: run `mcp-nextcloud serve` and call some tools first"
        if args.json:
            print(json.dumps({"tools": [], "hint": message}, separators=(",", ":")), file=stdout())
        else:
            print(message, file=stdout())
        return 0
    import sqlite3   # here, not at the top: every other command (a CLI grep) would pay for it

    log, note = open_call_log(path)
    if note:
        print(f"mcp-nextcloud report: {note}", file=stderr())
    if log is None:
        return 1
    try:
        summary = log.summary()
        by_profile = log.profile_refusals()
    except sqlite3.Error as exc:  # opens, but damaged further in
        print(f"mcp-nextcloud report: the call log {path} is damaged ({exc}); move it aside and `serve` "
              "starts a new one", file=stderr())
        return 1
    finally:
        log.close()
    if args.json:
        print(json.dumps({"tools": summary, "profiles": by_profile}, separators=(",", ":")), file=stdout())
    else:
        print(format_table(summary), file=stdout())
        for row in by_profile:
            print(f"profile {row['profile']}: {row['calls']} calls, {row['refusals']} refused by its limits "
                  f"({row['toolNotOffered']} tools it does not offer, {row['outsideFolders']} outside its folders)",
                        file=stdout())
    return 0


def run_demo(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli.demo import run

    return run(query=args.query, as_json=args.json, serve=args.serve)
