"""`mcp-nextcloud login URL`: Login Flow v2, then save the app password (mode 0600).

Prints the URL to open and, at the end, who is logged in. Never prints the password.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import stderr, stdout


def register(subparsers: Subcommands) -> None:
    """Add the `login` command."""
    p = subparsers.add_parser("login", help="connect to a Nextcloud (opens a browser login, stores an app password)",
                              description="Run Nextcloud's Login Flow v2: open the printed URL, approve the "
                                          "access, and the app password is stored in the config file (mode 0600). "
                                          "The URL can be opened on any device (a phone, when this machine has no "
                                          "browser); or create an app password under Settings > Security and set "
                                          "NEXTCLOUD_URL, NEXTCLOUD_USER, NEXTCLOUD_APP_PASSWORD instead.",
                              epilog="Example: mcp-nextcloud login https://cloud.example.com")
    p.add_argument("url", help="your Nextcloud address, e.g. https://cloud.example.com")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the approval (default 300)")
    p.add_argument("--interval", type=float, default=2.0, help="seconds between polls (default 2)")
    p.add_argument("--config", type=Path, default=None, help="config file to write (default: the user config dir)")
    add_json(p, "the result")
    p.set_defaults(func=run)


def url_problem(raw: str) -> str | None:
    """Why `raw` is not a Nextcloud address a person meant, or None. Checked before any network I/O.

    A bare word ("not-a-url") is refused unless written with its scheme (http://nextcloud on a LAN is fine):
    trying to reach it would only end in a confusing "could not reach the server".
    """
    from urllib.parse import urlsplit

    from mcp_nextcloud.nextcloud.config import normalize_url

    text = raw.strip()
    try:
        parts = urlsplit(normalize_url(text))
        port = parts.port
    except ValueError:
        return f"{raw!r} is not a valid web address (malformed host or port)"
    if parts.scheme not in ("http", "https"):
        return f"{raw!r} is not a web address: it must start with https:// (or http://)"
    host = parts.hostname or ""
    if not host or any(c.isspace() for c in text):
        return f"{raw!r} is not a valid web address"
    if "://" not in text and "." not in host and host != "localhost" and port is None:
        return f"{raw!r} does not look like a web address (no domain)"
    return None


def run(args: argparse.Namespace) -> int:
    """Run the login flow for parsed arguments; return the exit code."""
    # Imported here so `mcp-nextcloud --help` and the other commands do not pay for httpx.
    from mcp_nextcloud.nextcloud.errors import NextcloudError
    from mcp_nextcloud.nextcloud.login import login, store_login
    from mcp_nextcloud.cli.errors import CliError, report

    problem = url_problem(args.url)
    if problem:
        return report(CliError(f"{problem}.", action="Give your Nextcloud's address, e.g. https://cloud.example.com",
                               usage=True, status="bad_url"), args.json, "mcp-nextcloud login")

    def show(url: str) -> None:
        print(f"Open this URL in a browser and grant access:\n  {url}", file=stderr(), flush=True)
        from mcp_nextcloud.nextcloud.login import NO_BROWSER

        print(NO_BROWSER, file=stderr(), flush=True)
        print(f"Waiting up to {args.timeout:g} s for the approval...", file=stderr(), flush=True)

    try:
        account = login(args.url, timeout=args.timeout, interval=args.interval, show=show)
        account, user, path = store_login(account, args.config)
    except NextcloudError as err:
        return report(err, args.json, "mcp-nextcloud login")
    if args.json:
        print(json.dumps({"ok": True, "user": user.id, "displayName": user.display_name,
                          "url": account.url, "config": str(path)}, separators=(",", ":")), file=stdout())
    else:
        print(f"Logged in as {user.display_name} ({user.id}) on {account.url}; "
              f"credentials saved to {path} (mode 0600).", file=stdout())
    return 0
