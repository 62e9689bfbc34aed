"""Durable jobs (store, runner, detached worker) and the extraction process pool."""
