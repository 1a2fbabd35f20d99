"""The event log and key store require journaling on top of the write concern the MongoDB URL names."""

from __future__ import annotations

import pytest
from pymongo import AsyncMongoClient

from mnemo.shared.eventlog.mongo import journaled_concern


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("mongodb://127.0.0.1:1/", {"w": 1, "j": True}),
        ("mongodb://127.0.0.1:1/?w=majority&wtimeoutMS=5000", {"w": "majority", "wtimeout": 5000, "j": True}),
        ("mongodb://127.0.0.1:1/?w=2", {"w": 2, "j": True}),
    ],
)
def test_the_urls_write_concern_is_kept_and_journaling_added(url: str, expected: dict[str, object]) -> None:
    client: AsyncMongoClient[dict[str, object]] = AsyncMongoClient(url, connect=False)
    assert journaled_concern(client["mnemo"]).document == expected
