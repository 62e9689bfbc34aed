"""The MCP tools, one module per domain (files, whoami, ...): surface, arguments, annotations."""
