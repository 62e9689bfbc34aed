"""The account's own tools: who the agent acts as, and what a first login prepares."""
