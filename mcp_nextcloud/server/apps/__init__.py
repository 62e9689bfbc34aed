"""HTML apps (MCP Apps ui:// resources) served by the mail server."""
