"""The file tools: search, grep, read, write, move, share, history and undo, and the index's view of a path
(coverage, freshness)."""
