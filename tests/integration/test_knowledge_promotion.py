"""Promotion of facts end to end over real NATS and SecantusDB, with the memory-extractor running as it runs
in the stack: messages are appended to the log and relayed, the service learns the facts, then a plain
nats-py client promotes and unpromotes them through ``mnemo.rpc.memory.{promote,unpromote}.v1``.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from mnemo.services.memory_extractor.app import create_router
from mnemo.shared import subjects
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import conversation_stream, created_event_id, knowledge_stream
from mnemo.shared.readmodels.catalog import KNOWLEDGE, drop
from mnemo.shared.readmodels.knowledge import FactView, KnowledgeReadModel
from tests.integration.ingest_stack import Stack, running
from tests.waiting import request_reply, wait_until

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)


async def call(nc: NatsClient, subject: str, body: bytes | dict[str, Any]) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await request_reply(nc, subject, data, timeout=20)
    result: dict[str, Any] = json.loads(reply.data)
    return result


async def say(stack: Stack, tenant: str, user: str, lines: list[str]) -> None:
    """Ana tells the bard ``lines`` in ``user``'s conversation; the relay publishes them to the service."""
    events = [
        NewEvent(
            event_id=created_event_id(tenant, user, "c1", f"m{i}"),
            type="message.recorded",
            tenant_id=tenant,
            payload={
                "user_id": user,
                "conversation_id": "c1",
                "message_id": f"m{i}",
                "role": "user",
                "author_id": "ana",
                "author_name": "Ana",
                "content": text,
                "created_at": T0 + timedelta(minutes=i),
                "bot_ids": ["bard"],
                "persona_id": "ana",
                "index": i,
                "tokens": 8,
            },
        )
        for i, text in enumerate(lines)
    ]
    result = await stack.store.append(conversation_stream(tenant, user, "c1"), 0, events)
    await stack.relay.publish_committed(result.committed)


async def audit(stack: Stack, tenant: str) -> list[dict[str, Any]]:
    events = await stack.store.read_stream(knowledge_stream(tenant, "bard"))
    return [{"type": e.type, **e.payload} for e in events if e.type.startswith("knowledge.fact_") and "promoted" in e.type]  # fmt: skip


async def test_promote_and_unpromote_with_audit_and_refusals(nats_url, mongo_url, db_name):
    tenant, other_tenant = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    async with running(nats_url, mongo_url, db_name, create_router, embedder=BundledEmbedder()) as stack:
        knowledge = KnowledgeReadModel(stack.db, stack.deps.cipher)
        await say(stack, tenant, "u1", ["I live in Port Vell."])
        await say(stack, tenant, "u2", ["I have a red boat."])
        await say(stack, other_tenant, "u1", ["I live in Oslo."])

        async def learned() -> bool:
            facts = [await knowledge.facts_for(t, "bard", user_id=u) for t, u in ((tenant, "u1"), (tenant, "u2"), (other_tenant, "u1"))]  # fmt: skip
            return all(facts)

        await wait_until(learned, "the service learned the three facts")
        [fact] = await knowledge.facts_for(tenant, "bard", user_id="u1")
        [u2_fact] = await knowledge.facts_for(tenant, "bard", user_id="u2")
        promote = {"tenant_id": tenant, "user_id": "u1", "fact_id": fact.fact_id, "campaign_id": "camp"}
        unpromote = {"tenant_id": tenant, "user_id": "u1", "fact_id": fact.fact_id}

        refusals = [
            await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "user_id": "u2"}),
            await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "tenant_id": other_tenant}),
            await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "fact_id": "nope"}),
            await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "fact_id": u2_fact.fact_id}),
        ]
        bad = [
            await call(stack.nc, subjects.MEMORY_PROMOTE, b"{not json"),
            await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "extra": 1}),
            await call(stack.nc, subjects.MEMORY_PROMOTE, {k: v for k, v in promote.items() if k != "campaign_id"}),
            await call(stack.nc, subjects.MEMORY_UNPROMOTE, {**unpromote, "user_id": ""}),
        ]
        private_unpromote = await call(stack.nc, subjects.MEMORY_UNPROMOTE, unpromote)
        assert await audit(stack, tenant) == [], "no refused or no-op request is recorded"

        promoted = await call(stack.nc, subjects.MEMORY_PROMOTE, promote)
        again = await call(stack.nc, subjects.MEMORY_PROMOTE, promote)
        elsewhere = await call(stack.nc, subjects.MEMORY_PROMOTE, {**promote, "campaign_id": "other"})
        seen_in_campaign = await knowledge.facts_for(tenant, "bard", user_id="u2", campaign_id="camp")
        seen_outside = await knowledge.facts_for(tenant, "bard", user_id="u2")
        foreign_unpromote = await call(stack.nc, subjects.MEMORY_UNPROMOTE, {**unpromote, "user_id": "u2"})
        unpromoted = await call(stack.nc, subjects.MEMORY_UNPROMOTE, unpromote)
        after = await knowledge.facts_for(tenant, "bard", user_id="u2", campaign_id="camp")
        trail = await audit(stack, tenant)

        # `mnemo replay` rebuilds the scopes from the log alone.
        await drop(stack.db, KNOWLEDGE)
        await knowledge.apply(await stack.store.read_stream(knowledge_stream(tenant, "bard")))
        replayed = await knowledge.by_id(tenant, fact.fact_id)

    assert [r["error"]["code"] for r in refusals] == ["not_found"] * 4, "existence does not leak"
    assert [r["error"]["code"] for r in bad] == ["bad_request"] * 4
    assert private_unpromote == {"fact_id": fact.fact_id, "scope": "player:u1", "previous_scope": "player:u1", "changed": False}  # fmt: skip
    assert promoted == {"fact_id": fact.fact_id, "scope": "campaign:camp", "previous_scope": "player:u1", "changed": True}  # fmt: skip
    assert again == {**promoted, "previous_scope": "campaign:camp", "changed": False}
    assert elsewhere["error"]["code"] == "bad_request", "a promoted fact is not promoted again elsewhere"
    assert {f.fact_id for f in seen_in_campaign} == {fact.fact_id, u2_fact.fact_id}
    assert [f.fact_id for f in seen_outside] == [u2_fact.fact_id], "campaign facts only within the campaign"
    assert foreign_unpromote["error"]["code"] == "not_found"
    assert unpromoted == {"fact_id": fact.fact_id, "scope": "player:u1", "previous_scope": "campaign:camp", "changed": True}  # fmt: skip
    assert [f.fact_id for f in after] == [u2_fact.fact_id]
    assert [(a["type"], a["by_user_id"], a["owner_user_id"], a["from_scope"], a["to_scope"]) for a in trail] == [
        ("knowledge.fact_promoted", "u1", "u1", "player:u1", "campaign:camp"),
        ("knowledge.fact_unpromoted", "u1", "u1", "campaign:camp", "player:u1"),
    ]
    assert all(a["fact_id"] == fact.fact_id and a["at"] for a in trail)
    assert isinstance(replayed, FactView)
    assert replayed.scope == "player:u1"
