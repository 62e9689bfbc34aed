"""`serve --http --public-url URL --nextcloud-url NC`: the team server (mcp_nextcloud/team), run by uvicorn.

Listens on 127.0.0.1 (--port) behind a TLS reverse proxy that people reach at --public-url
(docs/team-server.md); its state (OAuth clients and token hashes, sealed app passwords, one folder per person)
lives in --state, by default the platform data folder's team/ (0700).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Callable

from mcp_nextcloud.cli.console import stderr
from mcp_nextcloud.environment import expand

HTTP_CONNECTIONS = 256   # people share one server: more connections at once than a single person's serve


def default_state() -> Path:
    from mcp_nextcloud.environment import user_dir

    return user_dir("data") / "team"


def run_team(args: argparse.Namespace, bind: Callable[[int], Any]) -> int:
    """Serve the team server until interrupted; 2 on a usage problem."""
    from mcp_nextcloud.team.app import build_team_server, public_url_problem

    problem = (None if args.public_url else "--nextcloud-url and --state belong to the team server: give "
               "--public-url too") or \
        (None if args.http else "--public-url needs --http (the team server speaks streamable HTTP)") or \
        (None if args.nextcloud_url else "--public-url needs --nextcloud-url: the Nextcloud people sign in to") or \
        public_url_problem(args.public_url)
    if problem:
        print(f"mcp-nextcloud serve: {problem}", file=stderr())
        return 2
    sock = bind(args.port)
    if sock is None:
        return 2
    from mcp_nextcloud.server.http_limits import MAX_BODY_BYTES
    from mcp_nextcloud.server.http_protocol import http_server

    state = expand(args.state) if args.state else default_state()
    team = build_team_server(args.public_url, args.nextcloud_url, state, max_body=MAX_BODY_BYTES,
                             interval=args.interval if args.interval and args.interval > 0 else 0.0)
    print(f"mcp-nextcloud: team server for {args.nextcloud_url} at {args.public_url.rstrip('/')}/mcp "
          f"(listening on 127.0.0.1:{args.port}; state in {state})", file=stderr())
    try:
        # serve --http's server: the same kept-alive limit and deadline on a request head (a slow head would
        # hold one of the team's connections forever)
        http_server(team.app, connections=HTTP_CONNECTIONS, port=args.port, proxy_headers=False).run(sockets=[sock])
    except KeyboardInterrupt:
        return 130
    finally:
        team.close()
    return 0
