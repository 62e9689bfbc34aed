"""The error table: every row names cause, next action and retry advice; no secret or URL leaks."""
from __future__ import annotations

import pytest

from mcp_nextcloud.nextcloud.errors import Category, ErrorCode, NextcloudError, error_for, no_credentials


@pytest.mark.parametrize("status,kind,needles", [
    (400, "bad_request", ["do not repeat this call unchanged"]),
    (401, "auth", ["mcp-nextcloud login", "do not retry"]),
    (403, "forbidden", ["not allowed", "do not retry"]),
    (404, "not_found", ["confirm the path with files_search", "do not guess variants", "repeat this call unchanged"]),
    (409, "conflict", ["do not repeat this call unchanged"]),
    (412, "precondition", ["changed since you read it", "re-read it with files_read", "new etag"]),
    (416, "bad_request", ["beyond the end"]),
    (423, "locked", ["locked", "editor"]),
    (429, "rate_limited", ["retry once"]),
    (500, "server", ["retry once; if it fails again, stop and report"]),
    (502, "server", ["retry once"]),
    (503, "server", ["retry once"]),
    (507, "quota", ["out of storage", "nothing was written", "do not retry"]),
])
def test_status_rows(status, kind, needles):
    err = error_for("webdav", status, path="/Docs/a.txt")
    assert isinstance(err, NextcloudError) and err.code is ErrorCode.parse(kind) and err.status == status
    text = str(err).lower()
    for needle in needles:
        assert needle in text
    assert "/docs/a.txt" in text or status in (401, 429)
    assert isinstance(err.category, Category)


@pytest.mark.parametrize("condition,kind,needles,retry", [
    ("no_credentials", "no_credentials",
     ["mcp-nextcloud login url", "nextcloud_url", "nextcloud_user", "nextcloud_app_password"], False),
    ("missing_parent", "missing_parent", ["parent folder does not exist", "does not create intermediates"], False),
    ("app_missing", "app_missing", ["not installed", "do not retry"], False),
    ("timeout", "timeout", ["did not answer in time", "retry once"], True),
    ("network", "network", ["could not reach", "retry once"], True),
    ("unknown_outcome", "unknown_outcome", ["may or may not have happened", "re-read", "stat"], False),
    ("too_large", "too_large", ["not downloaded", "do not retry"], False),
    ("bad_path", "bad_path", ["..", "do not repeat this call unchanged"], False),
    ("invalid_response", "invalid_response", ["could not be understood", "do not retry"], False),
    ("unsafe_xml", "invalid_response", ["entities"], False),
])
def test_condition_rows(condition, kind, needles, retry):
    err = error_for("deck", None, condition=condition, path="/x")
    assert err.code is ErrorCode.parse(kind) and err.retry is retry
    for needle in needles:
        assert needle in str(err).lower()


def test_missing_parent_same_for_404_and_409():
    a = error_for("webdav", 404, condition="missing_parent", path="/A/b.txt")
    b = error_for("webdav", 409, condition="missing_parent", path="/A/b.txt")
    assert a.code is b.code is ErrorCode.MISSING_PARENT
    assert str(a).replace("", "") == str(b)


def test_app_missing_names_the_app():
    assert "Talk app" in str(error_for("talk", 404, condition="app_missing"))
    assert "Mail app" in str(error_for("mail", 404, condition="app_missing"))
    assert "Deck app" in str(error_for("deck", 404, condition="app_missing"))


def test_deck_403_means_missing_or_unshared():
    err = error_for("deck", 403, path="card 99")
    assert err.code is ErrorCode.FORBIDDEN and "does not exist or is not shared" in str(err)


def test_categories_and_retry_flags():
    assert error_for("webdav", 412).category is Category.REFUSED
    assert error_for("webdav", 404).category is Category.MISUSE
    assert error_for("webdav", 503).category is Category.FAULT and error_for("webdav", 503).retry
    assert not error_for("webdav", 507).retry
    assert {code.value for code in ErrorCode} >= {
        "no_credentials", "auth", "forbidden", "not_found", "missing_parent", "conflict",
        "precondition", "locked", "quota", "app_missing", "server", "timeout", "network",
                          "unknown_outcome", "rate_limited", "bad_request", "invalid_response"}


def test_detail_is_cleaned_of_urls_and_secrets():
    err = error_for("webdav", 500, path="/a", detail="boom at http://cloud.example.com/remote.php/dav/files/alice/a "
                    "password=hunter2 Authorization: Basic YWxpY2U6aHVudGVyMg== " + "x" * 500)
    text = str(err)
    assert "cloud.example.com" not in text and "remote.php" not in text
    assert "hunter2" not in text and "YWxpY2U6aHVudGVyMg" not in text
    assert len(text) < 600


def test_no_credentials_helper_and_dict():
    err = no_credentials()
    d = err.fields()
    assert set(d) == {"code", "cause", "action", "retry"}
    assert d["code"] == "no_credentials" and d["retry"] is False and "NEXTCLOUD_URL" in d["action"]
    assert "Run `mcp-nextcloud login URL`" in d["action"] and "retry" not in d["action"].lower()
    assert "Traceback" not in repr(err)


def test_server_words_are_added_only_where_the_row_cannot_say_it():
    noisy = "No public access to this resource., AppAPIAuth has not passed, Username or password was incorrect"
    auth = error_for("webdav", 401, detail=noisy)
    assert "AppAPIAuth" not in str(auth) and "login" in str(auth) and auth.detail
    quota = error_for("webdav", 507, path="/big.bin", detail="Insufficient space in /files/x/big.bin")
    assert "Insufficient space" not in str(quota) and "do not retry" in str(quota).lower()
    # Where the server's words are the real cause, they stay.
    share = error_for("ocs", 404, detail="Please specify a valid account to share with")
    assert "valid account" in str(share)
    deck = error_for("deck", 400, detail="The user is already assigned to the card")
    assert "already assigned" in str(deck)
