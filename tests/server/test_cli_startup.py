"""CLI start-up stays cheap, and its help is an index with an example per command.

Import checks run in a fresh interpreter (subprocess), because this test
process has long since imported everything.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from fixtures.emulator.server import Emulator
from server.cli import build_parser, iter_commands

ROOT = Path(__file__).resolve().parents[2]
# What `mcp-nextcloud --help` must not pay for: each costs 0.05-0.3 s to import.
HEAVY = ("icalendar", "vobject", "mcp", "apsw", "pypdfium2", "pdfminer", "openpyxl", "httpx")
# What the read paths an agent shells out to (grep, inspect) must not pay for: the server's stack,
# the network, the calendar, the Office and image readers, the watcher.
NOT_FOR_READING = ("mcp", "pydantic", "httpx", "anyio", "uvicorn", "starlette", "icalendar", "vobject",
                   "openpyxl", "docx", "pptx", "PIL", "watchdog", "platformdirs")
# Standard-library modules the read paths (grep, inspect's reading) have no use for, each a millisecond or
# more of every call (issue 17): dataclasses (and the inspect/ast/dis/tokenize it loads), logging (and its
# traceback, textwrap, string), the hashing and base64 of cursors (a first page needs none), csv.
LEAN_STDLIB = ("dataclasses", "inspect", "ast", "dis", "tokenize", "logging", "traceback", "textwrap", "string",
               "hashlib", "hmac", "base64", "csv", "uuid")
# What argparse would import for the terminal's width at every add_argument, were it not told the width
# (server/cli/warm_client.py terminal_columns): shutil, and the compression modules shutil loads.
NOT_FOR_PARSING = ("shutil", "bz2", "lzma")
# What a grep for plain words needs nothing of (~3 ms): typing (annotations are for the type checker only; the
# search path's records are reader/records.py's), and unidecode, which imports typing and folds rare letters only.
TYPE_CHECKER_ONLY = ("typing", "unidecode")
# pypdfium2's raw bindings (~14 ms: thousands of ctypes prototypes) and what they import to find the library.
PDFIUM_BINDINGS = ("pypdfium2_raw", "ctypes.util", "subprocess", "platform")

# The development interpreter's site-packages runs start-up hooks (.pth files) a user's install does not have,
# and they import shutil, typing, pathlib, re, threading: a fresh interpreter here starts without site
# (-S), the libraries found by a plain path entry instead, as benchmarks/installed.py's venv finds them.
_LIBRARIES = os.pathsep.join(dict.fromkeys(sysconfig.get_paths()[k] for k in ("purelib", "platlib")))


def _python(code: str) -> str:
    """Run code in a fresh interpreter from the project root (without this machine's start-up hooks); its stdout."""
    done = subprocess.run([sys.executable, "-S", "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={**os.environ, "PYTHONPATH": _LIBRARIES})
    assert done.returncode == 0, done.stderr
    return done.stdout


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "server", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_build_parser_imports_nothing_heavy() -> None:
    loaded = json.loads(_python(
        "import json, sys\n"
        "import server.cli\n"
        "server.cli.build_parser()\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))\n"))
    assert loaded == [], f"build_parser() imported {loaded}: move these imports into the command functions"


def _modules_after(argv: list[str]) -> dict:
    """Run the CLI with argv in a fresh interpreter; its exit code, output and the modules it had loaded."""
    out = _python(
        "import contextlib, io, json, sys\n"
        "from server.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as printed:\n"
        f"    rc = main({argv!r})\n"
        "print(json.dumps({'rc': rc, 'out': printed.getvalue(), 'modules': sorted(sys.modules)}))\n")
    return json.loads(out.splitlines()[-1])


def test_grep_on_an_index_imports_only_the_read_side(tmp_path: Path, fixture_docs: Path) -> None:
    """A CLI grep loads the index's read side: no writer, no extraction, no server, no network."""
    folder = tmp_path / "notes"
    folder.mkdir()
    for name in ("notes.txt", "manual.md"):
        (folder / name).write_bytes((fixture_docs / name).read_bytes())
    db = tmp_path / "index.db"
    added = _cli("index", "add", str(folder), "--index", str(db))
    assert added.returncode == 0, added.stderr
    run = _modules_after(["grep", "install", "--index", str(db)])
    assert run["rc"] == 0
    loaded = set(run["modules"])
    assert "indexer.search.grep" in loaded      # it did search
    heavy = sorted({m.split(".")[0] for m in loaded} & {*NOT_FOR_READING, "nextcloud", "sqlite3"})
    assert heavy == [], f"grep imported {heavy}"
    ours = sorted(loaded & {"indexer.store.writer", "indexer.jobs.pool", "reader.extract", "reader.outline",
                            "reader.slicing"})
    assert ours == [], f"grep imported {ours}: keep them behind the functions that need them"
    lean = sorted(loaded & {*LEAN_STDLIB, *NOT_FOR_PARSING, *TYPE_CHECKER_ONLY})
    assert lean == [], f"grep imported {lean}: plain classes or records, imports on first use (issue 17)"
    # --json gives the hits in files_grep's shape without loading files_grep's module (the MCP stack).
    as_json = _modules_after(["grep", "install", "--index", str(db), "--json", "--fields", "passages"])
    assert as_json["rc"] == 0 and json.loads(as_json["out"])["items"][0]["passages"]
    heavy = sorted({m.split(".")[0] for m in as_json["modules"]} & {*NOT_FOR_READING, "nextcloud", "sqlite3"})
    assert heavy == [], f"grep --json imported {heavy}"
    lean = sorted(set(as_json["modules"]) & {"logging", "dataclasses", *NOT_FOR_PARSING, *TYPE_CHECKER_ONLY})
    assert lean == [], f"grep --json imported {lean}"


def test_inspect_of_a_pdf_imports_nothing_of_the_server(fixture_docs: Path) -> None:
    """The PDF is read (in the capped child) by pdfium alone; the CLI process loads no server, index or Office code."""
    run = _modules_after(["inspect", str(fixture_docs / "manual.pdf"), "--json"])
    assert run["rc"] == 0
    assert json.loads(run["out"])["engine"] == "pypdfium2"
    tops = {m.split(".")[0] for m in run["modules"]}
    heavy = sorted(tops & {*NOT_FOR_READING, "pdfminer", "apsw"})
    assert heavy == [], f"inspect imported {heavy}"
    # The one-shot fork (indexer/jobs/oneshot.py), not the pool: no multiprocessing, no thread pool.
    lean = sorted(set(run["modules"]) & {*LEAN_STDLIB, "multiprocessing", "concurrent.futures", "indexer.jobs.pool"})
    assert lean == [], f"inspect imported {lean}"
    assert "reader.formats.pdfium" in run["modules"]    # loaded before the fork, for the child
    bindings = sorted(set(run["modules"]) & {*PDFIUM_BINDINGS, "pypdfium2"})
    assert bindings == [], f"inspect imported {bindings}: reader/formats/pdfium.py opens the library itself"


def test_the_read_path_loads_pdfium_alone(fixture_docs: Path) -> None:
    """What `inspect FILE` runs to read a PDF (parse, extract, slice, find, outline): PDFium's library and the
    reader only: none of pypdfium2's helpers (logging, uuid, argparse of their own), its raw bindings nor
    LEAN_STDLIB."""
    out = _python(
        "import json, sys\n"
        "from server.cli import build_parser\n"
        "from server.cli.logs import quiet_libraries\n"
        f"args = build_parser('inspect').parse_args(['inspect', {str(fixture_docs / 'manual.pdf')!r}])\n"
        "quiet_libraries()\n"
        "from reader import extract, find, outline, page\n"
        "doc = extract(open(args.file, 'rb').read(), 'manual.pdf')\n"
        "shown = [page(doc, offset=0, limit=500).to_dict(), find(doc, 'install').to_dict(), outline(doc).to_dict()]\n"
        "print(json.dumps({'engine': doc.engine, 'found': shown[1]['total'], 'entries': len(shown[2]['entries']),\n"
        "                  'modules': sorted(sys.modules)}))\n")
    run = json.loads(out.splitlines()[-1])
    assert run["engine"] == "pypdfium2" and run["found"] > 0 and run["entries"] > 0   # it really read the PDF
    loaded = set(run["modules"])
    bindings = sorted(loaded & set(PDFIUM_BINDINGS))
    assert bindings == [], f"reading a PDF imported {bindings}: reader/formats/pdfium.py opens the library itself"
    helpers = sorted(m for m in loaded if m == "pypdfium2" or m.startswith(("pypdfium2.", "pypdfium2_cfg")))
    assert helpers == [], f"reading a PDF imported pypdfium2's helpers {helpers[:5]}: use the raw bindings"
    lean = sorted(loaded & set(LEAN_STDLIB))
    assert lean == [], f"the read path imported {lean}: plain classes or NamedTuples, imports on first use"
    heavy = sorted({m.split(".")[0] for m in loaded} & {*NOT_FOR_READING, "pdfminer", "apsw", "indexer", "nextcloud"})
    assert heavy == [], f"the read path imported {heavy}"


def test_every_parser_wraps_help_to_the_terminal_without_shutil() -> None:
    """Every command's help is laid out by our formatter: $COLUMNS wide (shutil's rule), shutil never imported."""
    out = json.loads(_python(
        "import json, os, sys\n"
        "from server.cli import build_parser, iter_commands\n"
        "from server.cli.parser import Formatter\n"
        "os.environ['COLUMNS'] = '52'\n"
        "parser = build_parser()\n"
        "commands = iter_commands(parser)\n"
        "helps = [p.format_help().split('\\n\\n', 1)[1] for _, p in commands   # past the usage lines\n"
        "         if p.formatter_class is Formatter]   # (the raw one keeps a description's lines as written)\n"
        "print(json.dumps({'others': sorted(n for n, p in commands if not issubclass(p.formatter_class, Formatter)),\n"
        "                  'lines': [line for h in helps for line in h.splitlines()],\n"
        "                  'modules': sorted(sys.modules)}))\n"))
    assert out["others"] == [], f"these commands' help ignores the terminal width: {out['others'][:5]}"
    loaded = sorted(set(out["modules"]) & set(NOT_FOR_PARSING))
    assert loaded == [], f"laying out the help imported {loaded}"
    # Wrapped to 52 columns (the root's help is an index of one line per command; usage lines keep an option's
    # alternatives together, whatever the width; examples and rules are written out whole on purpose).
    wrapped = [line for line in out["lines"] if not line.startswith(("Example: ", "Rule: "))]
    assert len(wrapped) > 100 and max(map(len, wrapped)) <= 52, max(wrapped, key=len)


def test_library_levels_are_set_when_a_chatty_library_loads(fixture_docs: Path) -> None:
    """quiet_libraries() imports no logging; pdfminer, loaded later for a damaged PDF, is quiet all the same."""
    code = ("import sys\n"
            "from server.cli.logs import quiet_libraries\n"
            "quiet_libraries()\n"
            "assert 'logging' not in sys.modules\n"
            "from reader import extract\n"
            f"doc = extract(open({str(fixture_docs.parent / 'bad' / 'damaged.pdf')!r}, 'rb').read(), 'damaged.pdf')\n"
            "assert doc.engine == 'pdfminer.six', doc.engine   # the fallback ran: pdfminer was imported\n"
            "import logging\n"
            "assert logging.getLogger('pdfminer').level == logging.ERROR\n"
            "assert logging.getLogger('httpx').level == logging.WARNING\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "MediaBox" not in proc.stderr, f"pdfminer's warnings reached the terminal: {proc.stderr[:300]}"


def test_client_imports_app_clients_on_first_use(emulator: Emulator) -> None:
    """Making a NextcloudClient does not import icalendar; the first client.caldav does, once."""
    acct = emulator.account("alice")
    out = json.loads(_python(
        "import json, sys\n"
        "from nextcloud.client import NextcloudClient\n"
        "from nextcloud.config import Account\n"
        f"c = NextcloudClient(Account(url={acct['url']!r}, user={acct['user']!r}, "
        f"app_password={acct['app_password']!r}), retries=0)\n"
        "before = 'icalendar' in sys.modules\n"
        "cals = [x.name for x in c.caldav.calendars()]\n"
        "boards = c.deck.boards()\n"
        "print(json.dumps({'before': before, 'after': 'icalendar' in sys.modules, 'same': c.caldav is c.caldav,\n"
        "                  'deckSame': c.deck is c.deck, 'calendars': len(cals), 'requests': c.request_count}))\n"))
    assert out["before"] is False
    assert out["after"] is True
    assert out["same"] and out["deckSame"]
    assert out["calendars"] >= 1          # the lazily made CalDAV client really talked to the emulator
    assert out["requests"] >= 2


def test_root_help_is_an_index() -> None:
    done = _cli("--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Start with: mcp-nextcloud demo" in text
    lines = text.splitlines()
    top = [name for name, _ in iter_commands(build_parser()) if " " not in name]
    assert {"inspect", "index", "grep", "jobs", "login", "serve", "report", "demo"} <= set(top)
    start = next(i for i, line in enumerate(lines) if line.strip() == "COMMAND") + 1
    listed = lines[start:start + len(top)]
    # One line per command, in registry order, each with its summary on the same line.
    assert [line.split()[0] for line in listed] == top
    assert all(len(line.split()) > 2 for line in listed), listed
    assert not lines[start + len(top)].startswith("      "), "a command's summary wrapped onto a second line"
    # Groups name their actions on their one line.
    assert "(add, watch, status" in next(line for line in listed if line.split()[0] == "index")


def test_no_arguments_prints_the_index() -> None:
    done = _cli()
    assert done.returncode == 0
    assert done.stdout == _cli("--help").stdout


COMMANDS = dict(iter_commands(build_parser()))


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_help_has_a_runnable_example(name: str) -> None:
    parser = COMMANDS[name]
    examples = [line for line in parser.format_help().splitlines() if line.startswith("Example: ")]
    assert examples, f"`mcp-nextcloud {name} --help` has no 'Example:' line (set epilog=...)"
    argv = shlex.split(examples[0].removeprefix("Example: "))
    assert argv[0] == "mcp-nextcloud" and " ".join(argv[1:]).startswith(name), examples[0]
    # The example parses to this very command (a typo'd option would exit 2 here).
    args = build_parser().parse_args(argv[1:])
    assert callable(args.func)


def test_the_cli_keeps_url_logging_libraries_quiet_and_libraries_set_no_levels():
    """Importing our libraries configures no logger; the CLI raises httpx/httpcore/pdfminer (URLs, noise)."""
    import subprocess
    import sys

    code = ("import logging, nextcloud.http, reader.formats.pdf\n"
            "names = ('httpx', 'httpcore', 'pdfminer')\n"
            "assert all(logging.getLogger(n).level == logging.NOTSET for n in names)\n"
            "from server.cli.logs import quiet_libraries\n"
            "logging.getLogger('pdfminer').setLevel(logging.DEBUG)  # a level the user chose stays\n"
            "quiet_libraries()\n"
            "assert logging.getLogger('httpx').level == logging.WARNING\n"
            "assert logging.getLogger('httpcore').level == logging.WARNING\n"
            "assert logging.getLogger('pdfminer').level == logging.DEBUG\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
