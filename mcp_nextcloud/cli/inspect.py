"""`mcp-nextcloud inspect FILE`: what the reader makes of a local file.

Shows the document summary (kind, engine, characters, pages, warnings) and
one of: the matches of --find, the --outline, or a slice from --offset/--limit.
Compact JSON with --json, a readable view otherwise. A file the reader cannot
read is a one-line message on stderr and exit code 2, never a traceback.
"""
from __future__ import annotations

import argparse
import json
from typing import Any

from mcp_nextcloud.cli.options import add_json
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.cli.console import current, stdout

EXIT_UNREADABLE = 2


def register(subparsers: Subcommands) -> None:
    """Add the `inspect` command."""
    p = subparsers.add_parser(
        "inspect",
        help="show what the reader makes of a local file (text, find, outline, slices)",
        description="Extract a local file with the reader and show its summary and a slice, "
        "the matches of --find, or its --outline.",
        epilog="Example: mcp-nextcloud inspect manual.pdf --find install --limit 3",
    )
    p.add_argument("file", metavar="FILE", help="path of a local file (PDF, Office, ODF, text, CSV, JSON, HTML, image)")
    p.add_argument("--find", metavar="TEXT", help="show every match of TEXT (case, accent and space insensitive)")
    p.add_argument("--outline", action="store_true", help="show headings / bookmarks / sheets / slides (within "
                   "--budget bytes, deeper levels counted)")
    p.add_argument("--section", metavar="TITLE", help="with --outline: expand the section titled TITLE (or "
                   "holding the first match of TITLE in the text)")
    p.add_argument("--budget", type=int, default=None, metavar="BYTES",
                   help="with --outline: size of the outline as compact JSON (default 4096)")
    p.add_argument("--offset", type=int, default=0, help="start of the slice, a character offset (default 0); "
                   "with --find, the matches from here in text order; with --outline, expand the section "
                   "holding this offset")
    p.add_argument("--limit", type=int, default=None, help="slice size in characters, or the number of matches")
    add_json(p, "instead of the readable view")
    p.set_defaults(func=run, repeatable=True)


def _fail(args: argparse.Namespace, message: str, code: str = "unreadable", action: str | None = None) -> int:
    """Through the CLI's one renderer: the file given cannot be inspected (fix the command: exit 2)."""
    from mcp_nextcloud.cli.errors import CliError, report

    return report(CliError(message, usage=True, status=code, action=action), args.json, "mcp-nextcloud inspect")


def _unreadable(args: argparse.Namespace, name: str, exc: Any) -> int:
    """A ReaderError in its parts and with its code; the file named once (the pool's causes already name it)."""
    cause = exc.cause if name in exc.cause else f"{name}: {exc.cause}"
    return _fail(args, cause, exc.code.value, exc.action[:1].upper() + exc.action[1:])


def run(args: argparse.Namespace) -> int:
    """Run `inspect` for parsed arguments; return the exit code."""
    # Imported here so `mcp-nextcloud --help` does not pay for the reader.
    from mcp_nextcloud.reader import DEFAULT_LIMITS, ReaderError, find, outline, page
    from mcp_nextcloud.indexer.jobs.oneshot import extract_once
    from mcp_nextcloud.reader.slicing import DEFAULT_PAGE_CHARS

    path = current().path(args.file)
    if path.is_dir():
        return _fail(args, f"{args.file} is a folder: give the path of one file inside it")
    if not path.is_file():
        return _fail(args, f"no such file: {args.file} (check the path and try again)")
    try:
        size = path.stat().st_size
        if size > DEFAULT_LIMITS.max_bytes:  # before reading: a 3 GB file must not cost 3 GB of memory
            return _fail(args, f"{path.name} is too large to read ({size // (1024 * 1024)} MiB, limit "
                         f"{DEFAULT_LIMITS.max_bytes // (1024 * 1024)} MiB): inspect a smaller export of it")
        data = path.read_bytes()
    except OSError as exc:
        return _fail(args, f"cannot read {args.file}: {exc.strerror or exc}; check its permissions")
    try:
        # In a child with the reader's memory and time caps: the file may be hostile.
        doc = extract_once(data, path.name, None, limits=DEFAULT_LIMITS)
    except ReaderError as exc:
        return _unreadable(args, path.name, exc)

    summary: dict[str, Any] = {
        "name": path.name,
        "kind": doc.kind,
        "engine": doc.engine,
        "chars": len(doc.text),
        "pages": len(doc.pages),
        "pageUnit": doc.page_unit,
        "warnings": list(doc.warnings),
    }
    if doc.image is not None:
        summary["image"] = {"mime": doc.image.mime, "width": doc.image.width, "height": doc.image.height}
    try:
        if args.find is not None:
            kwargs = {} if args.limit is None else {"limit": args.limit}
            found = find(doc, args.find, ranked=not args.offset, start=args.offset, **kwargs)
            result: dict[str, Any] = {"find": found.to_dict()}
        elif args.outline:
            budget = {} if args.budget is None else {"budget": args.budget}
            result = {"outline": outline(doc, offset=args.offset or None, section=args.section, **budget).to_dict()}
        else:
            limit = DEFAULT_PAGE_CHARS if args.limit is None else args.limit
            result = {"page": page(doc, offset=args.offset, limit=limit).to_dict()}
    except ValueError as exc:
        return _fail(args, str(exc), "bad_argument")

    out = json.dumps(flat(summary, result), separators=(",", ":"), ensure_ascii=False) if args.json \
        else _human(summary, result)
    print(out, file=stdout())   # a reader that went away (`| head`) is cli/root.py's to handle
    return 0


def flat(summary: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """One flat object, shaped like files_read's answer: the document's facts, then the slice/find/outline fields."""
    out = {k: v for k, v in summary.items() if k not in ("image", "warnings")}
    out.update(summary.get("image") or {})          # mime, width, height: as files_read reports an image
    out.update(next(iter(result.values())))
    if summary["warnings"]:
        out["warnings"] = summary["warnings"]
    return out


def _human(summary: dict[str, Any], result: dict[str, Any]) -> str:
    """A readable view for a person at a terminal."""
    lines = [
        f"{summary['name']}: {summary['kind']}"
        + (f" via {summary['engine']}" if summary["engine"] else "")
        + f", {summary['chars']} characters, {summary['pages']} {summary['pageUnit']}(s)"
    ]
    lines += [f"warning: {w}" for w in summary["warnings"]]
    if "find" in result:
        f = result["find"]
        lines.append(f"{f['total']} match(es) for {f['query']!r}")
        for m in f["matches"]:
            passage = " ".join(m.get("passage", "(in the passage above)").split())
            kind = m["kind"] + (f", {m['in']}" if m.get("in") else "")
            lines.append(f"  offset {m['offset']}  {summary['pageUnit']} {m['page']}  line {m['line']} ({kind}): "
                         f"{passage}")
    elif "outline" in result:
        o = result["outline"]
        for e in o["entries"]:
            page = f", {summary['pageUnit']} {e['page']}" if "page" in e else ""
            where = f"offset {e['offset']}, line {e['line']}{page}"
            more = f", {e['subsections']} more below" if e.get("subsections") else ""
            lines.append(f"{'  ' * (e['level'] - 1)}- {e['title']}  ({where}{more})")
        if o.get("structure"):
            lines.append("structure: " + json.dumps(o["structure"], separators=(",", ":"), ensure_ascii=False))
    else:
        p = result["page"]
        lines.append(f"--- characters {p['offset']}..{p['offset'] + p['returned']} of {p['total']} ---")
        lines.append(p["content"])
        lines.append("---")
    hint = next(iter(result.values())).get("hint")
    if hint:   # the reader's words name files_read's arguments (offset=...): said with this command's flags
        from mcp_nextcloud.cli.voice import for_person

        lines.append(f"hint: {for_person(hint)}")
    return "\n".join(lines)
