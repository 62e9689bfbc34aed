"""`mcp-nextcloud connect HOST`: log in if needed, then add `serve` to an MCP host's own config file.

The entry is the host's own format (cli/hosts.py) with the absolute command and no secret. Writing is
idempotent (an entry already there is left alone), keeps a backup of the file it changes (FILE.bak), and never
touches a file it cannot read as JSON (with comments, for the editors that allow them): comments are kept.
"""
from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path
from typing import Any

from mcp_nextcloud.cli.console import stderr, stdout
from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.environment import expand

PROG = "mcp-nextcloud connect"


def register(subparsers: Subcommands) -> None:
    """Add the `connect` command."""
    from mcp_nextcloud.cli.hosts import HOSTS

    p = subparsers.add_parser(
        "connect", help="add this server to an MCP host (Claude Desktop, Claude Code, VS Code, Cursor, Zed)",
        description="Log in first if no account is stored (as `mcp-nextcloud login`: with NEXTCLOUD_USER and "
        "NEXTCLOUD_APP_PASSWORD when both are set, else Login Flow v2 in a browser), then add "
        "an entry that runs `mcp-nextcloud serve` to the host's own config file: the command by its absolute "
        "path, no password in it. Running it again changes nothing; a changed file keeps a copy as FILE.bak; "
        "a file that is not valid JSON is left untouched.",
        epilog="Example: mcp-nextcloud connect claude-desktop --url https://cloud.example.com")
    p.add_argument("host", choices=sorted(HOSTS), metavar="HOST", help="one of: " + ", ".join(sorted(HOSTS)))
    p.add_argument("--print", action="store_true", dest="print_only",
                   help="print the entry (and the file it belongs in) without writing or logging in")
    p.add_argument("--url", help="your Nextcloud address, to log in first when no account is stored")
    p.add_argument("--name", default="nextcloud", help="the entry's name in the host (default: nextcloud)")
    p.add_argument("--mail", action="store_true",
                   help="also add NAME-mail, the Nextcloud Mail tools as a second server (`serve --mail`)")
    p.add_argument("--file", type=Path, default=None, help="the host's config file (default: where the host "
                   "keeps it on this system)")
    add_json(p, "the host, file, entries and whether the file changed")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli.errors import CliError, report
    from mcp_nextcloud.cli.hosts import HOSTS, entries

    host = HOSTS[args.host]
    path = expand(args.file) if args.file else host.path()
    wanted = entries(host, args.name, args.mail)
    if args.print_only:
        return _print(host, path, wanted, args.json)
    if not _logged_in():
        code = _login(args)
        if code:
            return code
    try:
        changed, backup = write_entries(path, host.key, wanted, dict(host.extra))
    except CliError as err:
        return report(err, args.json, PROG)
    if args.json:
        print(json.dumps({"host": host.name, "file": str(path), "entries": wanted, "changed": changed,
                          "backup": str(backup) if backup else None}, separators=(",", ":")), file=stdout())
        return 0
    names = " and ".join(wanted)
    if changed:
        kept = f" (the previous file is kept as {backup})" if backup else ""
        print(f"Added {names} to {host.title}'s {path}{kept}. Next: {host.after}.", file=stdout())
    else:
        print(f"{host.title} already has {names} in {path}; nothing changed.", file=stdout())
    return 0


def _print(host: Any, path: Path, wanted: dict[str, Any], as_json: bool) -> int:
    from mcp_nextcloud.cli.hosts import claude_code_line

    snippet = {host.key: wanted}
    if as_json:
        print(json.dumps({"host": host.name, "file": str(path), "entries": wanted}, separators=(",", ":")),
              file=stdout())
        return 0
    print(f"# {host.title}: merge into {path}", file=stdout())
    # Indented on purpose here and in the files written below: a host's config is a file people read and edit
    # (the hosts write theirs indented); results for scripts (--json above) stay compact.
    print(json.dumps(snippet, indent=2), file=stdout())
    if host.name == "claude-code":
        print("# or let Claude Code write it:", file=stdout())
        for name, entry in wanted.items():
            print(claude_code_line(entry, name), file=stdout())
    if not _logged_in():
        print("# no login is stored yet: run `mcp-nextcloud login URL` (without a browser: `mcp-nextcloud login "
              "URL --user NAME --app-password -`); the host's server will ask for it otherwise", file=stdout())
    return 0


def _logged_in() -> bool:
    """Whether our config file holds an account: a host does not inherit this shell's NEXTCLOUD_* variables."""
    from mcp_nextcloud.nextcloud.config import load_account
    from mcp_nextcloud.nextcloud.errors import NextcloudError

    try:
        return load_account(env={}) is not None
    except NextcloudError:
        return False


def _login(args: argparse.Namespace) -> int:
    from mcp_nextcloud.cli import login
    from mcp_nextcloud.cli.errors import CliError, report
    from mcp_nextcloud.environment import environ

    url = args.url or environ().get("NEXTCLOUD_URL")
    if not url:
        return report(CliError("No login is stored, and the host's server needs one (a host does not see this "
                               "shell's variables).", action="Give your Nextcloud's address: mcp-nextcloud "
                               f"connect {args.host} --url https://cloud.example.com", usage=True,
                               status="no_credentials"), args.json, PROG)
    env = environ()
    given = bool(env.get("NEXTCLOUD_USER") and env.get("NEXTCLOUD_APP_PASSWORD"))
    how = "with NEXTCLOUD_USER and NEXTCLOUD_APP_PASSWORD" if given else "in a browser"
    print(f"{PROG}: no login is stored yet; logging in to {url} {how} first.", file=stderr())
    return int(login.run(argparse.Namespace(url=url, timeout=300.0, interval=2.0, config=None, json=False,
                                            user=None, app_password="env" if given else None)))


def write_entries(path: Path, key: str, wanted: dict[str, Any], extra: dict[str, Any]) -> tuple[bool, Path | None]:
    """Merge `wanted` into the object `key` of the JSON (with comments) file at `path`: (changed, backup)."""
    from mcp_nextcloud.cli.errors import CliError

    text = path.read_text(encoding="utf-8") if path.exists() else None
    new_text = _merged(path, text, key, wanted, extra)
    if new_text is None:
        return False, None
    _check(path, new_text, text, key, wanted)
    backup = None
    if text is not None:
        backup = path.with_name(path.name + ".bak")
        shutil.copy2(path, backup)
    try:
        _write(path, new_text)
    except OSError as exc:
        raise CliError(f"{path} could not be written ({exc.strerror or exc}).", action="Check the folder's "
                       "permissions, or use --print and add the entry yourself", status="not_written") from None
    return True, backup


def _merged(path: Path, text: str | None, key: str, wanted: dict[str, Any], extra: dict[str, Any]) -> str | None:
    """The file's new text, or None when it already holds `wanted`."""
    from mcp_nextcloud.cli import jsonc
    from mcp_nextcloud.cli.errors import CliError

    if text is None or not text.strip():
        return json.dumps({key: wanted, **extra}, indent=2) + "\n"
    untouched = f"{path} is left untouched"
    try:
        data = jsonc.parse(text)
    except ValueError as exc:
        raise CliError(f"{path} is not valid JSON ({exc}); {untouched}.", action="Fix the file (or move it "
                       "aside), or use --print and add the entry yourself", status="unreadable_config") from None
    if not isinstance(data, dict) or not isinstance(data.get(key, {}), dict):
        raise CliError(f"{path} does not hold an object with a \"{key}\" object; {untouched}.",
                       action="Fix the file, or use --print and add the entry yourself", status="unreadable_config")
    current = data.get(key, {})
    todo = {name: entry for name, entry in wanted.items() if current.get(name) != entry}
    if not todo:
        return None
    if not jsonc.has_comments(text):
        data[key] = {**current, **todo}
        return json.dumps(data, indent=2) + "\n"
    clash = [name for name in todo if name in current]
    if clash:
        raise CliError(f"{path} holds comments and already has a different \"{clash[0]}\" entry: rewriting it "
                       f"would lose the comments, so {untouched}.", action="Remove that entry (or rename ours "
                       "with --name) and run connect again, or use --print and edit it yourself",
                       status="unreadable_config")
    if key in data:
        return jsonc.add_members(text, (key,), todo, has_others=bool(current))
    return jsonc.add_members(text, (), {key: todo}, has_others=bool(data))


def _check(path: Path, new_text: str, old_text: str | None, key: str, wanted: dict[str, Any]) -> None:
    """The new text, read back: the entries there and everything else as it was; else nothing is written."""
    from mcp_nextcloud.cli import jsonc
    from mcp_nextcloud.cli.errors import CliError

    new = jsonc.parse(new_text)
    old = jsonc.parse(old_text) if old_text else {}
    others_kept = all(new.get(k) == v for k, v in old.items() if k != key) and all(
        new[key].get(k) == v for k, v in old.get(key, {}).items() if k not in wanted)
    if not (others_kept and all(new[key].get(k) == v for k, v in wanted.items())):
        raise CliError(f"the edit of {path} did not read back as intended; it is left untouched.",
                       action="Use --print and add the entry yourself, and report this", status="internal")


def _write(path: Path, text: str) -> None:
    """Atomically, keeping the file's mode (0600 for a new file)."""
    from mcp_nextcloud.nextcloud.config import atomic_write

    atomic_write(path, text, path.stat().st_mode & 0o777 if path.exists() else 0o600)
