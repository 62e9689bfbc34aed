"""The index service: one process per user and index that runs every CLI call and every `serve`'s tool work.

client.py is what a caller imports (cheap: os, sys, _socket); daemon.py is the service process; tools.py
runs a serve's MCP tool calls there. The service knows nothing of command lines: the CLI hands it a
handler for them (cli/in_service.py).
"""
