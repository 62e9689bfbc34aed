"""The meta rows that describe the synced account: their keys, so the store can read them at once and drop them
together. What they mean, and who writes them, is indexer.remote.marks's."""
from __future__ import annotations

# The human-facing finish time of any sync (and its report), and the marks only a complete sync of the whole
# account may move (a partial or subtree sync does not vouch for what it did not see).
LAST_SYNC_AT = "last_sync_at"
LAST_SYNC_REPORT = "last_sync"
CHANGES_SINCE = "changes_since"
LAST_FULL_SYNC_AT = "last_full_sync_at"
# Why the last sync stopped before finishing ("" once a sync finishes).
LAST_SYNC_FAILURE = "last_sync_failure"
ACCOUNT = "account"   # "user on https://server": whose files the remote part of the index holds
# Every key that describes the synced account (read as one snapshot; dropped together when its files are removed).
ACCOUNT_KEYS = (LAST_SYNC_AT, LAST_SYNC_REPORT, CHANGES_SINCE, LAST_FULL_SYNC_AT, LAST_SYNC_FAILURE, ACCOUNT)
