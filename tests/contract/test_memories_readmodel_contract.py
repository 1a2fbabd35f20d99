"""The memories read model (``MemoriesPort``) on its MongoDB adapter (SecantusDB, and a real MongoDB when one is
available) and its in-memory fake: the same folds (remember, newer updates only, forget), tenant scoping, and
the newest-first listing per namespace with its filters."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import memory_stream
from mnemo.shared.readmodels.catalog import MEMORIES, ensure_indexes
from mnemo.shared.readmodels.inmemory import InMemoryMemories
from mnemo.shared.readmodels.memories import Clause, MemoriesReadModel
from mnemo.shared.readmodels.ports import MemoriesPort
from tests.contract.databases import BACKENDS, Database, backend
from tests.envelopes import recorded

T0 = datetime(2026, 5, 1, 12, tzinfo=UTC)


def state(mid: str, n: int, *, ns: str = "player:u1", bot: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"memory_id": mid, "user_id": "u1", "by_user_id": "u1", "owner_namespace": ns, "memory_type": "episodic",
            "title": f"Title {mid}", "content": f"Text of {mid}", "tags": [f"tag{n % 2}"], "bot_id": bot,
            "assets": [{"uri": "https://x/a.png", "media_type": "image/png"}], "metadata": {"n": n},
            "occurred_at": T0 + timedelta(hours=n), **extra}  # fmt: skip


def remembered(mid: str, n: int, tenant: str = "t1", **kw: Any) -> EventEnvelope:
    payload = state(mid, n, **kw) | {"remembered_at": T0}
    return recorded(tenant, memory_stream(tenant, mid), 1, "memory.remembered", payload, T0)


def updated(mid: str, version: int, content: str, tenant: str = "t1") -> EventEnvelope:
    payload = state(mid, 0) | {"content": content, "updated_at": T0, "by_user_id": "gm"}
    return recorded(tenant, memory_stream(tenant, mid), version, "memory.updated", payload, T0)


def forgotten(mid: str, version: int, tenant: str = "t1") -> EventEnvelope:
    payload = {
        "memory_id": mid,
        "user_id": "u1",
        "by_user_id": "u1",
        "owner_namespace": "player:u1",
        "forgotten_at": T0,
    }
    return recorded(tenant, memory_stream(tenant, mid), version, "memory.forgotten", payload, T0)


async def _on_mongo(db: Database) -> MemoriesPort:
    await ensure_indexes(db, [MEMORIES])
    return MemoriesReadModel(db, FieldCipher(os.urandom(32), InMemoryKeyStore()))


@pytest.fixture(params=BACKENDS)
async def port(request: pytest.FixtureRequest) -> AsyncIterator[MemoriesPort]:
    async with backend(request, InMemoryMemories, _on_mongo, tz_aware=True) as memories:
        yield memories


async def test_a_memory_is_remembered_updated_by_newer_versions_only_and_forgotten(port: MemoriesPort) -> None:
    await port.apply([remembered("m1", 1), remembered("m2", 2), updated("m1", 3, "third"), updated("m1", 2, "second")])
    await port.apply([remembered("m1", 1)])  # a redelivery changes nothing
    [m1, m2] = await port.by_ids("t1", ["m1", "m2"])
    assert (m1.content, m1.version, m1.by_user_id, m1.metadata) == ("third", 3, "gm", {"n": 0})
    assert m2.assets == ({"uri": "https://x/a.png", "media_type": "image/png"},)
    await port.apply([forgotten("m2", 2)])
    assert [v.memory_id for v in await port.by_ids("t1", ["m2", "m1", "nope"])] == ["m1"]
    assert await port.by_ids("t2", ["m1"]) == []


async def test_the_newest_memories_per_namespace_with_their_filters(port: MemoriesPort) -> None:
    await port.apply(
        [
            remembered("a", 1),
            remembered("b", 2, bot="bard"),
            remembered("c", 3, ns="campaign:k"),
            remembered("d", 4, ns="campaign:k", bot="elise"),
            remembered("e", 5, tenant="t2"),
        ]
    )
    own = Clause("player:u1")
    campaign_for_bard = Clause("campaign:k", (None, "bard"))
    newest = await port.newest("t1", [own, campaign_for_bard], limit=10)
    assert [v.memory_id for v in newest] == ["c", "b", "a"]
    assert [v.memory_id for v in await port.newest("t1", [own], limit=1)] == ["b"]
    tagged = await port.newest("t1", [own, Clause("campaign:k")], tags=["tag1"], limit=10)
    assert [v.memory_id for v in tagged] == ["c", "a"]
    window = await port.newest("t1", [Clause("campaign:k")], since=T0 + timedelta(hours=4), limit=10)
    assert [v.memory_id for v in window] == ["d"]
    assert await port.newest("t1", [own], types=["semantic"], limit=10) == []
