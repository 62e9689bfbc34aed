"""The CLI: index add / status / grep (text and compact JSON), --index and $MCP_NEXTCLOUD_INDEX, errors."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mcp_nextcloud.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_add_status_grep_json(tmp_path, capsys, fixture_docs):
    db = str(tmp_path / "cli.db")
    assert main(["index", "add", str(fixture_docs), "--index", db, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["scanned"] > 5 and report["extracted"] > 5

    assert main(["index", "status", "--index", db, "--json"]) == 0
    out = capsys.readouterr().out
    st = json.loads(out)
    assert st["counts"]["indexed"] == report["extracted"] and ": " not in out and "\n" not in out.strip()

    assert main(["grep", "café crème", "--index", db, "--json", "--limit", "1"]) == 0
    out = capsys.readouterr().out.strip()
    res = json.loads(out)
    assert res["items"] and res["tookMs"] >= 0 and ", " not in out[:40]
    # The hit record files_grep returns: `modified` as ISO text, never an epoch `mtime`.
    assert "mtime" not in res["items"][0] and res["items"][0]["modified"].endswith("Z")
    if res["total"] > 1:
        assert res["page"]["has_more"]
        assert main(["grep", "café crème", "--index", db, "--json", "--limit", "1",
                     "--cursor", res["page"]["next_cursor"]]) == 0
        assert json.loads(capsys.readouterr().out)["items"][0]["path"] != res["items"][0]["path"]

    assert main(["grep", "manual", "--index", db]) == 0
    text = capsys.readouterr().out
    assert "manual" in text.lower() and "file(s) match" in text

    assert main(["index", "status", "--index", db]) == 0
    assert "files (" in capsys.readouterr().out


def test_errors_exit_2_with_instruction(tmp_path, capsys):
    db = str(tmp_path / "e.db")
    assert main(["index", "add", str(tmp_path / "missing"), "--index", db]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert main(["grep", "x", "--index", db]) == 2          # a missing index is named, never created
    assert "no index at" in capsys.readouterr().err and not Path(db).exists()
    (tmp_path / "empty").mkdir()
    built = str(tmp_path / "built.db")
    assert main(["index", "add", str(tmp_path / "empty"), "--index", built]) == 0
    capsys.readouterr()
    assert main(["grep", "x", "--index", built, "--cursor", "bogus"]) == 2
    err = capsys.readouterr().err
    assert "cursor" in err and "Traceback" not in err
    assert main(["grep", "   ", "--index", built]) == 2
    assert "empty query" in capsys.readouterr().err
    assert main(["index", "watch", "--index", db]) == 2
    assert "no folder to watch" in capsys.readouterr().err


def test_env_var_points_at_the_index(tmp_path, fixture_docs):
    db = tmp_path / "env.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT), MCP_NEXTCLOUD_INDEX=str(db))
    run = lambda *a: subprocess.run([sys.executable, "-m", "mcp_nextcloud", *a], cwd=ROOT, env=env,  # noqa: E731
                                    capture_output=True, text=True, timeout=120)
    r = run("index", "add", str(fixture_docs))
    assert r.returncode == 0, r.stderr
    assert db.exists()
    r = run("grep", "saffron", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["total"] >= 1


def test_watch_command_picks_up_changes_and_stops_on_ctrl_c(tmp_path):
    import signal
    import time

    from mcp_nextcloud.indexer.index import Index

    folder = tmp_path / "watched"
    folder.mkdir()
    (folder / "first.txt").write_text("initial narwhal")
    db = tmp_path / "watch.db"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "mcp_nextcloud", "index", "watch", str(folder), "--index", str(db)],
                            cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        assert line.startswith("watching"), line
        time.sleep(0.3)
        (folder / "second.txt").write_text("late narwhal")
        ix = Index.open(db)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and ix.grep("narwhal").total < 2:
            time.sleep(0.1)
        assert ix.grep("narwhal").total == 2
        ix.close()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == 0 and "stopped" in err and "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()


def test_a_damaged_index_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"this is not a database" * 100)
    assert main(["grep", "anything", "--index", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "is damaged or not an index" in err and "Move it aside" in err and "Traceback" not in err


def test_grep_caps_are_the_mcp_ones_and_say_so(tmp_path, capsys, fixture_docs):
    from mcp_nextcloud.indexer.search.syntax import MAX_QUERY_CHARS, MAX_TERMS

    db = str(tmp_path / "caps.db")
    assert main(["index", "add", str(fixture_docs), "--index", db]) == 0
    capsys.readouterr()
    # 2,000 repeated words (17.5 s before the caps): refused at once, with the cap and what to do.
    assert main(["grep", " ".join(["manual"] * 2000), "--index", db]) == 2
    err = capsys.readouterr().err
    assert f"at most {MAX_QUERY_CHARS}" in err and "Traceback" not in err
    assert main(["grep", " OR ".join(f"w{i}" for i in range(MAX_TERMS + 1)), "--index", db]) == 2
    assert f"at most {MAX_TERMS} are searched" in capsys.readouterr().err
    # A question in plain words is never refused for its length (issue 48): its extra words are meaning's.
    long = "how do I find the manual that explains every single step of the setup of this very old device today"
    assert len(long.split()) > MAX_TERMS and main(["grep", long, "--index", db]) == 0
    assert "terms" not in capsys.readouterr().err
    # An operator-looking word taken literally is said, on stderr with the other notes.
    assert main(["grep", "manual or guide", "--index", db]) == 0
    assert "'or' was searched as a word" in capsys.readouterr().err


def test_grep_help_says_how_a_query_is_read(capsys):
    import pytest

    with pytest.raises(SystemExit):
        main(["grep", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "start of a word" in out and "OR" in out and "-word" in out and "quoted" in out


def test_a_query_that_starts_with_a_dash(tmp_path, capsys):
    """Issue 50: `grep --max-old-space-size` says to put the query after --, and `grep -- ...` finds it."""
    import pytest

    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "node.txt").write_text("Raise the heap with --max-old-space-size=4096 when the build runs out.\n")
    db = str(tmp_path / "dash.db")
    assert main(["index", "add", str(notes), "--index", db]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["grep", "--max-old-space-size", "--index", db])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and "mcp-nextcloud grep -- --max-old-space-size" in err
    assert main(["grep", "--index", db, "--json", "--", "--max-old-space-size"]) == 0
    assert json.loads(capsys.readouterr().out)["items"][0]["path"].endswith("node.txt")
    with pytest.raises(SystemExit):       # a mistyped option keeps its own suggestion, without the -- hint
        main(["grep", "x", "--limt", "3", "--index", db])
    err = capsys.readouterr().err
    assert "Did you mean '--limit'" in err and " -- " not in err
