"""The Talk tools: conversations, chat and meetings scheduled with a room."""
