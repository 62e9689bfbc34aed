"""mcp-nextcloud: search, read and act on your own Nextcloud.

The project installs one top-level name, this package; its parts are subpackages
(`mcp_nextcloud.reader`, `.indexer`, `.nextcloud`, `.server`, and `.fixtures` for the
emulator the demo serves), imported by their full names everywhere, so nothing of
ours can shadow another distribution's `reader` or `server` in a process.
"""


def main() -> int:
    """The `mcp-nextcloud` console script."""
    from mcp_nextcloud.cli import process_main

    return process_main()
