"""Call telemetry (kinds, no values) and the absence of secrets or internal URLs in any answer."""
from __future__ import annotations

import json
import uuid

from mcp_nextcloud.cli import main as cli_main
from mcp_nextcloud.server.telemetry import CallLog, format_table


def test_every_call_is_recorded_with_its_kind_but_never_its_arguments(ctx, call, tmp_path):
    marker = "secretword" + uuid.uuid4().hex[:8]
    call("files_grep", {"query": marker})                                   # ok (no hits)
    call("files_read", {"path": f"/Documents/{marker}.md"})                 # misuse (404)
    call("files_read", {"path": "/Documents/manual.md", "format": "bogus"})  # misuse (schema)
    call("files_write", {"path": f"/Documents/{marker}.pdf", "content": marker})  # refused (binary)
    rows = ctx.telemetry.rows()
    assert [(r["tool"], r["kind"]) for r in rows] == [
        ("files_grep", "ok"), ("files_read", "misuse"), ("files_read", "misuse"), ("files_write", "refused")]
    assert rows[0]["bytes_out"] > 0 and all(r["duration_ms"] >= 0 for r in rows)
    assert [r["status"] for r in rows[1:]] == ["404", "bad_argument", "binary_file"]
    ctx.telemetry.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.glob("calls.sqlite*"))
    assert marker.encode() not in raw


def test_report_prints_a_table_and_json(tmp_path, capsys):
    log = CallLog(tmp_path / "calls.sqlite")
    log.record("files_read", "ok", "ok", 3.0, 500)
    log.record("files_read", "misuse", "offset_past_end", 1.0, 0)
    log.record("files_grep", "fault", "503", 9.0, 0)
    log.close()
    assert cli_main(["report", "--telemetry", str(tmp_path / "calls.sqlite")]) == 0
    table = capsys.readouterr().out
    assert "files_read" in table and "offset_past_end×1" in table and "misuse" in table.splitlines()[0]
    assert cli_main(["report", "--json", "--telemetry", str(tmp_path / "calls.sqlite")]) == 0
    out = capsys.readouterr().out.strip()
    data = json.loads(out)
    assert ": " not in out
    read = next(t for t in data["tools"] if t["tool"] == "files_read")
    assert (read["calls"], read["ok"], read["misuse"], read["meanBytes"]) == (2, 1, 1, 500)


def test_report_without_a_log_says_what_to_do(tmp_path, capsys):
    assert cli_main(["report", "--telemetry", str(tmp_path / "none.sqlite")]) == 0
    assert "mcp-nextcloud serve" in capsys.readouterr().out
    assert format_table([]) == "no calls recorded yet"


def test_unknown_kind_is_stored_as_fault(tmp_path):
    log = CallLog(tmp_path / "c.sqlite")
    log.record("x", "weird", 1, 1.0, 1)
    assert log.rows()[0]["kind"] == "fault"
    log.close()


def test_no_secret_or_internal_url_in_any_answer(world, call):
    calls = [
        ("nextcloud_whoami", {}),
        ("files_search", {"name": "manual"}),
        ("files_search", {"name": "not-there-" + uuid.uuid4().hex[:6]}),
        ("files_grep", {"query": "quota"}),
        ("files_read", {"path": "/Documents/manual.pdf", "find": "install"}),
        ("files_read", {"path": "/Documents/photo.png"}),
        ("files_read", {"path": "/Documents/nope.md"}),
        ("files_read", {"fileId": 123456789}),
        ("files_write", {"path": "/Documents/notes.txt", "content": "x"}),
        ("files_write", {"path": f"/Nope-{uuid.uuid4().hex[:6]}/x.md", "content": "x"}),
        ("files_share_internal", {"path": "/Documents/notes.txt", "shareWith": "nobody"}),
    ]
    # last: a server error on a write (not retried, so quick) must not leak the URL either
    calls.append(("files_write", {"path": f"/Documents/{uuid.uuid4().hex[:6]}.md", "content": "x"}))
    texts = []
    for i, (name, args) in enumerate(calls):
        if i == len(calls) - 1:
            world.emulator.faults.add(method="PUT", status=500, times=5)
        result = call(name, args)
        texts.append(result.content[0].text)
        if result.structured_content is not None:
            texts.append(json.dumps(result.structured_content))
    world.emulator.faults.clear()
    assert result.is_error and "retry" in result.content[0].text.lower()  # the 5xx row was exercised
    blob = "\n".join(texts)
    host = world.account.url.split("://", 1)[1]
    for secret in (world.secret, world.account.url, host, "remote.php", "/ocs/v", "Authorization", "Basic ",
                   "Traceback", "Error executing tool"):
        assert secret not in blob, secret
