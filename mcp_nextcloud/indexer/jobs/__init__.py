"""Durable jobs (store, runner, detached worker), the extraction process pool, and one-shot forked extraction."""
