"""What the client entry point loads, and the CLI's help: an index with an example per command.

Every command is a client of the index service (service/daemon.py): what a call pays for in its own
process is the entry point and the hand-over (service/client.py). That is checked here, in a fresh
interpreter (this test process has long since imported everything); the libraries below the service import
what they need like any library. tests/server/test_cli_service.py checks a whole call answered by the service.
"""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_nextcloud.cli import build_parser, iter_commands

ROOT = Path(__file__).resolve().parents[2]
# The hand-over's own imports: C modules of the interpreter's library, no Python module of the stdlib.
CLIENT = {"mcp_nextcloud", "mcp_nextcloud.service", "mcp_nextcloud.cli", "mcp_nextcloud.environment",
          "contextvars", "_contextvars",
          "mcp_nextcloud.service.client", "_socket", "_sha256", "_sha2"}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mcp_nextcloud", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)


def test_the_entry_point_and_the_hand_over_import_only_the_client() -> None:
    """The console script's module, cli and the service's address: nothing of argparse, json, the
    libraries or the MCP stack (a call the service answers imports only these)."""
    code = ("import json, os, sys\n"
            "before = set(sys.modules)\n"
            "import mcp_nextcloud\n"
            "import mcp_nextcloud.cli\n"
            "from mcp_nextcloud.service import client as service_client\n"
            "name = service_client.service_name(['grep', 'x', '--index', 'a.db'], os.environ)\n"
            "assert service_client.forwarded(['grep', 'x']) and not service_client.forwarded(['serve'])\n"
            "print(json.dumps(sorted(set(sys.modules) - before)))\n")
    env = {k: v for k, v in os.environ.items() if k != "MCP_NEXTCLOUD_SERVICE"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env=env)
    assert done.returncode == 0, done.stderr
    loaded = set(json.loads(done.stdout))
    assert loaded <= CLIENT, sorted(loaded - CLIENT)


def test_library_levels_are_set_when_a_chatty_library_loads(fixture_docs: Path) -> None:
    """pdfminer, loaded after quiet_libraries() for a damaged PDF, is quiet all the same."""
    code = ("import sys\n"
            "from mcp_nextcloud.cli.logs import quiet_libraries\n"
            "quiet_libraries()\n"
            "from mcp_nextcloud.reader import extract\n"
            f"doc = extract(open({str(fixture_docs.parent / 'bad' / 'damaged.pdf')!r}, 'rb').read(), 'damaged.pdf')\n"
            "assert doc.engine == 'pdfminer.six', doc.engine   # the fallback ran: pdfminer was imported\n"
            "import logging\n"
            "assert logging.getLogger('pdfminer').level == logging.ERROR\n"
            "assert logging.getLogger('httpx').level == logging.WARNING\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "MediaBox" not in proc.stderr, f"pdfminer's warnings reached the terminal: {proc.stderr[:300]}"


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
    # Groups name their actions on their one line, once (issue 50: "service ... status, stop, start (status,...").
    assert "(add, watch, status" in next(line for line in listed if line.split()[0] == "index")
    for line in listed:
        summary, _, actions = line.partition(" (")
        assert not actions or actions.rstrip(")").split(" (")[-1] not in summary, line
    assert "--version" in text


def test_version_says_the_package_version() -> None:
    from importlib.metadata import version

    for argv in (("--version",), ("version",)):
        done = _cli(*argv)
        assert done.returncode == 0 and done.stdout == f"mcp-nextcloud {version('mcp-nextcloud')}\n", done
    done = _cli("version", "--json")
    assert done.stdout == '{"version":"%s"}\n' % version("mcp-nextcloud")


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

    code = ("import logging, mcp_nextcloud.nextcloud.http, mcp_nextcloud.reader.formats.pdf\n"
            "names = ('httpx', 'httpcore', 'pdfminer')\n"
            "assert all(logging.getLogger(n).level == logging.NOTSET for n in names)\n"
            "from mcp_nextcloud.cli.logs import quiet_libraries\n"
            "logging.getLogger('pdfminer').setLevel(logging.DEBUG)  # a level the user chose stays\n"
            "quiet_libraries()\n"
            "assert logging.getLogger('httpx').level == logging.WARNING\n"
            "assert logging.getLogger('httpcore').level == logging.WARNING\n"
            "assert logging.getLogger('pdfminer').level == logging.DEBUG\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("argv", [("--help",), ("files", "read", "--help"), ("--version",)])
def test_a_reader_that_went_away_is_no_error(argv: tuple[str, ...]) -> None:
    """`mcp-nextcloud --help | true` (issue 50): no BrokenPipeError, exit 0, nothing on stderr."""
    read_end, write_end = os.pipe()
    os.close(read_end)     # the reader is gone before the first byte
    try:
        done = subprocess.run([sys.executable, "-m", "mcp_nextcloud", *argv], cwd=ROOT, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=60,
                              env={**os.environ, "MCP_NEXTCLOUD_SERVICE": "0"})
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, ""), done.stderr[-500:]
