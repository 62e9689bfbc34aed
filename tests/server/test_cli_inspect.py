"""`mcp-nextcloud inspect`: summary plus find / outline / slice, JSON or readable, clean errors."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


from mcp_nextcloud.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_json(capsys, argv: list[str]) -> dict:
    assert main(["inspect", *argv, "--json"]) == 0
    out = capsys.readouterr().out
    res = json.loads(out)
    # Compact JSON on one line: exactly what separators=(",", ":") gives.
    assert out == json.dumps(res, separators=(",", ":"), ensure_ascii=False) + "\n"
    return res


def test_page_of_markdown(capsys, fixture_docs: Path) -> None:
    res = run_json(capsys, [str(fixture_docs / "manual.md"), "--limit", "40"])
    doc = res                        # flat, like files_read's answer
    assert doc["kind"] == "markdown" and doc["name"] == "manual.md"
    text = (fixture_docs / "manual.md").read_text(encoding="utf-8")
    assert doc["chars"] == len(text)
    p = res
    assert p["offset"] == 0 and p["returned"] <= 40 and p["truncated"] is True
    assert text.startswith(p["content"])
    assert "offset=" in p["hint"]


def test_find_then_read_at_the_match(capsys, fixture_docs: Path) -> None:
    md = str(fixture_docs / "manual.md")
    res = run_json(capsys, [md, "--find", "CAFE CREME"])
    f = res
    assert f["total"] == 1
    m = f["matches"][0]
    assert m["text"] == "Café crème" and m["line"] == 3
    res = run_json(capsys, [md, "--offset", str(m["offset"]), "--limit", "10"])
    assert res["content"] == "Café crème"


def test_outline_json_and_human(capsys, fixture_docs: Path) -> None:
    md = str(fixture_docs / "manual.md")
    res = run_json(capsys, [md, "--outline"])
    titles = [e["title"] for e in res["entries"]]
    assert "Installation" in titles and "not a heading inside a fence" not in titles
    assert main(["inspect", md, "--outline"]) == 0
    out = capsys.readouterr().out
    assert "manual.md: markdown" in out and "- Installation" in out and "line 5" in out


def test_outline_within_a_budget_expands_a_section(capsys, tmp_path: Path) -> None:
    from mcp_nextcloud.fixtures.large_docs import bookmarked_pdf

    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(bookmarked_pdf())
    top = run_json(capsys, [str(pdf), "--outline"])
    chapters = [e for e in top["entries"] if e["level"] == 1]
    assert top["total"] == 600 and len(chapters) == 24 and chapters[-1]["subsections"] == 24
    chapter = chapters[9]
    expanded = run_json(capsys, [str(pdf), "--outline", "--offset", str(chapter["offset"])])
    titles = [e["title"] for e in expanded["entries"]]
    assert titles[titles.index(chapter["title"]) + 1].startswith("10.1 ")       # the chapter opened
    titled = run_json(capsys, [str(pdf), "--outline", "--section", "5.1 section"])
    titles = [e["title"] for e in titled["entries"]]
    assert titles[titles.index("5.1 Section on part 1") + 1] == "5.1.1 Detail 1"
    small = run_json(capsys, [str(pdf), "--outline", "--budget", "900"])
    assert len(json.dumps(small, separators=(",", ":")).encode()) <= 900 and small["nextOffset"]
    assert main(["inspect", str(pdf), "--outline"]) == 0
    assert "24 more below" in capsys.readouterr().out
    assert main(["inspect", str(pdf), "--outline", "--section", "nowhere"]) == 2
    assert "no outline entry titled" in capsys.readouterr().err


def test_human_find_view(capsys, fixture_docs: Path) -> None:
    assert main(["inspect", str(fixture_docs / "manual.md"), "--find", "saffron gecko"]) == 0
    out = capsys.readouterr().out
    assert "1 match(es) for 'saffron gecko'" in out and "line 15" in out


def test_no_match_shows_hint(capsys, fixture_docs: Path) -> None:
    res = run_json(capsys, [str(fixture_docs / "notes.txt"), "--find", "aubergine lighthouse"])
    assert res["total"] == 0 and "outline" in res["hint"]


def test_missing_file_exit_2(capsys, tmp_path: Path) -> None:
    assert main(["inspect", str(tmp_path / "nope.pdf")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and "Traceback" not in err


def test_folder_exit_2(capsys, fixture_docs: Path) -> None:
    assert main(["inspect", str(fixture_docs)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_image_summary(capsys, fixture_docs: Path) -> None:
    res = run_json(capsys, [str(fixture_docs / "photo.png")])
    assert res["kind"] == "image"
    assert res["mime"] == "image/png" and res["width"] > 0


def test_unreadable_file_exit_2(capsys, fixture_bad: Path) -> None:
    assert main(["inspect", str(fixture_bad / "binary.txt"), "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.err == ""      # --json: the failure is the JSON on stdout (it printed nothing there before)
    error = json.loads(captured.out)["error"]
    assert error["code"] == "binary" and error["retry"] is False        # the reader's code and retry, as fields
    assert error["cause"].count("binary.txt") == 1 and error["action"] == "It is not text and cannot be read."
    assert error["message"] == f"{error['cause']} {error['action']}"   # a person hears the retry only when it helps


def test_a_reader_refusal_names_the_file_once(capsys) -> None:
    """The reader's cause may not name the file (an encrypted PDF): inspect names it, once."""
    from mcp_nextcloud.reader.document import ReaderCode, ReaderError
    from mcp_nextcloud.cli.inspect import _unreadable

    args = argparse.Namespace(json=True)
    for err in (ReaderError("encrypted PDF", "ask the owner for an unencrypted copy", code=ReaderCode.ENCRYPTED),
                ReaderError("secret.pdf: the extraction process died", "ask for a smaller copy",
                            code=ReaderCode.MEMORY)):
        assert _unreadable(args, "secret.pdf", err) == 2
        error = json.loads(capsys.readouterr().out)["error"]
        assert error["cause"].startswith("secret.pdf: ") and error["message"].count("secret.pdf") == 1
        assert error["code"] == err.code.value and error["retry"] is False


def test_bad_arguments_exit_2(capsys, fixture_docs: Path) -> None:
    assert main(["inspect", str(fixture_docs / "notes.txt"), "--offset", "999999"]) == 2
    assert "beyond the end" in capsys.readouterr().err
    assert main(["inspect", str(fixture_docs / "notes.txt"), "--find", "  - "]) == 2
    assert "nothing to search" in capsys.readouterr().err


def test_subprocess_python_m_server(fixture_docs: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_nextcloud", "inspect", str(fixture_docs / "manual.md"), "--outline", "--json"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    res = json.loads(proc.stdout)
    assert res["entries"][0]["title"] == "Sample Manual"


def test_find_on_the_fixture_manual_pdf(capsys, fixture_docs: Path) -> None:
    res = run_json(capsys, [str(fixture_docs / "manual.pdf"), "--find", "PROPRIÉTÉS", "--limit", "2"])
    assert res["kind"] == "pdf" and res["engine"] == "pypdfium2"
    assert res["pages"] > 10
    f = res
    assert f["total"] >= 3 and len(f["matches"]) == 2 and f["truncated"] is True
    assert all(m["page"] > 1 for m in f["matches"])


def test_a_hint_at_the_terminal_names_the_flags(capsys, tmp_path: Path, fixture_docs: Path) -> None:
    """`--offset 1234`, not the tool's `offset=1234` (issue 50); --json keeps files_read's words."""
    from mcp_nextcloud.fixtures.large_docs import bookmarked_pdf

    pdf = tmp_path / "big.pdf"
    pdf.write_bytes(bookmarked_pdf())
    for argv in ([str(pdf), "--outline", "--budget", "900"], [str(fixture_docs / "manual.md"), "--limit", "40"]):
        assert main(["inspect", *argv]) == 0
        hint = [line for line in capsys.readouterr().out.splitlines() if line.startswith("hint:")]
        assert hint and "--offset " in hint[0] and "offset=" not in hint[0], hint
