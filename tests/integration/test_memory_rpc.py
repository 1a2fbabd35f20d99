"""The memory service end to end over real NATS and SecantusDB, with Qdrant Edge on disk and the bundled model.

The memory and embedding services run as routers on one broker; requests go through a plain nats-py client, as
a platform would send them. Summaries are seeded by appending ``summary.created`` events to the real log and
projecting them as the summarizer does (it is not running: no messages are summarized here), then publishing
them through the relay, so the embedding service indexes them as in production.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient

from mnemo.services.embedding.app import create_router as embedding_router
from mnemo.services.memory.app import create_router as memory_router
from mnemo.shared import subjects
from mnemo.shared.crypto import TOKEN_PREFIX
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import knowledge_stream, legacy_lore_stream, summary_stream
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from mnemo.shared.readmodels.legacy_lore import COLLECTION as LEGACY_COLLECTION
from mnemo.shared.readmodels.summaries import COLLECTION as SUMMARIES_COLLECTION
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.vectors.port import Match, VectorFilter, VectorQuery
from tests.integration.ingest_stack import Stack, StackFactory, drained
from tests.waiting import request_reply, wait_until

pytestmark = pytest.mark.integration

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
EMBEDDING = subjects.durable("embedding")
U1, U2, BOT_A, BOT_B, PERSONA = "u1", "u2", "bot-ada", "bot-bram", "p-mira"


@pytest.fixture
async def stack(vector_stack: StackFactory) -> AsyncIterator[Stack]:
    async with vector_stack([memory_router, embedding_router]) as s:
        yield s


def summary(
    summary_id: str,
    hour: int,
    *,
    user: str = U1,
    conversation: str = "c1",
    kind: str = "short_term",
    participants: tuple[str, ...] = (BOT_A, PERSONA),
    text: str | None = None,
) -> dict[str, Any]:
    return {
        "summary_id": summary_id,
        "user_id": user,
        "conversation_id": conversation,
        "summary_type": kind,
        "text": text or f"Memory {summary_id}: the crew repaired the airship's hull by lantern light.",
        "importance": 7,
        "participants": list(participants),
        "start_at": (T0 + timedelta(hours=hour)).isoformat(),
        "end_at": (T0 + timedelta(hours=hour, minutes=30)).isoformat(),
        "message_ids": [f"{summary_id}-m1", f"{summary_id}-m2"],
        "first_index": 0,
        "last_index": 1,
        "method": "llm:fake-model",
        "prompt_version": "summarize.v1",
        "emotional_context": "tense, then relieved; warm",
    }


async def seed(stack: Stack, tenant: str, payloads: list[dict[str, Any]]) -> None:
    """Append each ``summary.created`` to its stream in the log, project it and publish it."""
    summaries = SummariesReadModel(stack.db, stack.deps.cipher)
    for p in payloads:
        stream = summary_stream(tenant, p["user_id"], p["conversation_id"])
        event = NewEvent(type="summary.created", tenant_id=tenant, payload=p)
        result = await stack.store.append(stream, await stack.store.stream_version(stream), [event])
        await summaries.apply(result.committed)
        await stack.relay.publish_committed(result.committed)


async def call(nc: NatsClient, subject: str, body: bytes | dict[str, Any]) -> dict[str, Any]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    reply = await request_reply(nc, subject, data, timeout=20)
    result: dict[str, Any] = json.loads(reply.data)
    return result


async def settle(stack: Stack) -> None:
    await wait_until(lambda: drained(stack.js, subjects.LOG_STREAM, EMBEDDING), "embedding acked every log event")


def convert(tenant: str, memory_id: str, user: str = U1, **over: Any) -> dict[str, Any]:
    body = {"tenant_id": tenant, "user_id": user, "memory_id": memory_id, "applies_to_bots": [BOT_B],
            "applies_to_personas": [PERSONA], "title": "The hull repair"}  # fmt: skip
    return body | over


def listing(tenant: str, user: str = U1, **over: Any) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": user} | over


def legacy_vectors(tenant: str, user: str = U1) -> VectorFilter:
    return VectorFilter.where(tenant_id=tenant, user_id=user, kind="legacy_memory")


async def test_convert_to_legacy_lore_is_idempotent_owner_checked_and_embedded_with_metadata(
    stack: Stack, tenant: str, embedder: BundledEmbedder
) -> None:
    other_tenant = f"{tenant}-other"
    # s2 is extractive and quotes one of its two messages; s1 was written by an LLM from both.
    quoting = summary("s2", 1) | {"method": "extractive", "citations": [{"message_id": "s2-m2", "start": 0, "end": 9}]}
    await seed(stack, tenant, [summary("s1", 0), quoting, summary("s-u2", 2, user=U2)])
    await seed(stack, other_tenant, [summary("s1-elsewhere", 0)])

    first = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s1"))
    again = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s1", applies_to_bots=[BOT_A]))
    foreign_user = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s1", user=U2))
    foreign_memory = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s-u2"))
    unknown = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "nope"))
    other = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(other_tenant, "s1"))
    elsewhere = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(other_tenant, "s1-elsewhere"))

    assert first["created"] is True
    assert (first["memory_id"], first["applies_to_bots"], first["applies_to_personas"]) == ("s1", [BOT_B], [PERSONA])
    assert again == first | {"created": False}, "converting again returns the same entry, unchanged"
    for reply in (foreign_user, foreign_memory, unknown, other):
        assert reply["error"]["code"] == "not_found"
    assert elsewhere["created"] is True
    assert elsewhere["legacy_id"] != first["legacy_id"]

    memories = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, source="memory"))
    by_id = {i["id"]: i for i in memories["items"]}
    assert memories["total"] == 3
    assert set(by_id) == {"s1", "s2", first["legacy_id"]}
    assert (by_id["s1"]["converted_to_lore"], by_id["s1"]["legacy_id"]) == (True, first["legacy_id"])
    assert (by_id["s2"]["converted_to_lore"], by_id["s2"]["legacy_id"]) == (False, None)
    assert by_id["s1"]["message_ids"] == ["s1-m1", "s1-m2"], "an LLM summary is derived from all it covers"
    assert by_id["s2"]["message_ids"] == ["s2-m2"], "an extractive one from the messages it quotes"
    legacy = by_id[first["legacy_id"]]
    assert legacy["source"] == "legacy_lore"
    assert legacy["type"] == "legacy_memory"
    assert legacy["text"] == summary("s1", 0)["text"]
    assert legacy["title"] == "The hull repair"
    assert legacy["participants"] == [BOT_A, PERSONA]
    assert legacy["importance"] == 7
    assert legacy["applies_to"] == sorted([BOT_B, PERSONA])
    assert legacy["memory_id"] == "s1"
    assert legacy["emotional_tags"] == ["tense", "relieved", "warm"]
    assert legacy["start_at"].startswith("2026-03-01T12:00")
    assert legacy["end_at"].startswith("2026-03-01T12:30")
    assert legacy["message_ids"] == ["s1-m1", "s1-m2"], "a legacy memory keeps what its memory was derived from"

    raw = await stack.db[LEGACY_COLLECTION].find_one({"_id": first["legacy_id"]})
    assert raw is not None
    assert raw["text"].startswith(TOKEN_PREFIX)
    assert "airship" not in json.dumps(raw, default=str)

    await settle(stack)
    index = stack.deps.require_vectors()
    assert await index.count(legacy_vectors(tenant)) == 1
    [query] = await embedder.embed(["the airship hull repair"])
    for_bot = legacy_vectors(tenant).and_(Match("applies_to", (BOT_B, "p-other")))
    [hit] = await index.search(VectorQuery.dense(query, for_bot, 5))
    assert (hit.payload["legacy_id"], hit.payload["memory_id"], hit.payload["source_id"]) == (
        first["legacy_id"], "s1", first["legacy_id"],
    )  # fmt: skip
    assert hit.payload["participants"] == [BOT_A, PERSONA]
    assert hit.payload["importance"] == 7
    assert hit.payload["start_at"] == T0.timestamp()
    assert hit.payload["end_at"] == (T0 + timedelta(minutes=30)).timestamp()
    assert "airship" not in json.dumps(hit.payload)
    assert (
        await index.search(VectorQuery.dense(query, legacy_vectors(tenant).and_(Match("applies_to", (BOT_A,))), 5))
        == []
    )
    assert await index.count(legacy_vectors(tenant, U2)) == 0


async def test_delete_cascades_to_legacy_lore_and_vectors(stack: Stack, tenant: str) -> None:
    await seed(stack, tenant, [summary("s1", 0), summary("s2", 1)])
    converted = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s1"))
    await settle(stack)
    index = stack.deps.require_vectors()
    s1_vectors = VectorFilter.where(tenant_id=tenant, user_id=U1, kind="summary", summary_id="s1")
    assert await index.count(legacy_vectors(tenant)) == 1
    assert await index.count(s1_vectors) == 1

    foreign = await call(stack.nc, subjects.MEMORY_DELETE, {"tenant_id": tenant, "user_id": U2, "memory_id": "s1"})
    other_tenant = await call(
        stack.nc, subjects.MEMORY_DELETE, {"tenant_id": f"{tenant}-x", "user_id": U1, "memory_id": "s1"}
    )
    deleted = await call(stack.nc, subjects.MEMORY_DELETE, {"tenant_id": tenant, "user_id": U1, "memory_id": "s1"})
    again = await call(stack.nc, subjects.MEMORY_DELETE, {"tenant_id": tenant, "user_id": U1, "memory_id": "s1"})
    reconvert = await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, "s1"))

    assert foreign["error"]["code"] == "not_found"
    assert other_tenant["error"]["code"] == "not_found"
    assert deleted == {"memory_id": "s1", "deleted": True, "legacy_ids": [converted["legacy_id"]]}
    assert again == {"memory_id": "s1", "deleted": False, "legacy_ids": []}, "deleting again is harmless"
    assert reconvert["error"]["code"] == "not_found"

    remaining = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant))
    assert [i["id"] for i in remaining["items"]] == ["s2"]
    assert remaining["total"] == 1
    await settle(stack)
    assert await index.count(legacy_vectors(tenant)) == 0
    assert await index.count(s1_vectors) == 0

    # A late redelivery of the entry's creation must not bring its vectors back.
    [created] = await stack.store.read_stream(legacy_lore_stream(tenant, U1, converted["legacy_id"]), limit=1)
    wire = stack.codec.to_wire(await stack.codec.encode(created))
    await stack.js.publish(subjects.log_subject("legacy_lore.created"), wire)  # no Nats-Msg-Id: not deduplicated
    await settle(stack)
    assert await index.count(legacy_vectors(tenant)) == 0
    assert await index.count(VectorFilter.where(tenant_id=tenant, kind="summary", summary_id="s2")) == 1


async def test_an_edit_is_a_new_version_in_the_log_and_the_index(stack: Stack, tenant: str) -> None:
    await seed(stack, tenant, [summary("s1", 0)])
    await settle(stack)
    index = stack.deps.require_vectors()
    text = "Ada and Mira patched the hull together before the storm."
    edit = {"tenant_id": tenant, "user_id": U1, "memory_id": "s1", "text": text}

    foreign = await call(stack.nc, subjects.MEMORY_EDIT, {**edit, "user_id": U2})
    other_tenant = await call(stack.nc, subjects.MEMORY_EDIT, {**edit, "tenant_id": f"{tenant}-x"})
    edited = await call(stack.nc, subjects.MEMORY_EDIT, edit)
    await settle(stack)

    assert (foreign["error"]["code"], other_tenant["error"]["code"]) == ("not_found", "not_found")
    new_id = edited["memory_id"]
    assert (edited["previous_id"], edited["changed"]) == ("s1", True)
    listed = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant))
    assert [(i["id"], i["text"]) for i in listed["items"]] == [(new_id, text)]
    events = await stack.store.read_stream(summary_stream(tenant, U1, "c1"))
    assert [(e.type, e.payload["summary_id"]) for e in events] == [
        ("summary.created", "s1"), ("summary.created", new_id), ("summary.retired", "s1"),
    ]  # fmt: skip
    raw = await stack.db[SUMMARIES_COLLECTION].find_one({"_id": new_id})
    assert raw is not None
    assert raw["text"].startswith(TOKEN_PREFIX), "the new text is encrypted at rest too"
    versions = VectorFilter.where(tenant_id=tenant, user_id=U1, kind="summary", summary_id=new_id)
    assert await index.count(versions) == 1
    old = VectorFilter.where(tenant_id=tenant, user_id=U1, kind="summary", summary_id="s1")
    assert await index.count(old) == 0, "the edited version's vectors go with it"


async def test_listing_filters_and_pages_without_overlap(stack: Stack, tenant: str) -> None:
    mine = [
        summary(
            f"s{i:02d}",
            i,
            conversation=f"c{i % 2}",
            kind="long_term" if i % 5 == 0 else "short_term",
            participants=(BOT_A if i % 3 else BOT_B, PERSONA),
        )
        for i in range(23)
    ]
    mine.append(summary("s-same-time", 4))  # ties with s04 on end_at: the id orders them
    await seed(stack, tenant, [*mine, summary("theirs", 1, user=U2)])
    for memory_id in ("s03", "s10"):
        await call(stack.nc, subjects.MEMORY_CONVERT_TO_LORE, convert(tenant, memory_id))

    seen: list[dict[str, Any]] = []
    totals = set()
    for offset in range(0, 40, 7):
        page = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, limit=7, offset=offset))
        totals.add(page["total"])
        assert (page["offset"], page["limit"]) == (offset, 7)
        seen += page["items"]
    assert totals == {26}, "24 summaries and 2 legacy entries"
    ids = [i["id"] for i in seen]
    assert len(ids) == len(set(ids)) == 26, "pages neither repeat nor skip"
    keys = [(-datetime.fromisoformat(i["end_at"]).timestamp(), i["id"]) for i in seen]
    assert keys == sorted(keys), "newest end first, then id"
    assert "theirs" not in ids

    long_term = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, type="long_term"))
    assert {i["id"] for i in long_term["items"]} == {"s00", "s05", "s10", "s15", "s20"}
    legacy_only = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, type="legacy_memory"))
    assert {i["memory_id"] for i in legacy_only["items"]} == {"s03", "s10"}
    assert legacy_only["total"] == 2
    converted = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, converted_to_lore=True))
    assert {i["id"] for i in converted["items"]} == {"s03", "s10"}
    not_converted = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, converted_to_lore=False, limit=200))
    assert not_converted["total"] == 22
    assert {"s03", "s10"}.isdisjoint(i["id"] for i in not_converted["items"])
    with_b = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, bot_id=BOT_B, limit=200))
    # BOT_B took part in s00, s03, ..., s21 and both legacy entries apply to it.
    expected_b = {f"s{i:02d}" for i in range(0, 23, 3)}
    assert {i["id"] for i in with_b["items"] if i["source"] == "memory"} == expected_b
    assert len([i for i in with_b["items"] if i["source"] == "legacy_lore"]) == 2
    assert with_b["total"] == len(expected_b) + 2
    in_c0 = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, conversation_id="c0", limit=200))
    # c0 holds the even summaries; of the two converted ones only s10's legacy entry was made from c0.
    assert {i["id"] for i in in_c0["items"] if i["source"] == "memory"} == {f"s{i:02d}" for i in range(0, 23, 2)}
    assert [i["memory_id"] for i in in_c0["items"] if i["source"] == "legacy_lore"] == ["s10"]
    assert in_c0["total"] == 12 + 1
    theirs = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, U2))
    assert [i["id"] for i in theirs["items"]] == ["theirs"]
    elsewhere = await call(stack.nc, subjects.MEMORY_LIST, listing(f"{tenant}-x"))
    assert (elsewhere["items"], elsewhere["total"]) == ([], 0)
    first = seen[0]
    assert (first["method"], first["prompt_version"], first["status"]) == ("llm:fake-model", "summarize.v1", "active")


@pytest.mark.parametrize(
    ("subject", "body", "says"),
    [
        (subjects.MEMORY_LIST, b"{not json", "<body>"),
        (subjects.MEMORY_LIST, {"tenant_id": "t", "user_id": "u", "limit": 0}, "limit"),
        (subjects.MEMORY_LIST, {"tenant_id": "t", "user_id": "u", "limit": 201}, "limit"),
        (subjects.MEMORY_LIST, {"tenant_id": "t", "user_id": "u", "source": "everything"}, "source"),
        (subjects.MEMORY_LIST, {"tenant_id": "t", "user_id": "u", "type": "gossip"}, "type"),
        (subjects.MEMORY_LIST, {"tenant_id": "t", "user_id": "u", "colour": "red"}, "colour"),
        (subjects.MEMORY_DELETE, {"tenant_id": "t", "user_id": "u"}, "memory_id"),
        (subjects.MEMORY_DELETE, b"[]", "<body>"),
        (subjects.MEMORY_CONVERT_TO_LORE, {"tenant_id": "t", "user_id": "u", "memory_id": "m"}, "applies_to"),
        (
            subjects.MEMORY_CONVERT_TO_LORE,
            {"tenant_id": "", "user_id": "u", "memory_id": "m", "applies_to_bots": ["b"]},
            "tenant_id",
        ),
    ],
)
async def test_invalid_requests_get_an_error_reply(stack: Stack, subject: str, body: Any, says: str) -> None:
    reply = await call(stack.nc, subject, body)
    assert reply["error"]["code"] == "bad_request"
    assert says in reply["error"]["message"]


def fact(fact_id: str, character: str, minute: int, *, user: str = U1, kind: str = "semantic") -> dict[str, Any]:
    return {
        "fact_id": fact_id,
        "character_id": character,
        "character_kind": "bot",
        "user_id": user,
        "conversation_id": "c1",
        "text": f"Fact {fact_id}: the lighthouse keeper hides a map.",
        "subject": f"subject-{fact_id}",
        "fact_type": kind,
        "tags": ["lighthouse"],
        "confidence": 0.9,
        "learned_at": (T0 + timedelta(minutes=minute)).isoformat(),
        "scope": f"player:{user}",
        "message_ids": ["m1"],
        "method": "pattern",
    }


async def seed_facts(stack: Stack, tenant: str, payloads: list[dict[str, Any]]) -> None:
    """Append each ``knowledge.fact_learned`` to its character's stream and project it."""
    knowledge = KnowledgeReadModel(stack.db, stack.deps.cipher)
    for p in payloads:
        stream = knowledge_stream(tenant, p["character_id"])
        event = NewEvent(type="knowledge.fact_learned", tenant_id=tenant, payload=p)
        result = await stack.store.append(stream, await stack.store.stream_version(stream), [event])
        await knowledge.apply(result.committed)


async def test_knowledge_facts_join_the_view_in_order(stack: Stack, tenant: str) -> None:
    await seed(stack, tenant, [summary(f"s{i}", i) for i in range(3)])  # end at 12:30, 13:30, 14:30
    # Five facts learned in one extraction (same time, 13:00), two others, one of another user.
    tied = [fact(f"f{i}", BOT_A if i % 2 else BOT_B, 60) for i in range(5)]
    others = [fact("f-late", BOT_A, 200, kind="episodic"), fact("f-early", BOT_B, 0)]
    await seed_facts(stack, tenant, [*tied, *others, fact("f-theirs", BOT_A, 30, user=U2)])

    seen: list[dict[str, Any]] = []
    for offset in range(0, 12, 2):
        page = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, limit=2, offset=offset))
        assert page["total"] == 10
        seen += page["items"]
    keys = [(-datetime.fromisoformat(i["end_at"]).timestamp(), i["id"]) for i in seen]
    assert keys == sorted(keys)
    assert len({i["id"] for i in seen}) == len(seen) == 10
    assert [i["id"] for i in seen][:3] == ["f-late", "s2", "s1"]

    knowledge = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, source="knowledge", limit=200))
    assert {i["id"] for i in knowledge["items"]} == {"f0", "f1", "f2", "f3", "f4", "f-late", "f-early"}
    f0 = next(i for i in knowledge["items"] if i["id"] == "f0")
    assert (f0["source"], f0["type"], f0["character_id"], f0["scope"]) == ("knowledge", "semantic", BOT_B, "player:u1")
    assert f0["text"].startswith("Fact f0")
    assert f0["tags"] == ["lighthouse"]
    assert f0["message_ids"] == ["m1"], "a fact names the messages it was learned from"
    episodic = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, type="episodic"))
    assert [i["id"] for i in episodic["items"]] == ["f-late"]
    of_bot_b = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, source="knowledge", bot_id=BOT_B))
    assert {i["id"] for i in of_bot_b["items"]} == {"f0", "f2", "f4", "f-early"}
    in_c1 = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, source="knowledge", conversation_id="c1"))
    assert in_c1["total"] == 7, "every fact of the user was learned in c1"
    in_c9 = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, source="knowledge", conversation_id="c9"))
    assert (in_c9["items"], in_c9["total"]) == ([], 0)
    theirs = await call(stack.nc, subjects.MEMORY_LIST, listing(tenant, U2, source="knowledge"))
    assert [i["id"] for i in theirs["items"]] == ["f-theirs"]
