"""An internal error says it was logged on the server: it is (issue 10, item 8) - with its traceback, to
stderr and a rotating 0600 file under the data directory, never with arguments or content."""
from __future__ import annotations

import logging

import anyio
import pytest


@pytest.fixture
def fault_log(tmp_path, capsys):
    from mcp_nextcloud.server import faultlog

    path = faultlog.install(tmp_path / "data", stderr=True)
    yield path
    for handler in list(faultlog.LOGGER.handlers):
        faultlog.LOGGER.removeHandler(handler)
        handler.close()


def test_internal_fault_is_logged_with_traceback_but_no_arguments(world, tmp_path, fault_log, capsys):
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext
    from mcp_nextcloud.server.telemetry import CallLog

    # A context whose index is missing: a real crash inside the tool, not a simulated one.
    ctx = ServerContext(account=world.account, index=None, telemetry=CallLog(tmp_path / "calls.sqlite"))
    server = build_server(ctx)
    marker = "SECRET-ARGUMENT-7f3a"

    async def go():
        async with Client(server, mode="legacy") as client:
            return await client.call_tool("files_grep", {"query": marker})

    result = anyio.run(go)
    ctx.close()
    assert result.is_error and "logged on the server" in result.content[0].text
    logged = fault_log.read_text()
    assert "internal fault in files_grep" in logged and 'File "' in logged and "Error" in logged
    assert marker not in logged
    assert fault_log.stat().st_mode & 0o777 == 0o600
    err = capsys.readouterr().err
    assert "internal fault in files_grep" in err and marker not in err


def test_fault_text_leaves_exception_messages_out():
    from mcp_nextcloud.server.faultlog import describe

    secret, path = "the content of a private " + "document", "/Private/" + "diary.md"
    try:
        try:
            raise KeyError(secret)
        except KeyError as inner:
            raise RuntimeError(path) from inner
    except RuntimeError as exc:
        text = describe(exc)
    assert "builtins.KeyError" in text and "builtins.RuntimeError" in text
    assert "private document" not in text and "diary" not in text


def test_log_rotates_and_every_file_stays_private(tmp_path):
    from mcp_nextcloud.server import faultlog

    faultlog.install(tmp_path, stderr=False)
    try:
        for _ in range(5000):
            faultlog.LOGGER.warning("x" * 1000)
    finally:
        for handler in list(faultlog.LOGGER.handlers):
            faultlog.LOGGER.removeHandler(handler)
            handler.close()
    files = sorted(tmp_path.glob("faults.log*"))
    assert len(files) == 1 + faultlog.BACKUPS
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in files)
    assert all(f.stat().st_size <= faultlog.MAX_BYTES for f in files)
    assert logging.getLogger("mcp_nextcloud.faults").propagate is False
