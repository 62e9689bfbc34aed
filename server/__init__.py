"""The tool surface: the MCP server (`app`), its file tools and whoami, the result envelope, the approval
policy, call telemetry, and the `mcp-nextcloud` command line (`cli` and one `cli_*` module per command group).
"""
