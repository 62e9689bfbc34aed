"""Hostile arguments: unknown names, oversized strings, lone surrogates, malformed etags (issue 10, items 6, 9, 10).

Every one gets a misuse error that names the argument, in one short line; none reaches SQLite, httpx or
the codec as an internal error, and no rejected value is echoed back.
"""
from __future__ import annotations

import pytest

from mcp_nextcloud.nextcloud.errors import Category

FILE_TOOLS = {
    "files_search": {},
    "files_grep": {"query": "budget"},
    "files_read": {"path": "/Documents/manual.md"},
    "files_write": {"path": "/Documents/x-hostile.md", "content": "x"},
    "files_share_internal": {"path": "/Documents/manual.md", "shareWith": "bob"},
}


@pytest.mark.parametrize("tool", sorted(FILE_TOOLS) + ["nextcloud_whoami"])
def test_unknown_argument_is_refused_naming_the_valid_ones(call, err, tool):
    args = {**FILE_TOOLS.get(tool, {}), "zzz": 1}
    text = err(call(tool, args))
    assert "zzz" in text and "Its arguments are" in text
    assert "internal error" not in text


def test_misspelled_offset_does_not_read_from_zero(call, err):
    text = err(call("files_read", {"path": "/Documents/manual.md", "offest": 500}))
    assert "'offest'" in text and "offset" in text


@pytest.mark.parametrize("tool,arg,size", [
    ("files_search", "name", 50_000),
    ("files_search", "mime", 10_000),
    ("files_search", "modifiedAfter", 100_000),
    ("files_search", "path", 10_000),
    ("files_search", "cursor", 10_000),
    ("files_read", "path", 10_000),
    ("files_write", "etag", 10_000),
    ("files_share_internal", "shareWith", 10_000),
])
def test_every_string_argument_has_a_length_limit(call, err, tool, arg, size):
    args = {**FILE_TOOLS[tool], arg: "a" * size}
    text = err(call(tool, args))
    assert arg in text and ("at most" in text or "over the limit" in text), text
    assert len(text) < 600 and "aaaaaaaaaa" not in text  # the rejected value is not echoed


def test_default_limit_applies_to_undeclared_strings():
    from mcp_nextcloud.server.arguments import DEFAULT_MAX_CHARS, ArgumentRules, check
    from mcp_nextcloud.server.errors import ToolFailure

    rules = ArgumentRules(names=("title", "tags"), declared_max=frozenset())
    check("t", rules, {"title": "x" * DEFAULT_MAX_CHARS, "tags": ["y" * 10]})
    with pytest.raises(ToolFailure) as info:
        check("t", rules, {"title": "x" * (DEFAULT_MAX_CHARS + 1)})
    assert "title" in str(info.value) and info.value.category is Category.MISUSE
    with pytest.raises(ToolFailure):
        check("t", rules, {"tags": ["y" * (DEFAULT_MAX_CHARS + 1)]})


@pytest.mark.parametrize("tool", sorted(FILE_TOOLS))
def test_lone_surrogate_in_path_is_misuse(call, err, tool):
    key = "query" if tool == "files_grep" else "path"
    args = {**FILE_TOOLS[tool], key: "/Documents/\udc80bad.md"}
    text = err(call(tool, args))
    assert key in text and "surrogate" in text and "internal error" not in text and "codec" not in text


def test_lone_surrogate_in_the_client_path_is_bad_path():
    from mcp_nextcloud.nextcloud.errors import ErrorCode, NextcloudError
    from mcp_nextcloud.nextcloud.paths import normalize

    with pytest.raises(NextcloudError) as info:
        normalize("/a/\ud800.md")
    assert info.value.code is ErrorCode.BAD_PATH


@pytest.mark.parametrize("etag", ['"x", *', "*", "W/\"a\", \"b\"", "caf\u00e9", "ab\x07cd", "ab\ncd", '"a"b"'])
def test_malformed_etags_are_misuse_and_never_write(world, call, err, etag):
    path = "/Documents/etag-target.md"
    world.emulator.state.put_file("alice", path, b"keep me")
    text = err(call("files_write", {"path": path, "content": "gone", "etag": etag}))
    # A control character is refused by the argument validator before the etag's own check.
    assert "etag" in text and ("one entity tag" in text or "control character" in text), text
    assert world.emulator.state.find("alice", path).data == b"keep me"


def test_valid_etag_forms_are_accepted():
    from mcp_nextcloud.nextcloud.webdav import entity_tag

    assert entity_tag("abc123") == '"abc123"'
    assert entity_tag('"abc123"') == '"abc123"'
    assert entity_tag('W/"abc"') == 'W/"abc"'
    for bad in ('"x", *', "*", "", "a b", "é", '"a'):
        assert entity_tag(bad) is None, bad
