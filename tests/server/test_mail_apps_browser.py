"""The two mail apps in a real headless Chromium, inside a small host page that speaks the MCP Apps protocol.

The host page embeds the app's ui:// HTML in a sandboxed iframe, answers
ui/initialize, delivers the tool result as ui/notifications/tool-result, and
forwards the app's tools/call requests to the real mail server (through an
in-process MCP client exposed to the page). Screenshots go to
test-artifacts/ (or $MCP_NEXTCLOUD_ARTIFACTS).
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_nextcloud.server.tools.mail.tools import LIST_APP, PREVIEW_APP

ROOT = Path(__file__).resolve().parents[2]
SEND_PATH = "/ocs/v2.php/apps/mail/message/send"
HOST_PAGE = """<!DOCTYPE html><html><body style="margin:0">
<iframe id="app" sandbox="allow-scripts" style="width:760px;height:560px;border:0"></iframe>
<script>
window.appLog = [];
const frame = document.getElementById("app");
function reply(id, result) { frame.contentWindow.postMessage({jsonrpc: "2.0", id, result}, "*"); }
window.addEventListener("message", async (event) => {
  if (event.source !== frame.contentWindow) return;
  const msg = event.data || {};
  window.appLog.push(msg.method || "response");
  if (msg.method === "ui/initialize") {
    reply(msg.id, {protocolVersion: "2026-01-26", hostInfo: {name: "test-host", version: "1"},
                   hostCapabilities: {serverTools: {}}, hostContext: {theme: "light"}});
  } else if (msg.method === "ui/notifications/initialized") {
    frame.contentWindow.postMessage({jsonrpc: "2.0", method: "ui/notifications/tool-result",
                                     params: window.toolResult}, "*");
  } else if (msg.method === "tools/call") {
    const result = await window.hostCallTool(msg.params.name, msg.params.arguments || {});
    reply(msg.id, JSON.parse(result));
  }
});
window.openApp = (html, result) => { window.toolResult = result; frame.srcdoc = html; };
</script></body></html>"""


def _chromium() -> str:
    path = os.environ.get("MCP_NEXTCLOUD_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("no Chromium here (.ci/run installs Debian's chromium): the apps are not rendered")
    pytest.importorskip("playwright.async_api", reason="playwright is a test dependency ([test] extra)")
    return path


def _artifacts() -> Path:
    out = Path(os.environ.get("MCP_NEXTCLOUD_ARTIFACTS") or ROOT / "test-artifacts")
    out.mkdir(parents=True, exist_ok=True)
    return out


def _wire(result: Any) -> dict[str, Any]:
    """A CallToolResult as the host hands it on: the JSON-RPC wire form, `_meta` included."""
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _render(server: Any, tool: str, args: dict[str, Any], uri: str, browser_path: str,
                  interact: Any) -> Any:
    from mcp import Client
    from playwright.async_api import async_playwright

    async with Client(server, mode="legacy") as client, async_playwright() as pw:
        result = await client.call_tool(tool, args)
        html = (await client.read_resource(uri)).contents[0].text
        browser = await pw.chromium.launch(executable_path=browser_path, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 780, "height": 580})

            async def host_call_tool(name: str, arguments: dict[str, Any]) -> str:
                return json.dumps(_wire(await client.call_tool(name, arguments)))

            await page.expose_function("hostCallTool", host_call_tool)
            await page.set_content(HOST_PAGE)
            await page.evaluate("([html, result]) => window.openApp(html, result)", [html, _wire(result)])
            app = page.frame_locator("#app")
            return await interact(page, app, result)
        finally:
            await browser.close()


@pytest.fixture
def mail_server(ctx: Any) -> Any:
    from mcp_nextcloud.server.mail_app import build_mail_server

    return build_mail_server(ctx)


def test_list_app_renders_a_search_and_opens_a_message(mail_server: Any) -> None:
    browser = _chromium()

    async def interact(page: Any, app: Any, _result: Any) -> dict[str, Any]:
        rows = app.locator("tr.message")
        await rows.first.wait_for(timeout=15_000)
        subjects = await app.locator("td.subject > div:first-child").all_inner_texts()
        title = await app.locator("#title").inner_text()
        await rows.nth(0).click()
        await app.locator("#reader h2").wait_for(timeout=15_000)
        body = await app.locator("#reader").inner_text()
        await page.screenshot(path=str(_artifacts() / "mail-list-app.png"))
        return {"subjects": subjects, "title": title, "body": body, "log": await page.evaluate("window.appLog")}

    seen = anyio.run(_render, mail_server, "mail_search", {"sender": "bob"}, LIST_APP, browser, interact)
    assert seen["subjects"] == ["Weekly standup moved", "Lunch on Friday?", "Welcome to the team"]
    assert seen["title"].startswith("3 messages")
    assert "The standup moves to 9:45 next Monday." in seen["body"]
    assert seen["log"][:2] == ["ui/initialize", "ui/notifications/initialized"] and "tools/call" in seen["log"]


def test_preview_app_sends_through_the_host_bridge(world: Any, mail_server: Any) -> None:
    browser = _chromium()
    subject = 'Agenda <img src=x onerror="window.pwned=1">'
    before = sum(1 for m, p, _ in world.emulator.requests if m == "POST" and p == SEND_PATH)

    async def interact(page: Any, app: Any, _result: Any) -> dict[str, Any]:
        send = app.locator("#send")
        await app.locator("#subject").wait_for(timeout=15_000)
        await page.wait_for_function("window.appLog.includes('ui/notifications/initialized')", timeout=15_000)
        await app.locator("#send:not([disabled])").wait_for(timeout=15_000)
        shown = {key: await app.locator(f"#{key}").inner_text() for key in ("to", "subject", "body")}
        images = await app.locator("img").count()
        await page.screenshot(path=str(_artifacts() / "mail-preview-app.png"))
        await send.click()
        await app.locator("#status", has_text="Sent to").wait_for(timeout=15_000)
        status = await app.locator("#status").inner_text()
        await page.screenshot(path=str(_artifacts() / "mail-preview-app-sent.png"))
        return {**shown, "images": images, "status": status}

    seen = anyio.run(_render, mail_server, "mail_compose",
                     {"to": ["bob@example.invalid"], "subject": subject, "body": "1. Budget\n2. Venue"},
                     PREVIEW_APP, browser, interact)
    assert seen["to"] == "bob@example.invalid" and seen["subject"] == subject and seen["images"] == 0
    assert seen["body"] == "1. Budget\n2. Venue"
    assert seen["status"] == "Sent to bob@example.invalid."
    after = sum(1 for m, p, _ in world.emulator.requests if m == "POST" and p == SEND_PATH)
    assert after == before + 1
