"""The Deck tools: boards, stacks and cards."""
