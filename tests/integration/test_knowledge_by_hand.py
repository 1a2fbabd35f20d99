"""Knowledge by hand over real NATS and SecantusDB, the memory-extractor running as in the stack: a plain
nats-py client lists, adds, edits and retracts facts (``mnemo.rpc.knowledge.fact.*.v1``) and reads the audit
trail; every change is an event in the character's knowledge stream, and replaying that stream into an empty
read model gives the same facts."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from mnemo.services.memory_extractor.app import create_router
from mnemo.shared import subjects
from mnemo.shared.events.recorded import knowledge_stream
from mnemo.shared.readmodels.catalog import KNOWLEDGE, drop
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from tests.integration.ingest_stack import running
from tests.waiting import request_reply

pytestmark = pytest.mark.integration


async def call(nc: NatsClient, subject: str, body: dict[str, Any]) -> dict[str, Any]:
    reply = await request_reply(nc, subject, json.dumps(body).encode(), timeout=20)
    result: dict[str, Any] = json.loads(reply.data)
    return result


async def test_add_edit_retract_with_history_refusals_and_replay(nats_url, mongo_url, db_name):
    tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    me = {"tenant_id": tenant, "user_id": "u1"}
    add = {
        **me,
        "character_id": "maren",
        "text": "The compass points to what its holder has lost.",
        "tags": ["compass"],
    }
    async with running(nats_url, mongo_url, db_name, create_router) as stack:
        nc = stack.nc
        added = await call(nc, subjects.KNOWLEDGE_FACT_ADD, add)
        again = await call(nc, subjects.KNOWLEDGE_FACT_ADD, add)
        fact_id = added["fact_id"]
        listed = await call(nc, subjects.KNOWLEDGE_FACT_LIST, {**me, "character_id": "maren"})
        elsewhere = await call(nc, subjects.KNOWLEDGE_FACT_LIST, {**me, "character_id": "odo"})
        campaign = await call(nc, subjects.KNOWLEDGE_FACT_ADD, {**add, "text": "The Reach is cursed.", "scope": "campaign:reach"})  # fmt: skip
        refused = [
            await call(nc, subjects.KNOWLEDGE_FACT_ADD, {**add, "scope": "player:u2"}),
            await call(nc, subjects.KNOWLEDGE_FACT_ADD, {**add, "scope": "character:odo"}),
            await call(nc, subjects.KNOWLEDGE_FACT_ADD, {**add, "scope": "guild:x"}),
            await call(nc, subjects.KNOWLEDGE_FACT_ADD, {**add, "text": ""}),
            await call(nc, subjects.KNOWLEDGE_FACT_EDIT, {**me, "fact_id": fact_id, "confidence": 2}),
        ]
        not_found = [
            await call(nc, subjects.KNOWLEDGE_FACT_EDIT, {**me, "user_id": "u2", "fact_id": fact_id, "text": "x"}),
            await call(nc, subjects.KNOWLEDGE_FACT_RETRACT, {**me, "tenant_id": other, "fact_id": fact_id}),
            await call(nc, subjects.KNOWLEDGE_FACT_HISTORY, {**me, "user_id": "u2", "fact_id": fact_id}),
            await call(nc, subjects.KNOWLEDGE_FACT_RETRACT, {**me, "fact_id": "nope"}),
        ]
        edit = {**me, "fact_id": fact_id, "text": "The silver compass points to what its holder has lost."}
        edited = await call(nc, subjects.KNOWLEDGE_FACT_EDIT, edit)
        edited_again = await call(nc, subjects.KNOWLEDGE_FACT_EDIT, edit)
        stale_edit = await call(nc, subjects.KNOWLEDGE_FACT_EDIT, {**edit, "text": "another"})
        new_id = edited["fact_id"]
        retracted = await call(nc, subjects.KNOWLEDGE_FACT_RETRACT, {**me, "fact_id": new_id})
        retracted_again = await call(nc, subjects.KNOWLEDGE_FACT_RETRACT, {**me, "fact_id": new_id})
        history = await call(nc, subjects.KNOWLEDGE_FACT_HISTORY, {**me, "fact_id": fact_id})
        history_of_new = await call(nc, subjects.KNOWLEDGE_FACT_HISTORY, {**me, "fact_id": new_id})
        everything = await call(nc, subjects.KNOWLEDGE_FACT_LIST, {**me, "include_inactive": True})
        current = await call(nc, subjects.KNOWLEDGE_FACT_LIST, me)

        knowledge = KnowledgeReadModel(stack.db, stack.deps.cipher)
        before = {f.fact_id: (f.status, f.text, f.scope, f.revises) for f in (await knowledge.page(tenant, "u1", include_inactive=True))[0]}  # fmt: skip
        await drop(stack.db, KNOWLEDGE)
        await knowledge.apply(await stack.store.read_stream(knowledge_stream(tenant, "maren")))
        replayed = {f.fact_id: (f.status, f.text, f.scope, f.revises) for f in (await knowledge.page(tenant, "u1", include_inactive=True))[0]}  # fmt: skip

    assert added["changed"] is True
    assert (added["fact"]["method"], added["fact"]["scope"], added["fact"]["tags"]) == (
        "manual:u1",
        "player:u1",
        ["compass"],
    )
    assert (again["fact_id"], again["changed"]) == (fact_id, False), "a retried addition adds nothing"
    assert [f["fact_id"] for f in listed["facts"]] == [fact_id]
    assert elsewhere["facts"] == []
    assert campaign["fact"]["scope"] == "campaign:reach"
    assert [r["error"]["code"] for r in refused] == ["bad_request"] * 5
    assert [r["error"]["code"] for r in not_found] == ["not_found"] * 4, "another user's or tenant's fact is unknown"
    assert (edited["previous_fact_id"], edited["changed"], edited["fact"]["revises"]) == (fact_id, True, fact_id)
    assert edited["fact"]["text"] == edit["text"]
    assert edited["fact"]["tags"] == ["compass"], "what the edit does not name is kept"
    assert (edited_again["fact_id"], edited_again["changed"]) == (new_id, False)
    assert stale_edit["error"]["code"] == "bad_request", "the old version is no longer current"
    assert (retracted["changed"], retracted["fact"]["status"]) == (True, "retired")
    assert retracted_again["changed"] is False
    assert [(e["event"], e["fact_id"], e["summary"]) for e in history["entries"]] == [
        ("knowledge.fact_learned", fact_id, "added by hand"),
        ("knowledge.fact_retired", fact_id, "replaced by an edited version"),
        ("knowledge.fact_learned", new_id, f"edited version of {fact_id}"),
        ("knowledge.fact_retired", new_id, "retracted"),
    ]
    assert history_of_new == {**history, "fact_id": new_id}, "any version shows the whole trail"
    assert all(e["by"] == "u1" for e in history["entries"])
    assert {f["fact_id"]: f["status"] for f in everything["facts"]} == {
        fact_id: "retired",
        new_id: "retired",
        campaign["fact_id"]: "active",
    }
    assert [f["fact_id"] for f in current["facts"]] == [campaign["fact_id"]]
    assert replayed == before, "replaying the log gives the same facts"
