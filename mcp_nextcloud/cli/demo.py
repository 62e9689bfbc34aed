"""`mcp-nextcloud demo`: the whole product in one command, against the bundled emulator.

Starts the Nextcloud emulator seeded with the sample documents, syncs it into
a temporary index, and drives the real MCP server through an in-process MCP
client: tools/list, files_grep, then files_read with find on the manual. It
prints exactly the JSON an agent would receive, so a newcomer sees the
answers (and their size) without configuring anything.
"""
from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from mcp_nextcloud.cli.console import stdout

MANUAL = "/Documents/manual.pdf"
SCAN = "/Scans/scanned.pdf"
# A question in French about an English note: answered by meaning (no word of it is in the note).
QUESTION = "liste de courses avec du lait"


# Printed when the demo ends: the one place these suggestions live.
NEXT_STEPS = (
    ("mcp-nextcloud demo --serve", "keep this emulated Nextcloud running and connect an MCP host or the "
                                   "MCP Inspector to it"),
    ("mcp-nextcloud login https://cloud.example.com", "then `index sync` and `serve`: the same, on your files"),
    ("mcp-nextcloud inspect FILE --outline", "what the reader makes of a local file"),
    ("mcp-nextcloud manifest", "every command and its arguments, for scripts and agents"),
)


def run(*, query: str = "install", out: TextIO | None = None, as_json: bool = False, serve: bool = False) -> int:
    """Run the demo, printing to `out` (stdout); returns an exit code.

    With `serve`, keep the emulator running instead and print the configuration
    that points `mcp-nextcloud serve` (in an MCP host or the MCP Inspector) at it.
    """
    import anyio

    out = out or stdout()
    from mcp_nextcloud.fixtures.emulator.server import Emulator   # installed with the package (mcp_nextcloud/fixtures)
    from mcp_nextcloud.indexer.remote.sync import sync
    from mcp_nextcloud.indexer.index import Index
    from mcp_nextcloud.nextcloud.client import NextcloudClient
    from mcp_nextcloud.nextcloud.config import Account

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext, Settings

    with tempfile.TemporaryDirectory(prefix="mcp-nextcloud-demo-") as tmp, Emulator() as emu:
        _add_scan(emu)
        creds = emu.account("alice")
        account = Account(url=creds["url"], user=creds["user"], app_password=creds["app_password"])
        index_path = Path(tmp) / "index.db"
        index = Index.open(index_path)
        client = NextcloudClient(account)
        t0 = time.perf_counter()
        report = sync(client, index)
        synced = (f"emulated Nextcloud with the sample documents; synced {report.indexed} files into a temporary "
                  f"index in {time.perf_counter() - t0:.1f} s")
        if not serve:   # serve builds it in the background after its first sync, as on real files
            from mcp_nextcloud.indexer.jobs.embed import Builder

            t1 = time.perf_counter()
            built = Builder(index).build()
            synced += (f"; embedded {built.windows} passages for meaning search in "
                       f"{time.perf_counter() - t1:.1f} s")
        if serve:
            index.close()
            client.close()
            return _serve(creds, index_path, Path(tmp), synced, out, as_json)
        if not as_json:
            print(f"# {synced}", file=out)
        ctx = ServerContext(account=account, index=index, settings=Settings(), client_factory=lambda: client)
        server = build_server(ctx)
        report_out: dict[str, Any] = {"synced": report.indexed, "calls": []}
        try:
            anyio.run(_drive, server, query, None if as_json else out, report_out)
        finally:
            ctx.close()
    if as_json:
        report_out["next"] = [{"command": c, "why": w} for c, w in NEXT_STEPS]
        print(json.dumps(report_out, separators=(",", ":"), ensure_ascii=False), file=out)
    else:
        print("\n# What to try next", file=out)
        for command, why in NEXT_STEPS:
            print(f"  {command:<48} {why}", file=out)
    return 0


def serve_setup(creds: dict[str, str], index_path: Path, folder: Path) -> dict[str, Any]:
    """What points `mcp-nextcloud serve` at the running emulator: the environment, a host entry, an Inspector line."""
    import shutil

    env = {"NEXTCLOUD_URL": creds["url"], "NEXTCLOUD_USER": creds["user"],
           "NEXTCLOUD_APP_PASSWORD": creds["app_password"], "MCP_NEXTCLOUD_INDEX": str(index_path),
           "MCP_NEXTCLOUD_TELEMETRY": str(folder / "calls.sqlite")}
    exe = shutil.which("mcp-nextcloud")
    command, args = (exe, ["serve"]) if exe else (sys.executable, ["-m", "mcp_nextcloud", "serve"])
    # The Inspector starts the server without this shell's environment: each variable goes in with -e.
    inspector = ["npx", "@modelcontextprotocol/inspector"]
    for key, value in env.items():
        inspector += ["-e", f"{key}={value}"]
    return {"env": env, "host": {"mcpServers": {"nextcloud-demo": {"command": command, "args": args, "env": env}}},
            "inspector": inspector + [command, *args]}


def _serve(creds: dict[str, str], index_path: Path, folder: Path, synced: str, out: TextIO, as_json: bool) -> int:
    """Print the configuration and keep the emulator up until Ctrl-C or SIGTERM."""
    import shlex
    import signal
    import threading

    setup = serve_setup(creds, index_path, folder)
    if as_json:
        print(json.dumps(setup, separators=(",", ":")), file=out, flush=True)
    else:
        print(f"# {synced}\n# It runs until Ctrl-C. The password below is the emulator's own throwaway "
              "account, not one of yours.\n", file=out)
        print("Paste into your MCP host's configuration (e.g. claude_desktop_config.json):", file=out)
        print(json.dumps(setup["host"], separators=(",", ":")), file=out)
        print("\nOr open it in the MCP Inspector (it does not pass this shell's environment on: each variable is "
              "given with -e):", file=out)
        print("  " + " ".join(shlex.quote(a) for a in setup["inspector"]), file=out)
        print("\nOr in another terminal, the same environment and any command, e.g.:", file=out)
        print("  " + " ".join(f"{k}={shlex.quote(v)}" for k, v in setup["env"].items())
              + " mcp-nextcloud files grep install", file=out, flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    return 0


def _add_scan(emu: Any) -> None:
    """A scanned PDF for the demo only (the emulator's seed stays as tests count it): 3 image-only pages."""
    from mcp_nextcloud.fixtures.emulator.scans import scanned_pdf

    emu.state.makedirs("alice", "/Scans")
    emu.state.put_file("alice", SCAN, scanned_pdf(), time.time())


async def _drive(server: Any, query: str, out: TextIO | None, report: dict[str, Any]) -> None:
    """The calls an agent would make; printed to `out`, or collected in `report` (--json)."""
    from mcp import Client

    async with Client(server, mode="legacy") as c:
        tools = (await c.list_tools()).tools
        size = sum(len(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True),
                                  separators=(",", ":"))) for t in tools)
        report["tools"] = {"count": len(tools), "bytes": size, "names": [t.name for t in tools]}
        if out is not None:
            print(f"\n## tools/list: {len(tools)} tools, {size} bytes", file=out)
            for t in tools:
                print(f"  {t.name}: {t.description}", file=out)
        calls: list[tuple[str, dict[str, Any]]] = [
                 ("nextcloud_whoami", {}), ("files_grep", {"query": query, "limit": 3}),
                 # PDF text glues words: the index and find are whitespace-insensitive both ways.
                 ("files_grep", {"query": "new app", "limit": 1}),
                 # A scanned PDF (image-only pages) is found by the words printed on it: OCR text, with confidence.
                 ("files_grep", {"query": "cormorant ledger", "path": "/Scans", "limit": 1}),
                 ("files_read", {"path": MANUAL, "find": query, "limit": 2}),
                 ("files_read", {"path": "/Documents/budget.xlsx", "format": "outline"}),
                 # A question runs words and meaning (mode=hybrid); a meaning hit opens at its passage.
                 ("files_grep", {"query": QUESTION, "limit": 2})]
        for name, args in calls:
            report["calls"].append(await _show(c, out, name, args))
        hits = (report["calls"][-1]["answer"] or {}).get("hits") or [{}]
        if hits[0].get("passages"):
            at = {"path": hits[0]["path"], "offset": hits[0]["passages"][0]["passageOffset"], "limit": 120}
            report["calls"].append(await _show(c, out, "files_read", at))
        # Errors are instructions: cause, next action, whether to retry.
        report["calls"].append(await _show(c, out, "files_read", {"path": "/Documents/manual-v2.pdf"}))


async def _show(client: Any, out: TextIO | None, name: str, args: dict[str, Any]) -> dict[str, Any]:
    t0 = time.perf_counter()
    result = await client.call_tool(name, args)
    ms = (time.perf_counter() - t0) * 1000
    text = result.content[0].text if result.content else ""
    state = "error" if result.is_error else "ok"
    if out is not None:
        print(f"\n## {name} {json.dumps(args, separators=(',', ':'))} -> {state}, {len(text.encode())} bytes, "
              f"{ms:.0f} ms", file=out)
        print(text, file=out)
    answer: Any = result.structured_content if not result.is_error else {"error": text}
    return {"tool": name, "arguments": args, "ok": not result.is_error, "bytes": len(text.encode()),
            "ms": round(ms, 1), "answer": answer}
