"""The digest of a remote file's bytes, kept in the index's `hash` column for the version (fileId, etag) read.

Nextcloud keeps a file's etag when an overwrite within the same second leaves the size unchanged, so an
etag alone cannot tell two contents apart; the digest of what was downloaded can (server/tools/files/write_guard.py
compares it before files_write replaces a file). blake2b-128, as indexer/local/folder.content_hash.
"""
from __future__ import annotations

import hashlib


def content_digest(data: bytes) -> str:
    """blake2b-128 of `data`, hex."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()
