"""CLI start-up stays cheap, and its help is an index with an example per command.

Import checks run in a fresh interpreter (subprocess), because this test
process has long since imported everything.
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
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


def _python(code: str) -> str:
    """Run code in a fresh interpreter from the project root; its stdout."""
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
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
                            "reader.slicing", "hashlib"})
    assert ours == [], f"grep imported {ours}: keep them behind the functions that need them"


def test_inspect_of_a_pdf_imports_nothing_of_the_server(fixture_docs: Path) -> None:
    """The PDF is read (in the capped child) by pdfium alone; the CLI process loads no server, index or Office code."""
    run = _modules_after(["inspect", str(fixture_docs / "manual.pdf"), "--json"])
    assert run["rc"] == 0
    assert json.loads(run["out"])["engine"] == "pypdfium2"
    tops = {m.split(".")[0] for m in run["modules"]}
    heavy = sorted(tops & {*NOT_FOR_READING, "pdfminer", "apsw"})
    assert heavy == [], f"inspect imported {heavy}"


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
