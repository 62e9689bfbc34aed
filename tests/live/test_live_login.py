"""Login Flow v2 against a real Nextcloud: a flow starts, and polling it before anyone approves says pending.

Nothing is approved: the flow expires on the server by itself (20 minutes).
A pending poll is no failed login (the poll route has no brute-force
protection), so this is safe on the shared server.
"""
from __future__ import annotations

import pytest


def test_live_login_flow_starts_and_a_poll_before_approval_is_pending(live_account, live_http, server_admin):
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
    from mcp_nextcloud.nextcloud.login import poll_login, start_login

    mark = server_admin.log_mark()
    flow = start_login(live_account.url)
    assert flow.login_url.startswith(live_account.public_url or live_account.url)
    assert "/login/v2/flow/" in flow.login_url
    with pytest.raises(NextcloudError) as pending:
        poll_login(flow, timeout=0, interval=0.05, server_url=live_account.url)
    assert pending.value.code is ErrorCode.LOGIN or "login" in str(pending.value).lower()
    asked = [line for line in server_admin.requests_since(mark, ours=True) if "/login/v2" in line]
    assert [line.split(" ")[0] for line in asked] == ["POST", "POST"]      # one start, one poll: no retry loop
    assert asked[0].split(" ")[1] == "/index.php/login/v2" and asked[1].split(" ")[1].endswith("/login/v2/poll")
    # The server agrees: the same poll from a plain client is still "not found" (pending, nothing leaked).
    plain = live_http.post(flow.endpoint, data={"token": flow.token})
    assert plain.status_code == 404 and "appPassword" not in plain.text
