"""Writer and readers agree on the vector point schema (``mnemo/shared/vectors/points.py``).

For every kind, a point the embedding service plans is found by the filter its reader searches with, for the
same tenant, user, conversation and speaking bot, and not for another tenant; the writer's own deletions
find it too. A key renamed on one side only (``audience``, ``applies_to``, ``lorebook_id``, ...) fails here
instead of silently emptying retrieval.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.context_assembler.lore.documents import DocumentLore
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.recall.filters import context_memories_filter
from mnemo.services.context_assembler.search.filters import (
    facts_filter,
    legacy_filter,
    memories_filter,
    messages_filter,
)
from mnemo.services.embedding.documents import DocState
from mnemo.services.embedding.domain import plan_batch
from mnemo.services.embedding.plan import Plan
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FactLearned,
    FactRetired,
    LegacyLoreCreated,
    SummaryCreated,
    SummaryRetired,
    character_scope,
    conversation_stream,
    document_stream,
    knowledge_stream,
    legacy_lore_stream,
    lorebook_stream,
    memory_stream,
    player_scope,
    summary_stream,
)
from mnemo.shared.lore.model import Lorebook, LoreEntry
from mnemo.shared.readmodels.documents import ChunkView, DocumentRecord
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import (
    FLOAT_FIELDS,
    INTEGER_FIELDS,
    KEYWORD_FIELDS,
    TENANT_FIELD,
    Match,
    PayloadValue,
    Range,
    ScoredPoint,
    VectorFilter,
    VectorQuery,
)
from mnemo_client.wire.contract import ContextAssembleRequest
from mnemo_client.wire.document_contract import DocumentState
from tests.envelopes import message_recorded, recorded
from tests.fakes.embedders import ConstantEmbedder

T0 = datetime(2026, 4, 1, 12, 0, tzinfo=UTC)
USER, CONVERSATION, BOT, PERSONA, BOOK = "u1", "c1", "bard", "p1", "book-1"
DOC, DOC_BOOK = "doc-1", "doc-book-1"


def matches(flt: VectorFilter, payload: Mapping[str, PayloadValue]) -> bool:
    """The port's filter semantics (``mnemo/shared/vectors/port.py``, held by every adapter in
    ``tests/contract``): every ``must`` holds and no ``must_not``; a match on a list field means "contains"."""

    def holds(cond: Match | Range) -> bool:
        value = payload.get(cond.key)
        if isinstance(cond, Range):
            return (
                isinstance(value, int | float)
                and (cond.gte is None or value >= cond.gte)
                and (cond.lte is None or value <= cond.lte)
            )
        if isinstance(value, list):
            return any(v in cond.values for v in value)
        return value is not None and value in cond.values

    return all(holds(c) for c in flt.must) and not any(holds(c) for c in flt.must_not)


def request(tenant: str) -> ContextAssembleRequest:
    return ContextAssembleRequest(
        tenant_id=tenant,
        user_id=USER,
        conversation_id=CONVERSATION,
        bot_id=BOT,
        persona_id=PERSONA,
        user_message="What did we find at the reef?",
    )


def event(tenant: str, stream: str, type_: str, payload: dict[str, Any], version: int = 1) -> EventEnvelope:
    return recorded(tenant, stream, version, type_, payload, T0)


def summary(tenant: str) -> list[EventEnvelope]:
    created = SummaryCreated(
        summary_id="s1",
        user_id=USER,
        conversation_id=CONVERSATION,
        summary_type="short_term",
        text="They found a glowing reef.",
        importance=5,
        participants=[BOT, PERSONA],
        start_at=T0,
        end_at=T0 + timedelta(minutes=5),
        message_ids=["m0"],
        first_index=0,
        last_index=0,
        method="extractive",
        audience=[BOT],
    )
    return [
        event(tenant, summary_stream(tenant, USER, CONVERSATION), "summary.created", created.model_dump(mode="json"))
    ]


def legacy(tenant: str) -> list[EventEnvelope]:
    created = LegacyLoreCreated(
        legacy_id="L1",
        user_id=USER,
        memory_id="s0",
        conversation_id=CONVERSATION,
        text="The reef glowed the night they met.",
        participants=[BOT, PERSONA],
        start_at=T0,
        end_at=T0,
        importance=6,
        emotional_tags=[],
        applies_to_bots=[BOT],
        applies_to_personas=[],
        summary_type="short_term",
        method="extractive",
        created_at=T0,
    )
    stream = legacy_lore_stream(tenant, USER, "L1")
    return [event(tenant, stream, "legacy_lore.created", created.model_dump(mode="json"))]


def fact(tenant: str) -> FactLearned:
    return FactLearned(
        fact_id="f1",
        character_id=BOT,
        character_kind="bot",
        user_id=USER,
        conversation_id=CONVERSATION,
        text="The reef glows at night.",
        subject="reef",
        fact_type="semantic",
        confidence=0.9,
        learned_at=T0,
        scope=player_scope(USER),
        message_ids=["m0"],
        method="pattern",
    )


def facts(tenant: str) -> list[EventEnvelope]:
    stream = knowledge_stream(tenant, BOT)
    return [event(tenant, stream, "knowledge.fact_learned", fact(tenant).model_dump(mode="json"))]


def message(tenant: str) -> list[EventEnvelope]:
    return [
        message_recorded(
            tenant, USER, CONVERSATION, 0, "We found the reef glowing.", created_at=T0, bot_ids=[BOT], author_id=PERSONA
        )
    ]


def memory_view(tenant: str) -> MemoryView:
    """A memory of the user's own namespace that the speaking bot knows (``bot_id``: only it)."""
    return MemoryView(
        memory_id="mem-1", tenant_id=tenant, user_id=USER, by_user_id=USER, owner_namespace=player_scope(USER),
        memory_type="episodic", title="The reef", content="The reef glowed the night we sailed.",
        tags=("place:reef",), assets=(), metadata={}, bot_id=BOT, conversation_id=None, occurred_at=T0, version=1,
    )  # fmt: skip


def memory(tenant: str) -> list[EventEnvelope]:
    view = memory_view(tenant)
    payload = {"memory_id": view.memory_id, "user_id": USER, "by_user_id": USER, "owner_namespace": view.owner_namespace,
               "memory_type": view.memory_type, "title": view.title, "content": view.content, "tags": list(view.tags),
               "bot_id": BOT, "occurred_at": T0, "remembered_at": T0}  # fmt: skip
    return [event(tenant, memory_stream(tenant, view.memory_id), "memory.remembered", payload)]


def lore_entry(tenant: str) -> list[EventEnvelope]:
    stream = lorebook_stream(tenant, BOOK)
    return [event(tenant, stream, "lorebook.entry_created", {"lorebook_id": BOOK, "uid": 1, "at": T0, "entry": {}})]


BOOK_STATE = Lorebook(entries=[LoreEntry(uid=1, content="The reef glows at night.", activation_mode="vector")])


def document(tenant: str) -> list[EventEnvelope]:
    chunk = {"index": 0, "text": "The reef glows at night.", "heading": "Reefs", "page": 3, "hash": "h0", "tokens": 8}
    payload = {"document_id": DOC, "version": 1, "part": 0, "parts": 1, "total_chunks": 1, "chunks": [chunk]}
    return [event(tenant, document_stream(tenant, DOC), "document.chunked", payload)]


def planned(tenant: str, events: Sequence[EventEnvelope]) -> Plan:
    """The writer's plan, as the embedding service makes it (every source on)."""
    books = {(tenant, BOOK): BookState(tenant, BOOK, owner_user_id=USER, book=BOOK_STATE, version=2)}
    docs = {(tenant, DOC): DocState(DOC_BOOK, 1, 1, False, frozenset({"h0"}))}
    memories = {(tenant, "mem-1"): memory_view(tenant)} if any(e.type == "memory.remembered" for e in events) else {}
    return plan_batch(
        events, {}, model="m", chunker=lambda t: [t], lore_books=books, facts={}, documents=docs, memories=memories
    )


class RecordingIndex:
    """Records the filter of every search (the lore reader builds its own inside ``LoreLoader``)."""

    def __init__(self) -> None:
        self.filters: list[VectorFilter] = []

    async def search(self, query: VectorQuery) -> list[ScoredPoint]:
        self.filters.append(query.flt)
        return []

    async def hybrid_search(self, query: VectorQuery) -> list[ScoredPoint]:
        self.filters.append(query.flt)
        return []


class OneDocument:
    """The documents read model of a tenant with one completed document in book ``DOC_BOOK``."""

    async def list(
        self, tenant_id: str, *, owner_user_id: str | None = None, lorebook_ids: Sequence[str] | None = None
    ) -> list[DocumentRecord]:
        state = DocumentState(tenant_id=tenant_id, document_id=DOC, book_id=DOC_BOOK, owner_user_id=USER,
                              name="Reefs.pdf", status="completed", version=1, active_version=1)  # fmt: skip
        return [DocumentRecord(state, "", frozenset({"h0"}))] if DOC_BOOK in (lorebook_ids or ()) else []

    async def chunks_by_hash(
        self, tenant_id: str, document_id: str, version: int, hashes: Sequence[str]
    ) -> dict[str, ChunkView]:
        return {}


async def document_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The filter the document reader (``DocumentLore``) searches the attached document's book with."""
    index = RecordingIndex()
    reader = DocumentLore(OneDocument(), index, ConstantEmbedder())  # type: ignore[arg-type]
    degraded: list[str] = []
    await reader.items(req, [ActiveBook(f"{DOC_BOOK}@1", Lorebook(entries=[]))], [], [], degraded)
    assert degraded == []
    [flt] = index.filters
    return flt


async def lore_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The filter the lore reader (``LoreLoader.similar``) searches the attached book with."""
    index = RecordingIndex()
    loader = LoreLoader(None, index=index, embedder=ConstantEmbedder())  # type: ignore[arg-type]
    degraded: list[str] = []
    await loader.similar(req, [ActiveBook(f"{BOOK}@2", BOOK_STATE)], [], degraded)
    assert degraded == []
    [flt] = index.filters
    return flt


@dataclass(frozen=True)
class Kind:
    kind: str
    events: Any  # tenant -> the events that write the kind's points


KINDS = (
    Kind(vp.MESSAGE, message),
    Kind(vp.SUMMARY, summary),
    Kind(vp.LEGACY_MEMORY, legacy),
    Kind(vp.LORE_ENTRY, lore_entry),
    Kind(vp.FACT, facts),
    Kind(vp.DOCUMENT_CHUNK, document),
    Kind(vp.MEMORY, memory),
)


async def reader_filter(kind: str, req: ContextAssembleRequest) -> VectorFilter:
    """The filter the reader of ``kind`` searches with for ``req``."""
    readers = {
        vp.MESSAGE: lambda: messages_filter(req),
        vp.SUMMARY: lambda: memories_filter(req),
        vp.LEGACY_MEMORY: lambda: legacy_filter(req),
        vp.FACT: lambda: facts_filter(req),
        vp.MEMORY: lambda: context_memories_filter(req),
    }
    if kind == vp.LORE_ENTRY:
        return await lore_filter(req)
    if kind == vp.DOCUMENT_CHUNK:
        return await document_filter(req)
    return readers[kind]()


def test_every_kind_the_writer_writes_has_a_reader_here() -> None:
    assert sorted(k.kind for k in KINDS) == sorted(vp.KINDS)


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
async def test_the_reader_finds_the_writers_points_of_its_tenant_only(kind: Kind) -> None:
    mine, theirs = planned("t1", kind.events("t1")).points, planned("t2", kind.events("t2")).points
    assert mine
    assert theirs
    assert {p.payload[vp.KIND] for p in mine} == {kind.kind}
    flt = await reader_filter(kind.kind, request("t1"))
    assert all(matches(flt, p.payload) for p in mine), f"the {kind.kind} reader misses the writer's points"
    assert not any(matches(flt, p.payload) for p in theirs), f"the {kind.kind} reader sees another tenant"
    assert all(matches(vp.all_kinds(), p.payload) for p in [*mine, *theirs]), "replay would not wipe them"


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
async def test_the_reader_does_not_see_another_users_or_characters_points(kind: Kind) -> None:
    mine = planned("t1", kind.events("t1")).points
    other_user = request("t1").model_copy(update={"user_id": "u2"})
    other_bot = request("t1").model_copy(update={"bot_id": "elise", "persona_id": None})
    for req in (other_user, other_bot):
        if kind.kind in (vp.LORE_ENTRY, vp.DOCUMENT_CHUNK):
            continue  # lore is scoped by the attached books, not by user or character
        flt = await reader_filter(kind.kind, req)
        assert not any(matches(flt, p.payload) for p in mine), (kind.kind, req.user_id, req.bot_id)


def deletions(tenant: str) -> dict[str, list[VectorFilter]]:
    """Per kind: the deletions the writer plans when that kind's item goes away."""
    retired = SummaryRetired(
        summary_id="s1",
        user_id=USER,
        conversation_id=CONVERSATION,
        reason="consolidated",
        replaced_by="x",
        retired_at=T0,
    )
    gone = FactRetired(fact_id="f1", character_id=BOT, user_id=USER, reason="deleted", message_id="m0", retired_at=T0)
    events = {
        vp.MESSAGE: event(
            tenant,
            conversation_stream(tenant, USER, CONVERSATION),
            "message.deleted",
            {"user_id": USER, "conversation_id": CONVERSATION, "message_id": "m0", "deleted_at": T0},
            version=2,
        ),
        vp.SUMMARY: event(
            tenant, summary_stream(tenant, USER, CONVERSATION), "summary.retired", retired.model_dump(mode="json"), 2
        ),
        vp.LEGACY_MEMORY: event(
            tenant,
            legacy_lore_stream(tenant, USER, "L1"),
            "legacy_lore.deleted",
            {"legacy_id": "L1", "user_id": USER, "memory_id": "s0", "deleted_at": T0.isoformat()},
            2,
        ),
        vp.LORE_ENTRY: event(
            tenant,
            lorebook_stream(tenant, BOOK),
            "lorebook.entry_deleted",
            {"lorebook_id": BOOK, "uid": 1, "at": T0},
            2,
        ),
        vp.FACT: event(
            tenant, knowledge_stream(tenant, BOT), "knowledge.fact_retired", gone.model_dump(mode="json"), 2
        ),
        vp.DOCUMENT_CHUNK: event(
            tenant, document_stream(tenant, DOC), "document.deleted", {"document_id": DOC, "at": T0}, 2
        ),
        vp.MEMORY: event(
            tenant,
            memory_stream(tenant, "mem-1"),
            "memory.forgotten",
            {
                "memory_id": "mem-1",
                "user_id": USER,
                "by_user_id": USER,
                "owner_namespace": player_scope(USER),
                "forgotten_at": T0,
            },
            2,
        ),
    }
    return {kind: planned(tenant, [env]).deletions for kind, env in events.items()}


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.kind)
def test_the_writers_deletions_find_its_points_of_its_tenant_only(kind: Kind) -> None:
    mine, theirs = planned("t1", kind.events("t1")).points, planned("t2", kind.events("t2")).points
    [flt] = deletions("t1")[kind.kind]
    assert all(matches(flt, p.payload) for p in mine)
    assert not any(matches(flt, p.payload) for p in theirs)


def test_scopes_the_fact_reader_accepts_include_the_character_scope() -> None:
    learned = fact("t1").model_copy(update={"scope": character_scope(BOT)})
    env = event("t1", knowledge_stream("t1", BOT), "knowledge.fact_learned", learned.model_dump(mode="json"))
    [point] = planned("t1", [env]).points
    assert matches(facts_filter(request("t1")), point.payload)


def test_every_indexed_payload_field_is_written() -> None:
    """The adapters index these fields (``mnemo/shared/vectors/port.py``); one the writer no longer writes would
    leave its filters matching nothing."""
    written = {key for k in KINDS for p in planned("t1", k.events("t1")).points for key in p.payload}
    written.add(vp.ANALYZER)  # stamped on every point by the embedding handler, beside the plan
    assert {TENANT_FIELD, *KEYWORD_FIELDS, *INTEGER_FIELDS, *FLOAT_FIELDS} <= written
