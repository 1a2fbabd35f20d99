"""What each contract suite runs on: its in-memory fake, or its MongoDB adapter on a database of its own per
test (SecantusDB, and a real MongoDB when one is available), dropped after."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import pytest
from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

T = TypeVar("T")
Database = AsyncDatabase[dict[str, Any]]

# A contract fixture's params: one body runs on the fake and on each real server.
BACKENDS = ["inmemory", "secantusdb", "mongodb"]


@contextlib.asynccontextmanager
async def fresh_database(
    request: pytest.FixtureRequest, server: str, *, tz_aware: bool = False
) -> AsyncIterator[Database]:
    """A new database on ``server``: "secantusdb" (the session's, ``mongo_url``) or "mongodb" (a real one,
    ``real_mongodb_url``, skipping when there is none). The fixtures are asked for lazily, so a suite's
    in-memory case needs neither."""
    url = request.getfixturevalue("mongo_url" if server == "secantusdb" else "real_mongodb_url")
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url, tz_aware=tz_aware)
    db = client[f"t_{uuid.uuid4().hex[:12]}"]
    try:
        yield db
    finally:
        await client.drop_database(db.name)
        await client.close()


@contextlib.asynccontextmanager
async def backend(
    request: pytest.FixtureRequest,
    in_memory: Callable[[], T],
    on_database: Callable[[Database], Awaitable[T]],
    *,
    tz_aware: bool = False,
) -> AsyncIterator[T]:
    """The subject of a contract test for ``request.param`` (one of BACKENDS): what ``in_memory`` makes, or what
    ``on_database`` builds on a fresh database of that server."""
    if request.param == "inmemory":
        yield in_memory()
        return
    async with fresh_database(request, request.param, tz_aware=tz_aware) as db:
        yield await on_database(db)
