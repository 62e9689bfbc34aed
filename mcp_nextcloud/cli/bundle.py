"""Build the MCP Bundle (`.mcpb`, manifest 0.4, server type `uv`) and the MCP registry's `server.json`.

    python3 -m mcp_nextcloud.cli.bundle --out dist        # from a checkout: dist/mcp-nextcloud-VERSION.mcpb
    python3 -m mcp_nextcloud.cli.bundle --server-json     # rewrite ./server.json (a test checks it is current)

The bundle holds the project's source as the wheel ships it (pyproject.toml's packages and package data, the
command script, README) and a manifest whose server is run by uv: the host (Claude Desktop) provides uv and
Python and installs the dependencies from pyproject.toml. No account is asked for at install: the server
answers without one and offers the Nextcloud login in the chat (server/account_gate.py); the three optional
fields give an app password instead. The facts (name, version, description, tools) come from pyproject.toml
and cli/tools.json, so the bundle cannot drift from the package.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]      # the checkout (pyproject.toml's folder)
REGISTRY_NAME = "io.github.mcp-nextcloud/mcp-nextcloud"   # the registry's reverse-DNS name (its namespace is
#                                                           the publishing account's; see README's mcp-name line)
REGISTRY_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json"
_ACCOUNT = (("nextcloud_url", "NEXTCLOUD_URL", "Nextcloud address",
             "Your Nextcloud's address (e.g. https://cloud.example.com). Leave empty to log in from the chat."),
            ("nextcloud_user", "NEXTCLOUD_USER", "Login name", "Your Nextcloud login name (with an app password)."),
            ("nextcloud_app_password", "NEXTCLOUD_APP_PASSWORD", "App password",
             "An app password (Nextcloud: Settings > Security > Devices & sessions). Leave empty to log in "
             "from the chat instead."))


def project() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def manifest(meta: dict[str, Any]) -> dict[str, Any]:
    """manifest.json (MCPB 0.4) for this version."""
    tools = json.loads((ROOT / "mcp_nextcloud" / "cli" / "tools.json").read_text(encoding="utf-8"))
    return {
        "manifest_version": "0.4",
        "name": meta["name"],
        "display_name": "Nextcloud",
        "version": meta["version"],
        "description": meta["description"],
        "author": {"name": "mcp-nextcloud contributors"},
        "license": meta["license"],
        "keywords": ["nextcloud", "files", "search", "calendar", "webdav"],
        "server": {
            "type": "uv",
            "entry_point": "scripts/mcp-nextcloud",
            "mcp_config": {
                "command": "uv",
                "args": ["run", "--directory", "${__dirname}", "mcp-nextcloud", "serve"],
                "env": {env: f"${{user_config.{key}}}" for key, env, _title, _text in _ACCOUNT},
            },
        },
        "tools": [{"name": name, "description": _first_sentence(spec.get("description", ""))}
                  for name, spec in sorted(tools.items())],
        "user_config": {key: {"type": "string", "title": title, "description": text, "required": False,
                              **({"sensitive": True} if env == "NEXTCLOUD_APP_PASSWORD" else {})}
                        for key, env, title, text in _ACCOUNT},
        "compatibility": {"platforms": ["darwin", "linux", "win32"],
                          "runtimes": {"python": meta["requires-python"]}},
    }


def _first_sentence(text: str) -> str:
    head = text.split(". ")[0].strip()
    return head if head.endswith(".") else head + "."


def server_json(meta: dict[str, Any]) -> dict[str, Any]:
    """server.json for the MCP registry: the PyPI package, run with uvx, stdio."""
    env = [{"name": env, "description": text, "isRequired": False,
            **({"isSecret": True} if env == "NEXTCLOUD_APP_PASSWORD" else {})} for _key, env, _title, text in _ACCOUNT]
    return {
        "$schema": REGISTRY_SCHEMA,
        "name": REGISTRY_NAME,
        "description": "Search, read and act on your own Nextcloud: files, calendar, contacts, Deck, Talk, mail.",
        "version": meta["version"],
        "packages": [{"registryType": "pypi", "registryBaseUrl": "https://pypi.org", "identifier": meta["name"],
                      "version": meta["version"], "runtimeHint": "uvx", "transport": {"type": "stdio"},
                      "packageArguments": [{"type": "positional", "value": "serve"}],
                      "environmentVariables": env}],
    }


def bundle_files(setup: dict[str, Any]) -> list[Path]:
    """What the wheel ships (packages, package data, the script), with what a build of the project needs."""
    data, excluded = setup.get("package-data", {}), setup.get("exclude-package-data", {})
    out = [ROOT / "pyproject.toml", ROOT / "README.md", *(ROOT / s for s in setup.get("script-files", []))]
    for package in setup["packages"]:
        folder = ROOT.joinpath(*package.split("."))
        for path in sorted(folder.iterdir()):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            shipped = path.suffix == ".py" or any(fnmatch.fnmatch(path.name, p) for p in data.get(package, []))
            if shipped and not any(fnmatch.fnmatch(path.name, p) for p in excluded.get(package, [])):
                out.append(path)
    return out


def build(out_dir: Path) -> Path:
    """Write OUT/NAME-VERSION.mcpb; its path."""
    meta = project()
    setup = meta["tool"]["setuptools"]
    info = meta["project"]
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{info['name']}-{info['version']}.mcpb"
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("manifest.json", json.dumps(manifest(info), indent=2) + "\n")
        for path in bundle_files(setup):
            zf.write(path, path.relative_to(ROOT).as_posix())
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m mcp_nextcloud.cli.bundle", description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the .mcpb (default: dist/)")
    parser.add_argument("--server-json", action="store_true", help="write ./server.json instead of the bundle")
    args = parser.parse_args(argv)
    if not (ROOT / "pyproject.toml").is_file():
        print("the bundle is built from a checkout of mcp-nextcloud (no pyproject.toml beside the package)",
              file=sys.stderr)
        return 2
    if args.server_json:
        path = ROOT / "server.json"
        path.write_text(json.dumps(server_json(project()["project"]), indent=2) + "\n", encoding="utf-8")
    else:
        path = build(args.out)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
