"""The database each contract suite runs its MongoDB adapter on: one of its own per test, dropped after."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase


@contextlib.asynccontextmanager
async def fresh_database(request: pytest.FixtureRequest, server: str) -> AsyncIterator[AsyncDatabase[dict[str, Any]]]:
    """A new database on ``server``: "secantusdb" (the session's, ``mongo_url``) or "mongodb" (a real one,
    ``real_mongodb_url``, skipping when there is none). The fixtures are asked for lazily, so a suite's
    in-memory case needs neither."""
    url = request.getfixturevalue("mongo_url" if server == "secantusdb" else "real_mongodb_url")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
    db = client[f"t_{uuid.uuid4().hex[:12]}"]
    try:
        yield db
    finally:
        await client.drop_database(db.name)
        await client.close()
