"""`mcp-nextcloud login URL`: Login Flow v2, or an app password one already has; either is saved (mode 0600).

The browser route prints the URL to open; the other (`--user NAME --app-password -`, or `env`) reads the
password from standard input or NEXTCLOUD_APP_PASSWORD, never from the command line. Both check the password
against the server and save it the same way (`store_login`); both say at the end who is logged in. Never
prints the password.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import RawDescriptionFormatter, Subcommands
from mcp_nextcloud.cli.console import stderr, stdin, stdout

if TYPE_CHECKING:
    from mcp_nextcloud.nextcloud.config import Account

PROG = "mcp-nextcloud login"
PASSWORD_SOURCES = ("-", "env")


def register(subparsers: Subcommands) -> None:
    """Add the `login` command."""
    p = subparsers.add_parser(
        "login", help="connect to a Nextcloud (a browser login, or an app password you have; stores it)",
        description="In a browser: run Nextcloud's Login Flow v2: open the printed URL on any device (a phone,\n"
                    "when this machine has no browser), approve the access, and the app password it creates is\n"
                    "stored in the config file (mode 0600).\n"
                    "Without a browser: create an app password in Nextcloud under Settings > Security > Devices &\n"
                    "sessions and give it with --user NAME --app-password - (read from standard input, unseen at\n"
                    "a terminal) or --app-password env (read from NEXTCLOUD_APP_PASSWORD). It is checked against\n"
                    "the server first, then stored as the browser login stores it.",
        epilog="Example: mcp-nextcloud login https://cloud.example.com\n"
               "Without a browser: mcp-nextcloud login https://cloud.example.com --user alice --app-password -",
        formatter_class=RawDescriptionFormatter)
    p.add_argument("url", help="your Nextcloud address, e.g. https://cloud.example.com")
    p.add_argument("--user", default=None, help="your login name, with --app-password (default: NEXTCLOUD_USER)")
    p.add_argument("--app-password", default=None, metavar="-|env",
                   help="log in with an app password you already have, without a browser: - reads it from "
                        "standard input (typed unseen at a terminal), env from NEXTCLOUD_APP_PASSWORD; never "
                        "the password itself on the command line")
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
    """Log in for parsed arguments (the browser route, or an app password one has); return the exit code."""
    # Imported here so `mcp-nextcloud --help` and the other commands do not pay for httpx.
    from mcp_nextcloud.nextcloud.errors import NextcloudError
    from mcp_nextcloud.nextcloud.login import store_login
    from mcp_nextcloud.cli.errors import CliError, report

    problem = url_problem(args.url)
    if problem:
        return report(CliError(f"{problem}.", action="Give your Nextcloud's address, e.g. https://cloud.example.com",
                               usage=True, status="bad_url"), args.json, PROG)
    try:
        if getattr(args, "app_password", None) is None:
            if getattr(args, "user", None):
                raise CliError("--user goes with --app-password (the browser login asks who you are itself).",
                               action="Add --app-password - to type an app password, or drop --user", usage=True)
            account = _browser_login(args)
        elif args.app_password not in PASSWORD_SOURCES:   # never echoed: it may be the password itself
            raise CliError("--app-password takes - (read the password from standard input) or env (read "
                           "NEXTCLOUD_APP_PASSWORD), never the password itself: a command line is seen by every "
                           "process on this machine and kept in the shell's history; nothing was stored.",
                           action="Run it again with --app-password - and type or pipe the password", usage=True)
        else:
            account = _given_account(args)
        account, user, path = store_login(account, args.config)
    except (NextcloudError, CliError) as err:
        return report(_refused(err, args), args.json, PROG)
    if args.json:
        print(json.dumps({"ok": True, "user": user.id, "displayName": user.display_name,
                          "url": account.url, "config": str(path)}, separators=(",", ":")), file=stdout())
    else:
        print(f"Logged in as {user.display_name} ({user.id}) on {account.url}; "
              f"credentials saved to {path} (mode 0600).", file=stdout())
    return 0


def _browser_login(args: argparse.Namespace) -> "Account":
    """Login Flow v2: show the URL to open, wait for the approval."""
    from mcp_nextcloud.nextcloud.login import NO_BROWSER, login

    def show(url: str) -> None:
        print(f"Open this URL in a browser and grant access:\n  {url}", file=stderr(), flush=True)
        print(NO_BROWSER, file=stderr(), flush=True)
        print(f"Waiting up to {args.timeout:g} s for the approval...", file=stderr(), flush=True)

    return login(args.url, timeout=args.timeout, interval=args.interval, show=show)


def _given_account(args: argparse.Namespace) -> "Account":
    """The account of an app password one already has: the user from --user (else NEXTCLOUD_USER), the
    password from standard input or NEXTCLOUD_APP_PASSWORD. Not yet checked: `store_login` asks the server."""
    from mcp_nextcloud.environment import environ
    from mcp_nextcloud.nextcloud.config import ENV_PASSWORD, ENV_USER, Account, normalize_url
    from mcp_nextcloud.cli.errors import CliError

    user = (args.user or environ().get(ENV_USER) or "").strip()
    if not user:
        raise CliError("--app-password needs the login name it belongs to.",
                       action=f"Add --user NAME (or set {ENV_USER})", usage=True, status="no_credentials")
    if args.app_password == "env":
        password = environ().get(ENV_PASSWORD) or ""
        where = f"{ENV_PASSWORD} is not set"
    else:
        password = _read_password()
        where = "standard input held no password"
    password = password.strip()
    if not password:
        raise CliError(f"{where}; nothing was stored.", action="Create an app password in Nextcloud under "
                       "Settings > Security > Devices & sessions and give it again", usage=True,
                       status="no_credentials")
    args.user = user    # for `_refused`'s words
    return Account(url=normalize_url(args.url), user=user, app_password=password)


def _read_password() -> str:
    """One line of standard input; at a terminal, typed without being shown."""
    source = stdin()
    if source.isatty():
        import getpass

        return getpass.getpass("App password (not shown): ", stream=stderr())
    return source.readline()


def _refused(err: BaseException, args: argparse.Namespace) -> BaseException:
    """A wrong app password said as what it is: the server refused this user with it, nothing was stored."""
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
    from mcp_nextcloud.cli.errors import CliError

    if getattr(args, "app_password", None) is None or not isinstance(err, NextcloudError) \
            or err.code is not ErrorCode.AUTH:
        return err
    return CliError(f"{args.url} refused the login name {args.user!r} with that app password; nothing "
                    "was stored.", action="Check the login name, or create a new app password in Nextcloud under "
                    "Settings > Security > Devices & sessions and run login again", status="auth",
                    category=err.code.category)
