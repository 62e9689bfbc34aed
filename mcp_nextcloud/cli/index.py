"""`mcp-nextcloud index add|watch|status|remove|reset` and `mcp-nextcloud grep` over the local index.

Every command takes `--index PATH` (or $MCP_NEXTCLOUD_INDEX); without it the
per-account default in the platform data directory is used. Results go to
stdout (compact JSON with --json), diagnostics to stderr; errors exit 2.
"""
from __future__ import annotations

import argparse
import errno
import json
import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mcp_nextcloud.indexer.errors import IndexerError
from mcp_nextcloud.indexer.search.syntax import MAX_PASSAGES, MAX_QUERY_CHARS, MAX_TERMS
from mcp_nextcloud.cli import sync
from mcp_nextcloud.cli.errors import CliError
from mcp_nextcloud.cli.errors import report as report_failure
from mcp_nextcloud.cli.parser import Subcommands
from mcp_nextcloud.indexer.errors import index_unusable

from mcp_nextcloud.cli.options import add_index, add_json
from mcp_nextcloud.cli.output import plain
from mcp_nextcloud.cli.console import current, index_file, stderr, stdout

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from mcp_nextcloud.indexer.index import Index


def _dump(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _fail(args: argparse.Namespace, message: str, *, status: str = "bad_argument", usage: bool = True) -> int:
    """A failure through the CLI's one renderer: JSON on stdout with --json, else a line on stderr."""
    return report_failure(CliError(message, usage=usage, status=status), getattr(args, "json", False))


def _guarded(cmd: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn database and file-system failures into one clear line on stderr and exit code 2."""

    def run(args: argparse.Namespace) -> int:
        import apsw

        try:
            return cmd(args)
        except apsw.Error as exc:
            return _fail(args, index_unusable(_where(args), exc).line(), status="index_unusable")
        except BrokenPipeError:
            raise       # `grep x | head -1`: the CLI's entry point ends quietly
        except OSError as exc:
            full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
            return _fail(args, index_unusable(_where(args), exc).line() if full else f"{exc}", status="storage",
                         usage=False)
        except IndexerError as exc:     # the index refused the request: its own code, category and parts
            return report_failure(exc, getattr(args, "json", False))
        except RuntimeError as exc:
            return _fail(args, f"{exc}")
        except CliError as exc:
            return report_failure(exc, getattr(args, "json", False))

    return run


def _where(args: argparse.Namespace) -> str:

    return str(index_file(args.index))


def _open(args: argparse.Namespace, *, create: bool = True) -> "AbstractContextManager[Index]":
    """The index database; a command that only reads it refuses a missing file instead of creating one."""
    from mcp_nextcloud.indexer.index import Index

    path = index_file(args.index)
    if not create and not path.exists():
        named = "--index" if args.index else ("$MCP_NEXTCLOUD_INDEX" if current().env.get("MCP_NEXTCLOUD_INDEX")
                                              else "the default index")
        raise CliError(f"there is no index at {path} ({named}).", action="Check the path, or build it first with "
                       "'mcp-nextcloud index add FOLDER' or 'mcp-nextcloud index sync'", usage=True, status="no_index")
    resources = current().resources   # the index service's, open across its calls (service/resources.py)
    kept = resources.kept if resources is not None else None
    if kept is not None and not path.exists():
        Index.open(path).close()             # created here first, as in the command's own process
    index = kept.open(path) if kept is not None else Index.open(path)
    for note in index.notes:   # file modes repaired on open
        print(f"note: {note}", file=stderr())
    if kept is None:
        return index
    import contextlib   # the service's (loaded there already): a one-off call's grep does without it

    return contextlib.nullcontext(index)   # a kept index stays open


_REMOTE_FROM = {"option": "--remote-path", "config": "the desktop client's config", "default": "assumed"}


def _cmd_add(args: argparse.Namespace) -> int:
    from mcp_nextcloud.indexer.local.desktop_config import RemotePathError
    from mcp_nextcloud.indexer.local.folder import index_folder

    folder = current().path(args.folder)
    if not folder.exists():
        return _fail(args, f"{folder} does not exist: give the path of an existing folder to index")
    if not folder.is_dir():
        return _fail(args, f"{folder} is a file, not a folder: give the folder that holds it")
    from mcp_nextcloud.cli.progress import FilesProgress

    try:
        with _open(args) as index, FilesProgress("indexing") as progress:
            report = index_folder(index, folder, progress=progress, remote_path=args.remote_path)
            if current().resources is not None:
                from mcp_nextcloud.indexer.jobs import embed

                # In the index service, which outlives this command: the meaning index follows in the
                # background there. A command in its own process (MCP_NEXTCLOUD_SERVICE=0) leaves nothing
                # running behind it; the next sync, `index watch` or the embed module builds it then.
                embed.after_sync(index)
    except RemotePathError as exc:
        return report_failure(exc, args.json)
    if args.json:
        print(_dump(report.to_dict()), file=stdout())
    else:
        journal = f" (sync journal {report.journal})" if report.journal else ""
        if report.remote_path is not None:
            under = (f", its files have their Nextcloud paths under {report.remote_path} "
                     f"({_REMOTE_FROM.get(report.remote_path_from or '', 'recorded')})")
        else:
            under = f", its files are under {report.path} in the index" if report.path != "/" else ""
        print(f"indexed {report.folder}{journal}{under}: {report.scanned} files, {report.extracted} extracted, "
              f"{report.unchanged} unchanged ({report.moved} moved), {report.failed} failed, "
              f"{report.removed} removed in {report.seconds:.1f} s", file=stdout())
        for w in report.warnings:
            print(f"note: {w}", file=stderr())
        if report.failed:
            print("run 'mcp-nextcloud index status' to see what failed and why", file=stdout())
    return 0


def _cmd_watch(args: argparse.Namespace) -> int:
    from mcp_nextcloud.indexer.jobs.pool import ExtractionPool
    from mcp_nextcloud.indexer.local.folder import index_folder
    from mcp_nextcloud.cli.progress import FilesProgress

    with _open(args) as index:
        folder = args.folder or index.get_meta("local_root")
        if not folder:
            return _fail(args, "no folder to watch: give one (mcp-nextcloud index watch FOLDER) or run 'index add' "
                         "first")
        if not Path(folder).exists():
            return _fail(args, f"{folder} does not exist: give the path of an existing folder to watch")
        if not Path(folder).is_dir():
            return _fail(args, f"{folder} is a file, not a folder: give the folder to watch")
        # With --json: one compact JSON object per line on stdout (an event stream); else lines on stderr.
        say = _event_printer(args.json)
        with ExtractionPool() as pool:
            with FilesProgress("catching up") as progress:  # what changed while nobody watched
                report = index_folder(index, folder, pool=pool, progress=progress)
            _watch_until_stopped(index, folder, pool, say, report)
        say({"event": "stopped"}, "stopped")
    return 0


def _event_printer(as_json: bool) -> Callable[[dict[str, Any], str], None]:
    def say(event: dict[str, Any], text: str) -> None:
        if as_json:
            print(_dump(event), flush=True, file=stdout())
        else:
            print(text, file=stderr())
    return say


def _watch_until_stopped(index: Any, folder: str, pool: Any, say: Callable[[dict[str, Any], str], None],
                         report: Any) -> None:
    """Apply changes until SIGINT or SIGTERM; the watcher is stopped (threads joined) before returning."""
    import signal

    from mcp_nextcloud.indexer.local.watch import FolderWatcher

    from mcp_nextcloud.indexer.jobs import embed

    def changed(path: str, rec: Any) -> None:
        what = "removed" if rec is None else rec.status
        say({"event": what, "path": path}, f"{what}: {path}")
        embed.after_sync(index)   # the meaning index follows in the background (a kick: never waits)

    embed.after_sync(index)       # what the catch-up indexed

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    watcher = FolderWatcher(index, folder, pool=pool, on_change=changed).start()
    # Said once the watcher runs: a change made after this line is seen.
    say({"event": "watching", "folder": str(report.folder), "files": report.scanned},
        f"watching {report.folder} ({report.scanned} files; Ctrl-C to stop)")
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        watcher.stop()


def _cmd_status(args: argparse.Namespace) -> int:
    if _fresh(args):
        return _nothing_synced(args)
    with _open(args, create=False) as index:
        st = index.status()
    if args.json:
        print(_dump(st), file=stdout())
        return 0
    counts = ", ".join(f"{n} {s}" for s, n in sorted(st["counts"].items())) or "empty"
    last = st["lastIndexedAt"].replace("T", " ").replace("Z", " UTC") if st["lastIndexedAt"] else "never"
    print(f"index {st['index']}: {st['files']} files ({counts})", file=stdout())
    print(f"  {st['textChars']:,} characters of text, database {st['dbBytes'] / 1e6:.1f} MB, last indexed {last}",
          file=stdout())
    journals = {r["folder"]: r["journal"] for r in st.get("roots", [])}
    for part in st.get("parts", []):
        print("  " + _part_line(part, journals.get(part.get("folder"))), file=stdout())
    meaning = st.get("meaning")
    if meaning:
        state = "complete" if meaning["complete"] == meaning["of"] else "building (after each sync)"
        print(f"  meaning search: {meaning['files']} of {meaning['of']} indexed files embedded, "
              f"{meaning['complete']} complete, {meaning.get('vectors', 0)} passages ({state})", file=stdout())
    chosen = st.get("selection")
    if chosen:
        budget = f", size budget {chosen['maxIndexBytes'] / 1e6:.0f} MB" if chosen.get("maxIndexBytes") else ""
        left_out = f", never {', '.join(chosen['exclude'])}" if chosen["exclude"] else ""
        print(f"  account folders indexed: {', '.join(chosen['include'])}{left_out}{budget}", file=stdout())
    print("  " + _ocr_line(st["ocr"]), file=stdout())
    print("  " + _forms_line(st["wordForms"]), file=stdout())
    for f in st["failures"]:
        print(f"  {f['status']}: {f['path']}: {f['reason'] or ''}", file=stdout())
    return 0


def _fresh(args: argparse.Namespace) -> bool:
    """No index at the default place yet: a new machine, not a mistake (a path given that names nothing is one)."""
    return not args.index and not current().env.get("MCP_NEXTCLOUD_INDEX") and not index_file(None).exists()


def _nothing_synced(args: argparse.Namespace) -> int:
    """`index status` before the first sync: says so and what to run, creating nothing."""
    path = index_file(None)
    hint = ("nothing is synced yet. Next: mcp-nextcloud index sync (after mcp-nextcloud login URL, if you have "
            "not logged in), or mcp-nextcloud index add FOLDER for a folder on this machine")
    if args.json:
        print(json.dumps({"index": str(path), "exists": False, "files": 0, "hint": hint}, separators=(",", ":")),
              file=stdout())
    else:
        print(f"index {path}: {hint[:1].upper()}{hint[1:]}.", file=stdout())
    return 0


def _forms_line(forms: dict[str, Any]) -> str:
    """One line of `index status`: word forms, the languages detected and files indexed before detection."""
    if not forms["stemmers"]:
        return "word forms: off (PyStemmer is not installed: pip install pystemmer); words match as typed"
    langs = ", ".join(f"{k} {v}" for k, v in forms["languages"].items()) or "none detected yet"
    before = (f"; {forms['beforeDetection']} file(s) indexed before language detection are matched in every "
              "language (re-index to detect theirs)") if forms["beforeDetection"] else ""
    return f"word forms: files by language {langs}, {forms['noLanguage']} without a clear language{before}"


def _ocr_line(ocr: dict[str, Any]) -> str:
    """One line of `index status`: the OCR engine (or its absence) and files whose scans were not read."""
    waiting = (f"; {ocr['filesNotRead']} file(s) have scanned pages not read (no OCR engine when indexed: "
               "re-index them)") if ocr["filesNotRead"] else ""
    if ocr["engine"] is None:
        return f"OCR: {ocr['hint']}{waiting}"
    return f"OCR: {ocr['engine']} ({ocr['languages']}): scanned pages and images are searchable{waiting}"


def _part_line(part: dict[str, Any], journal: str | None) -> str:
    """One line of `index status`: where a part of the index comes from and whether MCP answers use it."""
    if part["from"] == "account":
        synced = part.get("lastSyncAt") or "never"
        return f"from account {part['account']}: {part['files']} files, last synced {synced} (used by the MCP server)"
    mirrors = " (Nextcloud paths)" if part["inAnswers"] else ""
    journal_note = f", sync journal {journal}" if journal else ""
    use = "used by the MCP server" if part["inAnswers"] else "plain folder: CLI grep only, left out of MCP answers"
    return f"from folder {part['folder']} -> {part['path']}{mirrors} ({part['files']} files{journal_note}): {use}"


def _cmd_remove(args: argparse.Namespace) -> int:
    if bool(args.folder) == bool(args.account):
        return _fail(args, "give the folder to remove (as `index status` lists it) or --account, not both")
    with _open(args, create=False) as index:   # removing from a missing index must not create one
        if args.account:
            n = index.writer().forget_account()
            print(f"removed the account's part of {index.path}: {n} files (the next `index sync` fetches them again)",
                  file=stdout())
            return 0
        wanted = os.path.abspath(current().path(args.folder))
        root = next((r for r in index.roots() if r.folder == wanted), None)
        if root is None:
            known = ", ".join(r.folder for r in index.roots()) or "none"
            return _fail(args, f"{wanted} is not a folder of this index (folders: {known}); "
                         "`mcp-nextcloud index status` lists them")
        n = index.writer().forget_root(root.id)
    print(f"removed {root.folder} from {index.path}: {n} files", file=stdout())
    return 0


def _cmd_reset(args: argparse.Namespace) -> int:
    from mcp_nextcloud.indexer.jobs.store import jobs_path_for

    path = index_file(args.index)
    if not args.confirm:
        return _fail(args, f"this deletes the whole index {path} (every folder and the account's files); "
                     "stop `mcp-nextcloud serve` and watchers using it, then run again with --confirm")
    removed = []
    for base in (path, jobs_path_for(path)):
        for suffix in ("", "-wal", "-shm"):
            target = Path(str(base) + suffix)
            if target.exists():
                target.unlink()
                removed.append(target.name)
    print(f"reset {path}: " + (f"deleted {', '.join(removed)}" if removed else "there was no index there")
          + "; `index add` or `index sync` builds it again", file=stdout())
    return 0


# What `grep --fields` may name: the hit record files_grep returns (server/envelope.py Hit), ids kept always.
GREP_IDS = ("path", "fileId")


def _grep_fields(raw: str | None) -> list[str] | None:
    """--fields checked before the index is opened; an unknown name is an error, never dropped."""
    if raw is None:
        return None
    from mcp_nextcloud.cli import toolspec

    known = toolspec.load()["files_grep"]["records"]["hits"]
    asked = [f.strip() for f in raw.split(",") if f.strip()]
    unknown = [f for f in asked if f not in known]
    if unknown or not asked:
        raise ValueError(f"--fields {raw!r}: unknown field(s) {', '.join(unknown) or '(none given)'}; "
                         f"grep records have {', '.join(known)}")
    return asked


def _grep_json(res: Any, folders: list[str | None], fields: list[str] | None) -> dict[str, Any]:
    """grep's answer in the CLI's collection shape, with the very hit records files_grep returns."""
    from mcp_nextcloud.server.tools.files.grep_hit import hit_entry

    items = []
    for hit, folder in zip(res.hits, folders, strict=True):
        rec = hit_entry(hit)
        if folder:
            rec["folder"] = folder
        if fields is not None:
            rec = {k: v for k, v in rec.items() if k in set(fields) | set(GREP_IDS)}
        items.append(rec)
    out: dict[str, Any] = {"items": items, "page": {"returned": len(items), "has_more": bool(res.nextCursor),
                                                    "next_cursor": res.nextCursor or None},
                           "query": res.query, "mode": res.mode, "total": res.total}
    if res.totalIsEstimate:
        out["totalIsEstimate"] = True
    if res.warnings:
        out["warnings"] = list(res.warnings)
    out["tookMs"] = res.tookMs
    return out


def _cmd_grep(args: argparse.Namespace) -> int:
    kinds = [k.strip() for k in args.kind.split(",")] if args.kind else None
    if not args.query.strip():
        return _fail(args, "empty query: give words or a phrase, e.g. mcp-nextcloud grep \"new app\"")
    try:
        fields = _grep_fields(args.fields)
    except ValueError as exc:
        return _fail(args, str(exc))
    try:
        with _open(args, create=False) as index:
            res = index.grep(args.query, path_prefix=args.path, kinds=kinds, limit=args.limit, cursor=args.cursor,
                             passages=args.passages)
            roots = index.roots()
            # Several local folders share one index: say which folder each local hit is in.
            folders = [index.local_folder_of(h.path) if h.source == "local" else None for h in res.hits]
            present = index.kind_counts(args.path) if kinds and res.total == 0 else {}
    except ValueError as exc:
        return _fail(args, str(exc))
    if args.json:
        print(_dump(_grep_json(res, folders, fields)), file=stdout())
        return 0
    for hit, folder in zip(res.hits, folders, strict=True):
        where = f"  in {folder}" if folder and len(roots) > 1 else ""
        # File names and passages are data: control characters are shown escaped, never sent to the terminal.
        print(f"{plain(hit.path)}  ({_hit_summary(hit)}){where}", file=stdout())
        for p in hit.passages:
            passage = plain(" ".join(p.passage.split()))
            print(f"  {_unit(hit.kind)} {p.page}, line {p.line}, offset {p.offset}: {passage}", file=stdout())
    total = f"at least {res.total}" if getattr(res, "totalIsEstimate", False) else str(res.total)
    how = "; words and meaning" if res.mode == "hybrid" else ""
    print(f"{total} file(s) match{how}; {res.tookMs:.1f} ms" + (f"; next page: --cursor {res.nextCursor}"
                                                                       if res.nextCursor else ""), file=stdout())
    for w in [*res.notes, *res.warnings]:
        print(f"note: {w}", file=stderr())
    if res.unindexed:
        print("note: run the sync or index again to search the files not indexed yet", file=stderr())
    if res.nothing_indexed:
        print("note: index or sync that folder first (mcp-nextcloud index add FOLDER), or check the path",
              file=stderr())
    if res.total == 0 and kinds:
        print(f"note: {_kind_note(present, kinds, args.path)}", file=stderr())
    return 0


def _hit_summary(hit: Any) -> str:
    """'pdf, 3 matches shown, more in the file' - counting only matches inside the passages printed."""
    if getattr(hit, "match", None) == "meaning":
        return f"{hit.kind or 'file'}, related by meaning, not by all the words"
    shown = sum(len(p.matches) for p in hit.passages)
    parts = [hit.kind or "file", f"{shown} match{'es' if shown != 1 else ''} shown"]
    if getattr(hit, "match", None) == "both":
        parts.append("by meaning too")
    if not hit.phrase:
        parts.append("loose: the words, not the phrase")
    if hit.more:
        parts.append("more in the file")
    return ", ".join(parts)


def _kind_note(present: dict[str, int], kinds: list[str], path: str | None) -> str:
    """Why a --kind search found nothing: the kinds asked for that the index has none of, and those it has."""
    under = f" under {path}" if path else ""
    have = ", ".join(f"{k} ({n})" for k, n in present.items()) or "none"
    missing = [k for k in kinds if k.lower() not in present]
    head = (f"no indexed file{under} is of kind {', '.join(missing)}" if missing
            else f"no file of kind {', '.join(kinds)}{under} contains this")
    return f"{head}; kinds indexed{under}: {have} (--kind takes these names)"


# How a reader names a file's parts: "sheet 2" of a workbook, "slide 1" of a deck (kinds as the index stores them).
_UNITS = {"xlsx": "sheet", "ods": "sheet", "spreadsheet": "sheet", "pptx": "slide", "odp": "slide",
          "presentation": "slide", "docx": "section"}


def _unit(kind: str | None) -> str:
    return _UNITS.get(kind or "", "page")


def register(subparsers: Subcommands) -> None:
    """Add `index ...` and `grep` to the root parser."""
    idx = subparsers.add_parser("index", help="build and inspect the local full-text index",
                                description="Build and inspect the local full-text index.",
                                epilog="Example: mcp-nextcloud index status")
    isub = idx.add_commands(dest="index_command", metavar="SUBCOMMAND")
    idx.set_defaults(func=idx.help_command())

    p = isub.add_parser("add", help="index a folder recursively (a Nextcloud sync folder uses its journal)",
                        epilog="Example: mcp-nextcloud index add ~/Nextcloud")
    p.add_argument("folder", help="folder to index")
    p.add_argument("--remote-path", metavar="NEXTCLOUD_FOLDER", default=None,
                   help="for a desktop-client sync folder: the Nextcloud folder it mirrors, e.g. /Work (default: "
                        "what the client's nextcloud.cfg says, else /); remembered for later runs")
    add_json(p, "the run's summary")
    add_index(p)
    p.set_defaults(func=_guarded(_cmd_add))

    p = isub.add_parser("watch", help="keep a folder's index current until Ctrl-C",
                        epilog="Example: mcp-nextcloud index watch ~/Nextcloud")
    p.add_argument("folder", nargs="?", help="folder to watch (default: the last one added)")
    add_json(p, "one event per line")
    add_index(p)
    p.set_defaults(func=_guarded(_cmd_watch))

    p = isub.add_parser("status", help="counts by status, what failed and why, index size",
                        epilog="Example: mcp-nextcloud index status --json")
    add_json(p)
    add_index(p)
    p.set_defaults(func=_guarded(_cmd_status), repeatable=True)

    p = isub.add_parser("remove", help="remove a local folder (or --account: the synced account) from the index",
                        epilog="Example: mcp-nextcloud index remove ~/Documents/old-notes")
    p.add_argument("folder", nargs="?", help="a folder added with `index add`, as `index status` lists it")
    p.add_argument("--account", action="store_true", help="remove the synced account's files instead")
    add_index(p)
    p.set_defaults(func=_guarded(_cmd_remove))

    p = isub.add_parser("reset", help="delete the whole index (needs --confirm)",
                        epilog="Example: mcp-nextcloud index reset --confirm")
    p.add_argument("--confirm", action="store_true", help="really delete it")
    add_index(p)
    p.set_defaults(func=_guarded(_cmd_reset))

    sync.register_sync(isub)

    g = subparsers.add_parser("grep", help="search the text of indexed files",
                              description="Search the text of indexed files, insensitive to case, accents and "
                                          "spaces. Every word must be in the file, matched at the start of a word "
                                          "(partition finds partitions); whole words and the phrase rank first. "
                                          '"quoted words": exactly those whole words, in order. a OR b: either. '
                                          "-word or NOT word: files without it. 3.11, node.js, e-mail: that "
                                          f"sequence. At most {MAX_QUERY_CHARS} characters ({MAX_TERMS} terms with "
                                          "operators).",
                              epilog='Example: mcp-nextcloud grep "quarterly budget" --path /Documents --limit 5')
    g.add_argument("query", help='e.g. partition, "new app", "exact word", olive OR walrus -draft')
    g.add_argument("--path", default=None, help="only files at or below this folder, e.g. /Documents")
    g.add_argument("--kind", default=None, help="only these kinds, comma-separated (pdf,docx,xlsx,...)")
    g.add_argument("--limit", type=int, default=10, help="files per page (default 10, max 100)")
    g.add_argument("--cursor", default=None, help="page.next_cursor of the previous page (bound to this query)")
    g.add_argument("--passages", type=int, default=1, help=f"passages per file (default 1, max {MAX_PASSAGES})")
    g.add_argument("--fields", metavar="A,B", default=None,
                   help="only these hit fields (path and fileId always kept), e.g. passages")
    add_json(g, "{items, page, total, tookMs}: the hits as `mcp-nextcloud files grep --json` gives them")
    add_index(g)
    g.set_defaults(func=_guarded(_cmd_grep), repeatable=True)
