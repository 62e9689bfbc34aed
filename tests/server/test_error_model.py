"""One error model: a hierarchy matched with isinstance across layers, one table, two audiences."""
from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_nextcloud.nextcloud.errors import (Category, ErrorCode, FaultError, MisuseError, NextcloudError, NotFoundError,
                                            RefusedError, error_for, no_credentials)
from mcp_nextcloud.reader.document import DEFAULT_LIMITS, ReaderCode, ReaderError
from mcp_nextcloud.cli.errors import person_text
from mcp_nextcloud.server.status import ToolStatus
from mcp_nextcloud.cli.voice import for_person
from mcp_nextcloud.server.errors import ToolFailure, as_tool_failure, from_nextcloud, from_reader, misuse, refused

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("status,cls", [(404, NotFoundError), (400, MisuseError), (401, RefusedError),
                                        (423, RefusedError), (503, FaultError), (507, RefusedError)])
def test_the_class_follows_the_code_and_the_category(status, cls):
    err = error_for("webdav", status, path="/a")
    assert isinstance(err, cls) and isinstance(err, NextcloudError)
    assert err.category is err.code.category and err.retry is err.code.retry
    # A direct construction lands in the same class as the table's.
    assert type(NextcloudError(err.code, "x")) is type(err)


def test_retry_is_decided_in_one_place():
    for code in ErrorCode:
        err = NextcloudError(code, "x")
        assert (err.category, err.retry) == (code.category, code.retry)
        assert err.fields()["code"] == code.value and ErrorCode.parse(code.value) is code
    assert {c.value for c in Category} == {"refused", "misuse", "fault"} and ErrorCode.parse("nonsense") is None


def test_the_categories_outside_the_table_are_its_rows_attributes():
    """What a sync counts as the server being gone, what blocks every sync, what is a passing failure."""
    transport = {c.value for c in ErrorCode if c.transport}
    blocks = {c.value for c in ErrorCode if c.blocks_sync}
    passing = {c.value for c in ErrorCode if c.passing}
    assert transport == {"network", "timeout", "auth", "no_credentials"}
    assert blocks == {"auth", "no_credentials", "network", "forbidden", "throttled"}
    assert passing == {"timeout", "server", "rate_limited", "invalid_response", "locked"}
    assert not blocks & passing   # a failure either waits for someone or passes, never both


def test_an_error_keeps_its_parts_and_class_through_pickle():
    err = error_for("webdav", 404, path="/Docs/a.txt", detail="gone")
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is NotFoundError and str(again) == str(err) and again.cause == err.cause
    reader = pickle.loads(pickle.dumps(ReaderError("encrypted PDF", "ask for another copy", code=ReaderCode.ENCRYPTED)))
    assert reader.code is ReaderCode.ENCRYPTED and reader.retry is False and reader.action == "ask for another copy"
    assert str(reader) == "encrypted PDF: ask for another copy; do not retry"


def test_isinstance_matching_across_layers(world):
    """A 404 raised by nextcloud/ reaches server/ as a NotFoundError and becomes a misuse tool failure."""
    from mcp_nextcloud.nextcloud.client import NextcloudClient

    with NextcloudClient(world.account) as client:
        with pytest.raises(NextcloudError) as caught:
            client.webdav.stat("/No/Such/File.txt")
    assert isinstance(caught.value, NotFoundError)
    failure = as_tool_failure(caught.value)
    assert isinstance(failure, ToolFailure) and failure.category is Category.MISUSE \
        and failure.status is ErrorCode.NOT_FOUND and failure.http_status == 404 and failure.logged_status == "404"
    assert failure.retry is False and as_tool_failure(error_for("webdav", 503)).retry is True
    assert "files_search" in str(failure) and "do not repeat this call unchanged" in str(failure).lower()
    assert "do not retry" not in str(failure).lower()   # a misuse is told to change the call (issue 37)
    fault = as_tool_failure(ReaderError("took too long", "ask for a smaller copy", code=ReaderCode.TIMEOUT))
    assert fault is not None and (fault.category, fault.status) == (Category.FAULT, ReaderCode.TIMEOUT)
    assert fault.fields() == {"code": "timeout", "cause": "took too long.", "action": "Ask for a smaller copy.",
                              "retry": False} and str(fault).endswith("Do not retry.")
    assert as_tool_failure(ValueError("a bug")) is None


def test_the_same_error_worded_for_each_audience():
    for err in (no_credentials(), error_for("webdav", 401), error_for("login", None, condition="login_timeout")):
        agent, person = str(from_nextcloud(err)), person_text(err)
        for text in (agent, person):
            assert err.cause in text
        # Each front end says the retry from the field: the agent explicitly, the person only when it helps.
        said = "Do not repeat this call unchanged." if err.category is Category.MISUSE else "Do not retry."
        assert err.retry is False and agent.endswith(said) and "retry" not in person.lower()
        assert "Tell the user (no tool can do this) to run `mcp-nextcloud login URL`" in agent
        assert "Run `mcp-nextcloud login URL`" in person and "Tell the user" not in person
    # An error without a person-only step reads the same to both, but for the retry.
    gone = error_for("webdav", 404, path="/a")
    assert str(from_nextcloud(gone)) == str(gone) and str(gone).endswith(" Do not repeat this call unchanged.")
    # the person hears the same, with the CLI's command for the tool's name (cli/voice.py), and no retry
    assert person_text(gone) == for_person(str(gone).removesuffix(" Do not repeat this call unchanged."))
    assert "files_search" in str(gone) and "`mcp-nextcloud files search`" in person_text(gone)
    busy = error_for("webdav", 503, path="/a")
    assert str(from_nextcloud(busy)).endswith("Retry once; if it fails again, stop and report.")
    assert person_text(busy).endswith("Trying again in a moment may help.")
    failure = from_nextcloud(busy)
    assert failure.fields() == {"code": "server", "cause": busy.cause_in(), "action": busy.action + ".",
                                "retry": True}


def test_the_front_ends_render_no_credentials_for_their_audience(tmp_path):
    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    ctx = ServerContext(account=None, index=None, telemetry=None)

    async def go():
        async with Client(build_server(ctx), mode="legacy") as c:
            return await c.call_tool("nextcloud_whoami", {})

    try:
        answer = anyio.run(go).content[0].text
    finally:
        ctx.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_"))}
    env.update({"MCP_NEXTCLOUD_CONFIG": str(tmp_path / "none.json"), "PYTHONPATH": str(ROOT),
                "MCP_NEXTCLOUD_INDEX": str(tmp_path / "i.db")})
    proc = subprocess.run([sys.executable, "-m", "mcp_nextcloud", "index", "sync"], env=env, cwd=str(ROOT),
                          capture_output=True, text=True, timeout=120)
    cause = no_credentials().cause
    assert cause in answer and cause in proc.stderr
    assert "Tell the user (no tool can do this) to run `mcp-nextcloud login URL`" in answer
    assert "Run `mcp-nextcloud login URL`" in proc.stderr and "Tell the user" not in proc.stderr


def test_tool_layer_constructors_keep_their_signatures():
    assert misuse("x").category is Category.MISUSE and misuse("x").status is ToolStatus.BAD_ARGUMENT
    big = refused("y", status=ToolStatus.TOO_LARGE)
    assert big.category is Category.REFUSED and big.status is ToolStatus.TOO_LARGE and big.code == "too_large"
    gone = from_nextcloud(error_for("deck", 403, path="card 9"))
    assert gone.category is Category.REFUSED and gone.status is ErrorCode.FORBIDDEN and gone.logged_status == "403"
    assert gone.code == "forbidden" and "do not guess ids" in str(gone)


def test_every_tool_status_is_an_enum_member_never_a_string():
    """The tool layer names a failure's status by a member of its one enum (compared by identity): no module of
    server/ or team/ passes a string as a status or compares a status with one."""
    import mcp_nextcloud.server as server

    offenders = []
    package = Path(server.__file__).parent.parent
    for path in [*(package / "server").rglob("*.py"), *(package / "team").rglob("*.py")]:
        text = path.read_text(encoding="utf-8")
        for pattern in (r'\bstatus=f?["\']', r'\b(?:failure|exc|err)\.status\s*(?:[!=]=|(?:not\s+)?in)\s*\(?\s*["\']'):
            offenders += [f"{path.name}: {m.group(0)}" for m in re.finditer(pattern, text)]
    assert offenders == []
    assert len({m.value for m in ToolStatus}) == len(ToolStatus)   # no alias: each status one member


def test_a_recorded_sync_failure_keeps_its_parts_for_each_audience(tmp_path):
    """The sync stores why it stopped in the index; a tool answer later words it for the agent, from its parts."""
    from mcp_nextcloud.indexer.remote import marks
    from mcp_nextcloud.indexer.index import Index

    with Index.open(tmp_path / "i.db") as index:
        marks.record_failure(index.writer(), error_for("webdav", 401), at=1_700_000_000)
        failure = marks.read_failure(index)
        assert failure is not None and failure.code is ErrorCode.AUTH and failure.at == "2023-11-14T22:13:20Z"
        assert isinstance(failure.error, RefusedError)
        assert "Run `mcp-nextcloud login URL`" in failure.message                      # the person's wording
        assert "Tell the user (no tool can do this) to run" in str(from_nextcloud(failure.error))
        marks.record_failure(index.writer(), ZeroDivisionError("secret detail"), at=1_700_000_000)
        crash = marks.read_failure(index)
        assert crash is not None and crash.error is None and "secret" not in crash.message


def test_the_reader_names_no_tool_and_the_tool_answer_adds_one():
    from mcp_nextcloud.reader import DEFAULT_LIMITS, extract

    limits = DEFAULT_LIMITS.__class__(max_bytes=10)
    with pytest.raises(ReaderError) as caught:
        extract(b"x" * 100, "big.txt", limits=limits)
    assert caught.value.code is ReaderCode.TOO_LARGE and "files_" not in str(caught.value)
    failure = from_reader(caught.value)
    answer = str(failure)
    assert answer.startswith(caught.value.cause) and "files_grep" in answer and answer.endswith("Do not retry.")
    assert failure.fields()["code"] == "too_large" and "files_grep" in failure.fields()["action"]


def test_reader_errors_keep_their_parts_across_the_process_boundary():
    from mcp_nextcloud.indexer.errors import reader_category
    from mcp_nextcloud.indexer.jobs.child import reader_error, work
    from mcp_nextcloud.indexer.jobs.pool import ExtractionPool

    legacy = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 512     # an OLE container: a .doc-era file
    status, code, parts = pickle.loads(pickle.dumps(work(legacy, "old.doc", None, DEFAULT_LIMITS, False)))
    assert status == "error"
    err = reader_error(code, parts)
    assert err.code is ReaderCode.UNSUPPORTED and err.cause.startswith("legacy Office format")
    assert err.action == "save it as docx, xlsx, pptx or PDF to read it" and err.retry is False
    assert str(err) == f"{err.cause}: {err.action}; do not retry"
    # Through a real capped worker process: the same parts come back.
    with ExtractionPool(1) as pool, pytest.raises(ReaderError) as caught:
        pool.extract(legacy, "old.doc", None, rows=False)
    assert caught.value.action == err.action and caught.value.code is ReaderCode.UNSUPPORTED
    # A reader bug: a fault, never a crash of the caller.
    bug = reader_error("failed", ("x.pdf: the reader failed (KeyError: 'x')", "report it", False))
    assert bug.code is ReaderCode.FAILED and reader_category(bug.code) is Category.FAULT
    assert as_tool_failure(bug).category is Category.FAULT


def test_no_failure_message_writes_the_retry_by_hand():
    """The retry is a field the front ends word (AGENT, PLAIN, the CLI's person voice): a message that said it
    too would say it twice, or contradict the field. Only the two places that word it say it: the table's voices
    (nextcloud/errors.py) and the reader's plain `str` (reader/document.py, the reader imports nothing of ours)."""
    root = Path(__file__).resolve().parents[2]
    package = root / "mcp_nextcloud"
    wording = {package / "nextcloud" / "errors.py", package / "reader" / "document.py"}
    files = [p for p in sorted(package.rglob("*.py")) if "fixtures" not in p.parts and p not in wording]
    said = [f"{p.relative_to(root)}:{n}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if ("do not retry" in line.lower() or "retry_text" in line) and not line.lstrip().startswith("#")]
    assert len(files) > 150 and said == []


def test_http_level_refusals_carry_the_parts_and_word_the_retry_from_the_table():
    """The bearer guard's, the body limit's and mcp-mail's answers: code, cause, action, retry as fields; the
    text joins them in the agent's words (nothing writes the retry by hand)."""
    import json

    from mcp_nextcloud.nextcloud.errors import PLAIN
    from mcp_nextcloud.server.http_auth import refusal
    from mcp_nextcloud.server.http_limits import too_large_body
    from mcp_nextcloud.server.mail_app import UNAVAILABLE

    parts = refusal("unauthorized", "Missing or wrong bearer token", "Send the token")
    assert parts == {"code": "unauthorized", "cause": "Missing or wrong bearer token.", "action": "Send the token.",
                     "retry": False, "message": "Missing or wrong bearer token. Send the token. Do not retry."}
    error = json.loads(too_large_body(1000))["error"]
    assert error["code"] == -32600 and error["data"]["code"] == "too_large" and error["data"]["retry"] is False
    assert error["message"] == f"{error['data']['cause']} {error['data']['action']} {PLAIN.retry_no}"
    assert all(text.endswith(PLAIN.retry_no) and text.count("retry") == 1 for text in UNAVAILABLE.values())
