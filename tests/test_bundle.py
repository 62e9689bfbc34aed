"""The MCP Bundle and the registry's server.json: built by their command, checked by the bundle format's own CLI
(`@anthropic-ai/mcpb`, from npm: .ci/run installs it and exports MCPB) and against the registry's documented
schema; and the bundle, unpacked, runs under uv as its manifest says and answers a real MCP client.

No package on PyPI or npm ships the registry's server.schema.json (the official `mcp-publisher` is a Go
binary released outside them), so SERVER_SCHEMA below writes down the documented shape of its 2025-09-29
version: the fields, patterns and limits its reference names.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import anyio
import jsonschema
import pytest

from mcp_nextcloud.cli import bundle

ROOT = Path(__file__).resolve().parents[1]

_INPUT = {"type": "object", "required": ["name"], "properties": {
    "name": {"type": "string"}, "description": {"type": "string"}, "isRequired": {"type": "boolean"},
    "isSecret": {"type": "boolean"}, "default": {"type": "string"}, "value": {"type": "string"},
    "format": {"enum": ["string", "number", "boolean", "filepath"]}}}
_ARGUMENT = {"type": "object", "required": ["type"], "properties": {
    "type": {"enum": ["positional", "named"]}, "value": {"type": "string"}, "valueHint": {"type": "string"},
    "name": {"type": "string"}}}
SERVER_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["name", "description", "version"],
    "properties": {
        "$schema": {"type": "string", "format": "uri"},
        "name": {"type": "string", "pattern": "^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$", "minLength": 3, "maxLength": 200},
        "description": {"type": "string", "minLength": 1, "maxLength": 100},
        "version": {"type": "string", "maxLength": 255, "not": {"pattern": r"^[\^~><=]|[x*]$"}},
        "websiteUrl": {"type": "string", "format": "uri"},
        "packages": {"type": "array", "items": {
            "type": "object", "additionalProperties": False,
            "required": ["registryType", "identifier", "version", "transport"],
            "properties": {
                "registryType": {"type": "string"}, "registryBaseUrl": {"type": "string", "format": "uri"},
                "identifier": {"type": "string"}, "version": {"type": "string", "minLength": 1,
                                                              "not": {"const": "latest"}},
                "fileSha256": {"type": "string", "pattern": "^[a-f0-9]{64}$"}, "runtimeHint": {"type": "string"},
                "transport": {"type": "object", "required": ["type"],
                              "properties": {"type": {"enum": ["stdio", "streamable-http", "sse"]}}},
                "runtimeArguments": {"type": "array", "items": _ARGUMENT},
                "packageArguments": {"type": "array", "items": _ARGUMENT},
                "environmentVariables": {"type": "array", "items": _INPUT}}}},
    },
}


def _mcpb() -> str:
    path = os.environ.get("MCPB") or shutil.which("mcpb")
    if path and Path(path).exists():
        return path
    if os.environ.get("CI"):
        pytest.fail("the mcpb CLI is not installed (MCPB unset): .ci/run must install @anthropic-ai/mcpb")
    pytest.skip("mcpb CLI not installed; set MCPB to its bin to run this test")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    return bundle.build(tmp_path_factory.mktemp("mcpb"))


def test_the_bundle_validates_with_the_mcpb_cli(built, tmp_path):
    mcpb = _mcpb()
    unpacked = tmp_path / "unpacked"
    done = subprocess.run([mcpb, "unpack", str(built), str(unpacked)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    valid = subprocess.run([mcpb, "validate", str(unpacked / "manifest.json")], capture_output=True, text=True,
                           timeout=120)
    assert valid.returncode == 0 and "passes" in valid.stdout, valid.stdout + valid.stderr
    info = subprocess.run([mcpb, "info", str(built)], capture_output=True, text=True, timeout=120)
    assert info.returncode == 0 and built.name in info.stdout
    manifest = json.loads((unpacked / "manifest.json").read_text())
    assert manifest["manifest_version"] == "0.4" and manifest["server"]["type"] == "uv"
    tools = json.loads((ROOT / "mcp_nextcloud" / "cli" / "tools.json").read_text())
    assert {t["name"] for t in manifest["tools"]} == set(tools)
    # the check can fail: the same manifest with a server type the format does not have is refused
    broken = {**manifest, "server": {**manifest["server"], "type": "conda"}}
    (tmp_path / "broken.json").write_text(json.dumps(broken))
    refused = subprocess.run([mcpb, "validate", str(tmp_path / "broken.json")], capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode != 0


def test_the_bundle_holds_what_the_wheel_ships_and_no_secret(built):
    with zipfile.ZipFile(built) as zf:
        names = set(zf.namelist())
        manifest = json.loads(zf.read("manifest.json"))
    assert {"pyproject.toml", "README.md", "scripts/mcp-nextcloud", "mcp_nextcloud/cli/tools.json",
            "mcp_nextcloud/server/account_gate.py", "mcp_nextcloud/fixtures/emulator/server.py"} <= names
    assert not any(n.startswith(("tests/", "mcp_nextcloud/fixtures/bad/")) or "__pycache__" in n for n in names)
    assert manifest["user_config"]["nextcloud_app_password"]["sensitive"] is True
    assert all(not c.get("required") for c in manifest["user_config"].values())   # login from the chat instead


def test_the_unpacked_bundle_runs_under_uv_as_its_manifest_says(built, tmp_path):
    """What Claude Desktop does with a `uv` bundle: `uv run --directory BUNDLE ...`, here with no account."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    folder = tmp_path / "bundle"
    with zipfile.ZipFile(built) as zf:
        zf.extractall(folder)
    (folder / "scripts" / "mcp-nextcloud").chmod(0o755)
    config = json.loads((folder / "manifest.json").read_text())["server"]["mcp_config"]
    args = [a.replace("${__dirname}", str(folder)) for a in config["args"]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NEXTCLOUD_", "MCP_NEXTCLOUD_", "PYTHON"))}
    env.update({"HOME": str(tmp_path), "UV_PYTHON": sys.executable, "UV_PYTHON_DOWNLOADS": "never",
                "MCP_NEXTCLOUD_SERVICE": "0"})
    env.update({k: "" for k in config["env"]})        # the optional fields left empty, as the host passes them
    params = StdioServerParameters(command=sys.executable, args=["-m", "uv", *args], env=env, cwd=str(tmp_path))

    async def go():
        with open(tmp_path / "serve.log", "w") as errlog:
            async with Client(stdio_client(params, errlog=errlog), mode="legacy") as c:
                return c.instructions, [t.name for t in (await c.list_tools()).tools]

    instructions, tools = anyio.run(go)
    assert tools == ["nextcloud_login"], (tmp_path / "serve.log").read_text()[-2000:]
    assert "mcp-nextcloud login" in instructions


def test_server_json_is_current_and_has_the_registrys_shape():
    committed = json.loads((ROOT / "server.json").read_text())
    assert committed == bundle.server_json(bundle.project()["project"]), \
        "server.json is stale: python3 -m mcp_nextcloud.cli.bundle --server-json"
    jsonschema.Draft7Validator(SERVER_SCHEMA, format_checker=jsonschema.FormatChecker()).validate(committed)
    package = committed["packages"][0]
    assert package["identifier"] == "mcp-nextcloud" and package["version"] == committed["version"]
    assert [v["name"] for v in package["environmentVariables"] if v.get("isSecret")] == ["NEXTCLOUD_APP_PASSWORD"]
    readme = (ROOT / "README.md").read_text()
    assert f"mcp-name: {committed['name']}" in readme     # the registry's proof that the PyPI package is ours
    # the schema can refuse: a name without its namespace, a description over 100 characters
    for bad in ({**committed, "name": "mcp-nextcloud"}, {**committed, "description": "x" * 101}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, SERVER_SCHEMA)
