"""The tool surface: the MCP server (`app`), the tools (`server.tools`, one module per domain), the
`mcp-nextcloud` command line (`cli`, one module per command group), the result envelope, the
approval policy, the error model and call telemetry.
"""
