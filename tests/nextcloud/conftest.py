"""Fixtures for the client tests: a NextcloudClient for alice on a fresh emulator, and recording readers."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import pytest

from mcp_nextcloud.nextcloud.client import NextcloudClient
from mcp_nextcloud.nextcloud.config import Account


@pytest.fixture
def account(emulator) -> Account:
    return Account(**emulator.account("alice"))


@pytest.fixture
def nc(account: Account) -> Iterator[NextcloudClient]:
    # Tiny backoff so retry tests stay fast; the retry count is the default.
    with NextcloudClient(account, backoff=0.01, timeout=5.0, total_timeout=20.0) as client:
        yield client


@pytest.fixture
def recorded(recordings: Path):
    """recorded(area, seq) -> the exchange dict from ../shared/nextcloud-34/<area>.jsonl."""
    cache: dict[str, list[dict]] = {}

    def get(area: str, seq: int) -> dict:
        if area not in cache:
            lines = (recordings / f"{area}.jsonl").read_text(encoding="utf-8").splitlines()
            cache[area] = [json.loads(line) for line in lines if line.strip()]
        for exchange in cache[area]:
            if exchange["seq"] == seq:
                return exchange
        raise KeyError((area, seq))

    return get
