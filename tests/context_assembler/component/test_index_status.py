"""``mnemo.rpc.memory.index_status.v1``: each listed item's tokens and vector points, read from Qdrant Edge (the
real engine, in process). A remembered memory goes the whole write path (memory service, embedding service);
summaries, legacy lore and facts are points written as the embedding service writes them, to show whose points
each source counts: never another tenant's, and for a user's own kinds never another user's."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.context_assembler.index_status import IndexStatuses
from mnemo.shared import subjects
from mnemo.shared.tokens import EstimatedTokens
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorPoint
from mnemo_client.wire.memory_index_contract import MemoryIndexStatusRequest
from tests.components import edge_index
from tests.context_assembler.component.memory_world import T, World, world

__all__ = ["world"]  # the fixture
TEXT = "Ana hid the envoy's letter under the chapel's loose stone."


async def test_a_remembered_memory_is_indexed_with_its_tokens_and_unknown_ids_are_missing(world: World) -> None:
    memory = await world.remember("u1", TEXT)
    items = [{"source": "remembered", "id": memory, "text": TEXT}, {"source": "remembered", "id": "nope"}]
    reply = await world.rpc(subjects.MEMORY_INDEX_STATUS, {"tenant_id": T, "user_id": "u1", "items": items})

    found, unknown = reply["items"]
    assert found["status"] == "indexed"
    assert found["vectors"] >= 1
    assert found["tokens"] == EstimatedTokens().count(TEXT)
    assert unknown == {
        "source": "remembered",
        "id": "nope",
        "tokens": None,
        "vectors": 0,
        "status": "missing",
        "pending": False,
    }
    other = await world.rpc(subjects.MEMORY_INDEX_STATUS, {"tenant_id": "t2", "user_id": "u1", "items": items[:1]})
    assert other["items"][0]["status"] == "missing"  # another tenant never counts this tenant's points


async def test_bad_requests_are_refused_with_the_reason(world: World) -> None:
    empty = await world.rpc(subjects.MEMORY_INDEX_STATUS, {"tenant_id": T, "user_id": "u1", "items": []})
    assert empty["error"]["code"] == "bad_request"
    source = {"tenant_id": T, "user_id": "u1", "items": [{"source": "lore_entry", "id": "x"}]}
    assert (await world.rpc(subjects.MEMORY_INDEX_STATUS, source))["error"]["code"] == "bad_request"


def _point(embedder: Any, tenant: str, user: str, kind: str, id_key: str, item: str, chunk: int) -> VectorPoint:
    payload = {vp.TENANT_ID: tenant, vp.USER_ID: user, vp.KIND: kind, id_key: item, vp.CHUNK: chunk}
    return VectorPoint(str(uuid.uuid4()), [0.1] * embedder.dimensions, payload)


async def test_summaries_and_legacy_lore_count_the_users_own_points_facts_the_tenants(
    tmp_path: Path, embedder: Any
) -> None:
    async with edge_index(tmp_path / "edge", embedder) as index:
        await index.upsert(
            [
                _point(embedder, "t1", "u1", vp.SUMMARY, vp.SUMMARY_ID, "s1", 0),
                _point(embedder, "t1", "u1", vp.SUMMARY, vp.SUMMARY_ID, "s1", 1),
                _point(embedder, "t1", "u2", vp.SUMMARY, vp.SUMMARY_ID, "s2", 0),
                _point(embedder, "t2", "u1", vp.LEGACY_MEMORY, vp.LEGACY_ID, "l1", 0),
                _point(embedder, "t1", "u2", vp.FACT, vp.FACT_ID, "f1", 0),
            ]
        )
        statuses = IndexStatuses(index, EstimatedTokens())

        async def vectors(tenant: str, user: str, source: str, item: str) -> int:
            req = MemoryIndexStatusRequest(tenant_id=tenant, user_id=user, items=[{"source": source, "id": item}])
            return (await statuses.answer(req)).items[0].vectors

        assert await vectors("t1", "u1", "memory", "s1") == 2  # one per chunk
        assert await vectors("t1", "u1", "memory", "s2") == 0  # another user's summary
        assert await vectors("t1", "u1", "legacy_lore", "l1") == 0  # another tenant's legacy lore
        assert await vectors("t2", "u1", "legacy_lore", "l1") == 1
        assert await vectors("t1", "u1", "knowledge", "f1") == 1  # a fact the user may be shown, learned by u2
        assert await vectors("t2", "u2", "knowledge", "f1") == 0
        assert await vectors("t1", "u1", "memory", "f1") == 0  # the kind decides too


async def test_without_a_vector_index_the_answer_is_unavailable_with_the_reason() -> None:
    from mnemo.services.context_assembler.index_status import NoVectorIndex

    statuses = IndexStatuses(None, EstimatedTokens())
    req = MemoryIndexStatusRequest(tenant_id="t1", user_id="u1", items=[{"source": "memory", "id": "s1"}])
    with pytest.raises(NoVectorIndex, match="no vector index"):
        await statuses.answer(req)


async def test_a_missing_item_is_pending_while_the_embedding_service_has_events_left(
    tmp_path: Path, embedder: Any
) -> None:
    read: list[int | None] = []

    def backlog_of(n: int | None) -> Any:
        async def backlog() -> int | None:
            read.append(n)
            return n

        return backlog

    items = [{"source": "memory", "id": "s1"}, {"source": "memory", "id": "gone"}]
    req = MemoryIndexStatusRequest(tenant_id="t1", user_id="u1", items=items)
    async with edge_index(tmp_path / "edge", embedder) as index:
        await index.upsert([_point(embedder, "t1", "u1", vp.SUMMARY, vp.SUMMARY_ID, "s1", 0)])
        busy = await IndexStatuses(index, EstimatedTokens(), backlog_of(3)).answer(req)
        idle = await IndexStatuses(index, EstimatedTokens(), backlog_of(0)).answer(req)
        unknown = await IndexStatuses(index, EstimatedTokens(), backlog_of(None)).answer(req)
        read.clear()
        indexed = await IndexStatuses(index, EstimatedTokens(), backlog_of(3)).answer(
            req.model_copy(update={"items": req.items[:1]})
        )
    assert [(s.status, s.pending) for s in busy.items] == [("indexed", False), ("missing", True)]
    assert busy.embedding_backlog == 3
    assert [(s.status, s.pending) for s in idle.items] == [("indexed", False), ("missing", False)]
    assert idle.embedding_backlog == 0
    assert (unknown.items[1].pending, unknown.embedding_backlog) == (False, None)
    assert (read, indexed.embedding_backlog, indexed.items[0].pending) == ([], None, False)  # nothing missing: not read
