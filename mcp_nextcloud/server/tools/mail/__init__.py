"""The Mail tools (the mcp-mail server): mailboxes, messages, filters, compose and send."""
