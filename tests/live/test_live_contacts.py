"""contacts_search on a real Nextcloud after a share (issue 22 item 8a): one Élodie, not two.

Sharing a file with an account makes the server's contactsinteraction app add a card
to the sharer's "Recently contacted" book (FN and CLOUD only). That card is the
account, and contacts_search must not offer it as a second person.
"""
from __future__ import annotations

import json
import uuid

import anyio

RECENT = "z-app-generated--contactsinteraction--recent"
CLOUD_QUERY = ('<card:addressbook-query xmlns:d="DAV:" xmlns:card="urn:ietf:params:xml:ns:carddav"><d:prop>'
               '<card:address-data><card:prop name="FN"/><card:prop name="CLOUD"/></card:address-data>'
               "</d:prop></card:addressbook-query>")


def _search(account, query: str) -> dict:
    from mcp import Client

    from mcp_nextcloud.server.app import build_server
    from mcp_nextcloud.server.context import ServerContext

    ctx = ServerContext(account=account, index=None)
    server = build_server(ctx)

    async def go():
        async with Client(server, mode="legacy") as c:
            return await c.call_tool("contacts_search", {"query": query})
    try:
        result = anyio.run(go)
    finally:
        ctx.close()
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_live_a_share_does_not_make_a_second_person(live_account, live_member, live_http, scratch_folder):
    path = f"{scratch_folder}/share-{uuid.uuid4().hex[:8]}.txt"
    dav = f"/remote.php/dav/files/{live_account.user}"
    assert live_http.put(dav + path, content=b"shared").status_code in (201, 204)
    made = live_http.post("/ocs/v2.php/apps/files_sharing/api/v1/shares",
                          data={"path": path, "shareType": 0, "shareWith": live_member.user, "permissions": 1})
    assert made.status_code == 200, made.text[:300]
    share_id = made.json()["ocs"]["data"]["id"]
    try:
        # The precondition, read with a plain client: the recently-contacted card of the colleague exists.
        book = live_http.request("REPORT", f"/remote.php/dav/addressbooks/users/{live_account.user}/{RECENT}/",
                                 headers={"Depth": "1", "Content-Type": "application/xml"}, content=CLOUD_QUERY)
        assert book.status_code == 207 and f"CLOUD:{live_member.user}@" in book.text
        found = _search(live_account, live_member.user)
        mine = [p for p in found["people"] if p.get("accountId") == live_member.user
                or live_member.user in " ".join(p.get("emails", []))]
        assert len(found["people"]) == 1 and len(mine) == 1, found
        assert "hint" not in found or "Several people" not in found["hint"]
    finally:
        live_http.delete(f"/ocs/v2.php/apps/files_sharing/api/v1/shares/{share_id}")
    assert live_http.get(f"/ocs/v2.php/apps/files_sharing/api/v1/shares/{share_id}").status_code == 404
