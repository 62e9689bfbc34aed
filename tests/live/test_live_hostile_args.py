"""Hostile arguments against a real Nextcloud (issue 23 items 2 and 8): refused before anything is written.

Each effect is read back with a plain HTTP client: no event with the run's marker in any calendar, and
both files unchanged byte for byte.
"""
from __future__ import annotations

import json
import re
import uuid

import anyio

CAL_HOME = "/remote.php/dav/calendars/{user}/"
PROPFIND = ('<d:propfind xmlns:d="DAV:"><d:prop><d:resourcetype/></d:prop></d:propfind>')
QUERY = ('<c:calendar-query xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav"><d:prop><d:getetag/></d:prop>'
         '<c:filter><c:comp-filter name="VCALENDAR"><c:comp-filter name="VEVENT"><c:prop-filter name="SUMMARY">'
         '<c:text-match collation="i;unicode-casemap" match-type="contains">{marker}</c:text-match>'
         "</c:prop-filter></c:comp-filter></c:comp-filter></c:filter></c:calendar-query>")


def _call(account, tool, args, index=None):
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    ctx = ServerContext(account=account, index=index)

    async def go():
        async with Client(build_server(ctx), mode="legacy") as c:
            return await c.call_tool(tool, args)
    try:
        return anyio.run(go)
    finally:
        ctx.close()


def _events_with(live_http, user: str, marker: str) -> int:
    home = CAL_HOME.format(user=user)
    listing = live_http.request("PROPFIND", home, headers={"Depth": "1", "Content-Type": "application/xml"},
                                content=PROPFIND)
    assert listing.status_code == 207
    calendars = [h for h in re.findall(r"<d:href>([^<]+)</d:href>", listing.text) if h.rstrip("/") != home.rstrip("/")]
    found = 0
    for href in calendars:
        resp = live_http.request("REPORT", href, headers={"Depth": "1", "Content-Type": "application/xml"},
                                 content=QUERY.format(marker=marker))
        if resp.status_code == 207:
            found += resp.text.count("<d:response>")
    return found


def test_live_control_characters_are_refused_and_nothing_is_stored(live_account, live_http):
    marker = f"mcp-hostile-{uuid.uuid4().hex[:8]}"
    for title, attendees in ((f"{marker}\x00b", None), (f"{marker}\x1b[31m", None),
                             (f"{marker} ok", ["bob@example.invalid\x00x"]), (f"{marker}\u202e", None)):
        args = {"title": title, "start": "2027-02-01T10:00Z", **({"attendees": attendees} if attendees else {})}
        result = _call(live_account, "calendar_create_event", args)
        text = result.content[0].text
        assert result.is_error and ("title" in text or "attendees" in text) and "U+" in text, text
        assert marker not in text
    assert _events_with(live_http, live_account.user, marker) == 0
    # The read-back sees an event with the marker when one is stored: the same title without the character.
    made = _call(live_account, "calendar_create_event", {"title": f"{marker} clean", "start": "2027-02-01T10:00Z"})
    assert not made.is_error, made.content[0].text
    try:
        assert _events_with(live_http, live_account.user, marker) == 1
    finally:
        uid = json.loads(made.content[0].text)["uid"]
        assert not _call(live_account, "calendar_delete_event", {"uid": uid}).is_error
    assert _events_with(live_http, live_account.user, marker) == 0


def test_live_files_write_refuses_a_path_and_another_files_id(live_account, live_http, scratch_folder, tmp_path):
    from mcp_nextcloud.indexer.index import Index

    dav = f"/remote.php/dav/files/{live_account.user}"
    a, b = f"{scratch_folder}/a.md", f"{scratch_folder}/b.md"
    for path, body in ((a, b"file a"), (b, b"file b")):
        assert live_http.put(dav + path, content=body).status_code in (201, 204)
    props = live_http.request("PROPFIND", dav + b, headers={"Depth": "0", "Content-Type": "application/xml"},
                              content='<d:propfind xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns"><d:prop>'
                                      "<oc:fileid/><d:getetag/></d:prop></d:propfind>")
    file_id = int(re.search(r"<oc:fileid>(\d+)</oc:fileid>", props.text).group(1))
    etag = re.search(r"<d:getetag>([^<]+)</d:getetag>", props.text).group(1).replace("&quot;", '"')
    index = Index.open(tmp_path / "index.db")
    try:
        result = _call(live_account, "files_write", {"path": a, "fileId": file_id, "content": "overwritten",
                                                     "etag": etag}, index=index)
    finally:
        index.close()
    text = result.content[0].text
    assert result.is_error and f"fileId {file_id}" in text and a in text, text
    assert live_http.get(dav + a).content == b"file a" and live_http.get(dav + b).content == b"file b"
    assert json.dumps(text)   # one short line of text, no traceback
