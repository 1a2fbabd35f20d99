"""One contract suite for the read-model ports, run on the MongoDB adapters and on the in-memory fakes.

Adapters: the in-memory fakes (``mnemo.shared.readmodels.inmemory``, ``services.*.inmemory``), the MongoDB read
models on the session's SecantusDB (a fresh database per test), and on a real MongoDB when MONGODB_URL is set
(skipped with the reason otherwise). Every test states a behaviour services rely on (idempotent projection,
version filters, tenant scoping, ordering, paging); the ``..._answer_alike`` tests also fold one scenario into a
fake and the SecantusDB adapter side by side and compare every answer, so the fake cannot drift.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    bot_stream,
    character_scope,
    conversation_stream,
    knowledge_stream,
    legacy_lore_stream,
    lore_timed_stream,
    lorebook_stream,
    persona_stream,
    player_scope,
    summary_stream,
)
from mnemo.shared.readmodels import catalog
from mnemo.shared.readmodels.catalog import FakeReadModelPorts, MongoReadModelPorts, ReadModelPorts
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.legacy_lore import LegacyPage
from mnemo.shared.readmodels.lore_timed import TimedPort
from mnemo.shared.readmodels.messages import MessageKey
from mnemo.shared.readmodels.ports import ConversationReadModel, KnowledgePort, LegacyLorePort, LorePort, SummariesPort
from mnemo.shared.readmodels.summaries import SummaryPage
from mnemo.shared.readmodels.witnessed import WitnessedPort
from tests.contract.databases import BACKENDS, backend, fresh_database
from tests.envelopes import message_recorded, recorded

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
T, U, C = "t1", "u1", "c1"


@dataclass
class Ports:
    kind: str
    models: ConversationReadModel
    summaries: SummariesPort
    knowledge: KnowledgePort
    legacy: LegacyLorePort
    lore: LorePort
    witnessed: WitnessedPort
    timed: TimedPort


def ports_of(kind: str, source: ReadModelPorts) -> Ports:
    """Every port of the catalog (``mnemo/shared/readmodels/catalog.py``), from one of its two sources."""
    return Ports(
        kind,
        source.of(catalog.CONVERSATIONS),
        source.of(catalog.SUMMARIES),
        source.of(catalog.KNOWLEDGE),
        source.of(catalog.LEGACY_LORE),
        source.of(catalog.LORE),
        source.of(catalog.WITNESSED),
        source.of(catalog.LORE_TIMED),
    )


def inmemory() -> Ports:
    return ports_of("inmemory", FakeReadModelPorts())


async def on_mongo(db: Any, kind: str) -> Ports:
    await catalog.ensure_indexes(db)
    return ports_of(kind, MongoReadModelPorts(db, FieldCipher(os.urandom(32), InMemoryKeyStore())))


@pytest.fixture(params=BACKENDS)
async def p(request: pytest.FixtureRequest) -> AsyncIterator[Ports]:
    async with backend(request, inmemory, lambda db: on_mongo(db, request.param)) as ports:
        yield ports


@pytest.fixture
async def both(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Ports, Ports]]:
    """A fake and the SecantusDB adapters, to fold one scenario into both and compare the answers."""
    async with fresh_database(request, "secantusdb") as db:
        yield inmemory(), await on_mongo(db, "secantusdb")


async def alike(
    both: tuple[Ports, Ports], ask: Callable[[Ports], Any], norm: Callable[[Any], Any] = lambda x: x
) -> None:
    fake, real = both
    assert norm(await ask(fake)) == norm(await ask(real))


def unordered_keys(facts: list[FactView]) -> list[FactView]:
    """A fact's source keys are a set: MongoDB returns the folded facts' keys in its own scan order."""
    return [replace(f, source_keys=tuple(sorted(f.source_keys))) for f in facts]


# --- events -------------------------------------------------------------------------------------------
def msg(i: int, *, bots: tuple[str, ...] = ("b1",), conv: str = C, tenant: str = T) -> EventEnvelope:
    return message_recorded(
        tenant,
        U,
        conv,
        i,
        f"line {i}",
        created_at=T0 + timedelta(minutes=i),
        role="user" if i % 2 == 0 else "assistant",
        author_name="Ana" if i % 2 == 0 else "Bard",
        bot_ids=bots,
        persona_id="ana" if i % 2 == 0 else None,
    )


def edit(i: int, version: int, content: str) -> EventEnvelope:
    payload = {"user_id": U, "conversation_id": C, "message_id": f"m{i}", "content": content, "tokens": 3}
    payload["edited_at"] = T0 + timedelta(hours=1, minutes=version)
    return recorded(T, conversation_stream(T, U, C), version, "message.edited", payload, T0)


def delete(i: int, version: int) -> EventEnvelope:
    payload = {"user_id": U, "conversation_id": C, "message_id": f"m{i}", "deleted_at": T0 + timedelta(hours=2)}
    return recorded(T, conversation_stream(T, U, C), version, "message.deleted", payload, T0)


def bot(version: int, name: str, tenant: str = T) -> EventEnvelope:
    payload = {"bot_id": "b1", "owner_user_id": U, "name": name, "system_prompt": f"You are {name}."}
    payload |= {"updated_at": T0 + timedelta(minutes=version), "knowledge_sharing": "guarded"}
    return recorded(tenant, bot_stream(tenant, "b1"), version, "bot.recorded", payload, T0)


def persona(version: int, name: str) -> EventEnvelope:
    payload = {"user_id": U, "persona_id": "ana", "name": name, "description": "a sailor", "traits": ["brave"]}
    payload["updated_at"] = T0 + timedelta(minutes=version)
    return recorded(T, persona_stream(T, U, "ana"), version, "persona.recorded", payload, T0)


def conversation_events() -> list[EventEnvelope]:
    """Six messages (the second bot, b2, arrives at m3 and b1 leaves at m5), an edit of m1, a deletion of m2."""
    scenes = [("b1",), ("b1",), ("b1",), ("b1", "b2"), ("b1", "b2"), ("b2",)]
    return [msg(i, bots=scenes[i]) for i in range(6)] + [edit(1, 7, "line 1, edited"), delete(2, 8)]


def summary(sid: str, first: int, last: int, *, audience: tuple[str, ...] = ("*",), version: int = 1, **kw: Any):
    payload: dict[str, Any] = {
        "summary_id": sid, "user_id": U, "conversation_id": kw.pop("conv", C), "summary_type": "short_term",
        "text": f"summary {sid}", "importance": 5, "participants": ["b1", "ana"],
        "start_at": T0 + timedelta(minutes=first), "end_at": T0 + timedelta(minutes=last),
        "message_ids": [f"m{i}" for i in range(first, last + 1)], "first_index": first, "last_index": last,
        "method": "extractive", "audience": list(audience),
    }  # fmt: skip
    payload.update(kw)
    return recorded(T, summary_stream(T, U, C), version, "summary.created", payload, T0)


def retired(sid: str, reason: str, version: int, replaced_by: str | None = None) -> EventEnvelope:
    payload = {"summary_id": sid, "user_id": U, "conversation_id": C, "reason": reason, "replaced_by": replaced_by}
    payload["retired_at"] = T0 + timedelta(hours=3)
    return recorded(T, summary_stream(T, U, C), version, "summary.retired", payload, T0)


def fact(fid: str, version: int, *, subject: str = "ana:home", minute: int = 0, **kw: Any) -> EventEnvelope:
    payload: dict[str, Any] = {
        "fact_id": fid, "character_id": kw.pop("character", "b1"), "character_kind": "bot",
        "user_id": kw.pop("user", U), "conversation_id": C, "text": f"fact {fid}", "subject": subject,
        "fact_type": "semantic", "tags": ["home"], "confidence": 0.75,
        "learned_at": T0 + timedelta(minutes=minute), "scope": player_scope(U),
        "message_ids": kw.pop("messages", [f"m{minute}"]), "method": "pattern",
    }  # fmt: skip
    payload.update(kw)
    kind = "knowledge.facts_consolidated" if "consolidates" in payload else "knowledge.fact_learned"
    return recorded(T, knowledge_stream(T, "b1"), version, kind, payload, T0)


def fact_retired(fid: str, version: int) -> EventEnvelope:
    payload = {"fact_id": fid, "character_id": "b1", "user_id": U, "reason": "stale", "message_id": "m0"}
    payload["retired_at"] = T0 + timedelta(hours=1)
    return recorded(T, knowledge_stream(T, "b1"), version, "knowledge.fact_retired", payload, T0)


def scope_change(fid: str, version: int, to_scope: str, *, promoted: bool = True) -> EventEnvelope:
    payload = {"fact_id": fid, "character_id": "b1", "owner_user_id": U, "by_user_id": U}
    payload |= {"from_scope": player_scope(U), "to_scope": to_scope, "at": T0}
    kind = "knowledge.fact_promoted" if promoted else "knowledge.fact_unpromoted"
    return recorded(T, knowledge_stream(T, "b1"), version, kind, payload, T0)


def legacy(lid: str, memory_id: str, minute: int, *, bots: tuple[str, ...] = ("b1",), **kw: Any) -> EventEnvelope:
    conv = kw.pop("conv", C)
    payload: dict[str, Any] = kw | {
        "legacy_id": lid, "user_id": U, "memory_id": memory_id, "conversation_id": conv, "title": f"title {lid}",
        "text": f"legacy {lid}", "participants": ["ana"], "start_at": T0, "end_at": T0 + timedelta(minutes=minute),
        "importance": 6, "emotional_tags": ["warm"], "applies_to_bots": list(bots), "applies_to_personas": ["ana"],
        "summary_type": "short_term", "method": "extractive", "created_at": T0,
    }  # fmt: skip
    return recorded(T, legacy_lore_stream(T, U, lid), 1, "legacy_lore.created", payload, T0)


def legacy_deleted(lid: str, memory_id: str) -> EventEnvelope:
    payload = {"legacy_id": lid, "user_id": U, "memory_id": memory_id, "deleted_at": T0 + timedelta(hours=1)}
    return recorded(T, legacy_lore_stream(T, U, lid), 2, "legacy_lore.deleted", payload, T0)


def lore_events(book: str = "lb1", tenant: str = T) -> list[EventEnvelope]:
    s = lorebook_stream(tenant, book)
    entry = {"uid": 0, "key": ["harbour"], "content": "The harbour is old."}
    return [
        recorded(tenant, s, 1, "lorebook.created", {"lorebook_id": book, "owner_user_id": U, "name": "Port Vell", "created_at": T0}, T0),
        recorded(tenant, s, 2, "lorebook.entry_created", {"lorebook_id": book, "uid": 0, "entry": entry, "at": T0}, T0),
        recorded(tenant, s, 3, "lorebook.attached", {"lorebook_id": book, "bot_ids": ["b1"], "attached_at": T0}, T0),
    ]  # fmt: skip


def lore_attach_chat(version: int, book: str = "lb1") -> EventEnvelope:
    payload = {"lorebook_id": book, "bot_ids": [], "user_id": U, "conversation_id": C, "attached_at": T0}
    return recorded(T, lorebook_stream(T, book), version, "lorebook.attached", payload, T0)


def lore_deleted(version: int, book: str = "lb1") -> EventEnvelope:
    return recorded(T, lorebook_stream(T, book), version, "lorebook.deleted", {"lorebook_id": book, "at": T0}, T0)


def witnessed(character: str, ids: list[str], first: int, version: int, conv: str = C) -> EventEnvelope:
    payload = {"character_id": character, "character_kind": "bot", "user_id": U, "conversation_id": conv}
    payload |= {"message_ids": ids, "first_index": first, "last_index": first + len(ids) - 1}
    return recorded(T, knowledge_stream(T, character), version, "knowledge.witnessed", payload, T0)


def timed(version: int, count: int, sticky_uid: str) -> EventEnvelope:
    payload = {"user_id": U, "conversation_id": C, "message_count": count, "recorded_at": T0}
    payload |= {"sticky": {sticky_uid: {"hash": "h1", "start": count, "end": count + 2}}, "cooldown": {}}
    return recorded(T, lore_timed_stream(T, U, C), version, "lore.timed_state_recorded", payload, T0)


# --- conversations and messages -------------------------------------------------------------------------
async def test_conversation_projection_is_idempotent_and_counts_what_happened(p: Ports) -> None:
    events = conversation_events()
    after = await p.models.apply(events)
    again = await p.models.apply(list(reversed(events)))  # a redelivery, in another order

    state = after[conversation_stream(T, U, C)]
    assert (state.version, state.message_count, state.edit_count, state.deleted_count) == (8, 6, 1, 1)
    assert again[conversation_stream(T, U, C)] == state
    assert await p.models.conversation(T, U, C) == state
    assert await p.models.conversation("other-tenant", U, C) is None
    assert state.present_bot_ids == ["b2"]
    assert state.persona_id == "ana"


async def test_messages_read_back_edited_deleted_and_by_presence(p: Ports) -> None:
    await p.models.apply(conversation_events())

    lines = await p.models.message_range(T, U, C, 0)
    assert [(m.message_id, m.content) for m in lines] == [
        ("m0", "line 0"), ("m1", "line 1, edited"), ("m3", "line 3"), ("m4", "line 4"), ("m5", "line 5"),
    ]  # fmt: skip
    with_deleted = await p.models.message_range(T, U, C, 1, 3, include_deleted=True)
    assert [(m.message_id, m.deleted) for m in with_deleted] == [("m1", False), ("m2", True)]
    assert [m.message_id for m in await p.models.recent(T, U, C, 2)] == ["m4", "m5"]
    assert [m.message_id for m in await p.models.recent(T, U, C, 2, visible_to="b1")] == ["m3", "m4"]
    assert [m.message_id for m in await p.models.recent(T, U, C, 10, before_index=3)] == ["m0", "m1"]
    assert await p.models.recent(T, U, "no-such-conversation", 3) == []
    by_ids = await p.models.by_ids(T, U, C, ["m5", "m0", "m2", "missing", "m0"], visible_to="b2")
    assert [m.message_id for m in by_ids] == ["m5"]
    assert [m.message_id for m in await p.models.by_ids(T, U, C, ["m4", "m2", "m0"])] == ["m0", "m4"]
    assert await p.models.by_ids("other-tenant", U, C, ["m0"]) == []


async def test_a_late_older_edit_does_not_roll_a_message_back(p: Ports) -> None:
    events = [msg(i) for i in range(2)]
    await p.models.apply([*events, edit(1, 4, "newest")])
    await p.models.apply([edit(1, 3, "older")])  # delivered late

    (line,) = await p.models.by_ids(T, U, C, ["m1"])
    assert line.content == "newest"
    assert line.edited_at == T0 + timedelta(hours=1, minutes=4)


async def test_message_status_without_and_with_the_scene(p: Ports) -> None:
    await p.models.apply(conversation_events())
    keys = [MessageKey(T, U, C, "m2"), MessageKey(T, U, C, "m3"), MessageKey(T, U, C, "nope")]

    plain = await p.models.message_status(keys)
    scene = await p.models.message_status(keys, scene=True)

    assert set(plain) == set(scene) == set(keys[:2])
    assert (plain[keys[0]].index, plain[keys[0]].deleted, plain[keys[0]].version) == (2, True, 8)
    assert plain[keys[1]].bot_ids == ()
    assert scene[keys[1]].bot_ids == ("b1", "b2")
    assert scene[keys[1]].role == "assistant"
    assert scene[keys[1]].created_at == T0 + timedelta(minutes=3)


async def test_conversation_states_for_unknown_streams_are_empty(p: Ports) -> None:
    await p.models.apply([msg(0)])
    other = conversation_stream(T, U, "c-new")

    states = await p.models.conversation_states([conversation_stream(T, U, C), other, other])

    assert list(states) == [conversation_stream(T, U, C), other]
    assert states[conversation_stream(T, U, C)].message_count == 1
    assert (states[other].version, states[other].message_count) == (0, 0)


async def test_profiles_keep_the_newest_version_per_tenant(p: Ports) -> None:
    await p.models.apply([bot(2, "Bard"), persona(1, "Ana")])
    await p.models.apply([bot(1, "Old bard")])  # late
    await p.models.apply([bot(1, "Elsewhere", tenant="t2")])

    view = await p.models.bot(T, "b1")
    assert view is not None
    assert (view.name, view.system_prompt, view.knowledge_sharing) == ("Bard", "You are Bard.", "guarded")
    assert view.updated_at == T0 + timedelta(minutes=2)
    other = await p.models.bot("t2", "b1")
    assert other is not None
    assert other.name == "Elsewhere"
    ana = await p.models.persona(T, U, "ana")
    assert ana is not None
    assert (ana.name, ana.traits, ana.instructions) == ("Ana", ["brave"], "")
    assert await p.models.persona(T, "u2", "ana") is None
    assert await p.models.bot(T, "b9") is None


def forked(conv: str, parent: str, root: str, *, user: str = U) -> EventEnvelope:
    payload = {"user_id": user, "conversation_id": conv, "parent_conversation_id": parent, "from_message_id": "m0",
               "from_index": 0, "root_conversation_id": root, "forked_at": T0}  # fmt: skip
    return recorded(T, conversation_stream(T, user, conv), 1, "conversation.forked", payload, T0)


async def test_a_fork_family_is_its_root_and_every_fork_of_it(p: Ports) -> None:
    await p.models.apply([msg(0), forked("f1", C, C), forked("f2", "f1", C), forked("x1", "other", "other")])
    await p.models.apply([forked("f1", C, C, user="u2")])  # another user's conversation ids are another family

    family = frozenset({C, "f1", "f2"})
    assert await p.models.family(T, U, C) == family
    assert await p.models.family(T, U, "f2") == family
    assert await p.models.family(T, U, "lonely") == frozenset({"lonely"})
    assert await p.models.family(T, "u2", "f1") == frozenset({C, "f1"})
    state = await p.models.conversation(T, U, "f2")
    assert state is not None
    assert (state.forked_from, state.fork_index, state.root_conversation_id) == ("f1", 0, C)


async def test_conversations_are_listed_latest_message_first(p: Ports) -> None:
    await p.models.apply([msg(i, conv="old") for i in range(3)] + [msg(i, conv="new") for i in range(2)])
    await p.models.apply([msg(i, conv="late") for i in range(4)] + [msg(0, tenant="t2")])
    await p.models.apply([forked("empty", C, C), forked("e2", C, C)])

    page, total = await p.models.listing(T, U, limit=3)
    assert ([s.conversation_id for s in page], total) == (["late", "old", "new"], 5)
    rest, _ = await p.models.listing(T, None, limit=10, offset=3)
    assert [s.conversation_id for s in rest] == ["e2", "empty"], "no message yet: last, by stream id"
    assert await p.models.listing(T, "u2", limit=10) == ([], 0)


async def test_conversation_read_models_answer_alike(both: tuple[Ports, Ports]) -> None:
    for ports in both:
        await ports.models.apply(conversation_events())
        await ports.models.apply([bot(1, "Bard"), persona(1, "Ana")])
    await alike(both, lambda q: q.models.conversation(T, U, C))
    await alike(both, lambda q: q.models.message_range(T, U, C, 0, None, include_deleted=True))
    await alike(both, lambda q: q.models.recent(T, U, C, 3, visible_to="b2"))
    await alike(both, lambda q: q.models.by_ids(T, U, C, ["m3", "m1", "m2"], include_deleted=True))
    await alike(both, lambda q: q.models.message_status([MessageKey(T, U, C, f"m{i}") for i in range(7)], scene=True))
    await alike(both, lambda q: q.models.bot(T, "b1"))
    await alike(both, lambda q: q.models.persona(T, U, "ana"))


# --- summaries ------------------------------------------------------------------------------------------
async def test_summaries_live_recent_and_retired(p: Ports) -> None:
    events = [
        summary("s1", 0, 4, audience=("b1", "ana"), version=1),
        summary("s2", 5, 9, audience=("*",), version=2),
        summary("s3", 10, 14, audience=("b2",), version=3),
        retired("s1", "stale", 4, replaced_by="s4"),
    ]
    await p.summaries.apply(events)
    await p.summaries.apply(events[:1])  # a late redelivered creation does not revive s1

    live = await p.summaries.live_summaries(T, U, C)
    assert [s.summary_id for s in live] == ["s2", "s3"]
    assert [s.summary_id for s in await p.summaries.live_summaries(T, U, C, audience_member="b1")] == ["s2"]
    recent = await p.summaries.recent_summaries(T, U, C, limit=2)
    assert [(s.summary_id, s.status) for s in recent] == [("s3", "active"), ("s2", "active")]
    (s1,) = await p.summaries.by_ids(T, ["s1"])
    assert (s1.status, s1.replaced_by, s1.text, s1.audience) == ("stale", "s4", "summary s1", ("b1", "ana"))
    assert await p.summaries.inactive(T, ["s1", "s2", "nope"]) == {"s1"}
    assert await p.summaries.inactive("t2", ["s1"]) == set()


async def test_summary_retired_before_created_stays_retired(p: Ports) -> None:
    await p.summaries.apply([retired("s1", "consolidated", 2, replaced_by="s9")])
    assert await p.summaries.by_ids(T, ["s1"]) == []  # a stub is not a summary
    assert await p.summaries.inactive(T, ["s1"]) == {"s1"}

    await p.summaries.apply([summary("s1", 0, 4)])

    (s1,) = await p.summaries.by_ids(T, ["s1"])
    assert (s1.status, s1.replaced_by) == ("consolidated", "s9")
    assert await p.summaries.live_summaries(T, U, C) == []


async def test_summaries_by_ids_keeps_the_order_asked_and_the_scope(p: Ports) -> None:
    await p.summaries.apply([summary("s1", 0, 4), summary("s2", 5, 9, conv="c2")])

    assert [s.summary_id for s in await p.summaries.by_ids(T, ["s2", "s1", "nope"])] == ["s2", "s1"]
    assert [s.summary_id for s in await p.summaries.by_ids(T, ["s2", "s1"], conversation_id="c2")] == ["s2"]
    assert await p.summaries.by_ids(T, ["s1"], user_id="u2") == []
    assert await p.summaries.by_ids("t2", ["s1"]) == []
    assert await p.summaries.by_ids(T, []) == []


async def test_a_summary_names_the_messages_it_cites_and_an_old_one_all_it_covers(p: Ports) -> None:
    cites = [{"message_id": "m3", "start": 0, "end": 4}, {"message_id": "m1", "start": 5, "end": 9}]
    await p.summaries.apply([summary("s1", 0, 4, citations=cites), summary("s2", 5, 9, version=2)])

    s1, s2 = await p.summaries.by_ids(T, ["s1", "s2"])
    assert s1.cited_message_ids == ("m3", "m1"), "in the order of the text"
    assert s1.message_ids == ("m0", "m1", "m2", "m3", "m4"), "it still covers its whole range"
    assert s2.cited_message_ids == s2.message_ids, "recorded without citations: derived from all it covers"


async def test_a_legacy_memory_names_the_messages_it_was_derived_from(p: Ports) -> None:
    await p.legacy.apply([legacy("l1", "s1", 1, message_ids=["m3", "m1"]), legacy("l2", "s2", 2)])

    l1, l2 = await p.legacy.by_ids(T, ["l1", "l2"], user_id=U)
    assert (l1.message_ids, l2.message_ids) == (("m3", "m1"), ()), "an entry recorded before the field has none"


async def test_summaries_page_in_listing_order(p: Ports) -> None:
    events = [summary(f"s{i}", i * 5, i * 5 + 4, version=i + 1) for i in range(5)]
    events.append(summary("s9", 3, 7, version=6, summary_type="long_term", participants=["b2"]))
    events += [retired("s1", "consolidated", 7, replaced_by="s9"), retired("s2", "deleted", 8)]
    await p.summaries.apply(events)

    first, total = await p.summaries.listed(SummaryPage(T, U), 0, 2)
    second, _ = await p.summaries.listed(SummaryPage(T, U), 2, 2)
    assert total == 4
    assert [s.view.summary_id for s in first + second] == ["s4", "s3", "s9", "s0"]
    retired_too, total_retired = await p.summaries.listed(SummaryPage(T, U, include_retired=True), 0, 10)
    assert total_retired == 5
    assert [(s.view.summary_id, s.status) for s in retired_too] == [
        ("s4", "active"), ("s3", "active"), ("s1", "consolidated"), ("s9", "active"), ("s0", "active"),
    ]  # fmt: skip
    assert (await p.summaries.listed(SummaryPage(T, U, summary_type="long_term"), 0, 5))[1] == 1
    assert [s.view.summary_id for s in (await p.summaries.listed(SummaryPage(T, U, participant="b2"), 0, 5))[0]] == [
        "s9"
    ]
    only, n = await p.summaries.listed(SummaryPage(T, U, only_ids=["s0", "s3", "s2"], except_ids=["s3"]), 0, 5)
    assert ([s.view.summary_id for s in only], n) == (["s0"], 1)
    assert await p.summaries.listed(SummaryPage(T, U), 0, 0) == ([], 4)
    assert await p.summaries.listed(SummaryPage("t2", U), 0, 5) == ([], 0)


async def test_summaries_answer_alike(both: tuple[Ports, Ports]) -> None:
    events = [summary(f"s{i}", i * 5, i * 5 + 4, version=i + 1, emotional_context="calm") for i in range(4)]
    events += [retired("s1", "stale", 5, replaced_by="s3"), retired("s7", "deleted", 6)]
    for ports in both:
        await ports.summaries.apply(events)
    await alike(both, lambda q: q.summaries.live_summaries(T, U, C, audience_member="b1"))
    await alike(both, lambda q: q.summaries.recent_summaries(T, U, C))
    await alike(both, lambda q: q.summaries.by_ids(T, ["s3", "s1", "s7"], user_id=U))
    await alike(both, lambda q: q.summaries.inactive(T, ["s1", "s3", "s7"]))
    await alike(both, lambda q: q.summaries.listed(SummaryPage(T, U, include_retired=True), 1, 3))


# --- knowledge ------------------------------------------------------------------------------------------
async def test_newer_fact_on_a_subject_supersedes_the_older(p: Ports) -> None:
    events = [fact("f1", 1, minute=1), fact("f2", 2, minute=2), fact("f3", 3, subject="ana:age", minute=3)]
    await p.knowledge.apply(events)
    await p.knowledge.apply(events)  # redelivered

    current = await p.knowledge.facts_for(T, "b1", user_id=U)
    assert [f.fact_id for f in current] == ["f3", "f2"]
    owned = await p.knowledge.owned(T, "b1", U)
    assert [(f.fact_id, f.status) for f in owned] == [("f3", "active"), ("f2", "active"), ("f1", "superseded")]
    assert [f.fact_id for f in await p.knowledge.facts_for(T, "b1", user_id=U, limit=1)] == ["f3"]
    assert await p.knowledge.facts_for(T, "b1", user_id="u2") == []
    assert await p.knowledge.facts_for("t2", "b1", user_id=U) == []


async def test_a_stream_is_caught_up_through_the_highest_version_marked_per_tenant(p: Ports) -> None:
    stream, other = knowledge_stream(T, "b1"), knowledge_stream(T, "b2")
    assert await p.knowledge.caught_up(T, [stream, other]) == {stream: 0, other: 0}, "nothing known yet"
    await p.knowledge.mark_caught_up(T, {stream: 5})
    await p.knowledge.mark_caught_up(T, {stream: 3, other: 2})  # a slower writer's older catch-up
    await p.knowledge.mark_caught_up(T, {})
    assert await p.knowledge.caught_up(T, [stream, other]) == {stream: 5, other: 2}, "never moves back"
    assert await p.knowledge.caught_up("t2", [stream]) == {stream: 0}, "another tenant's positions are its own"


async def test_facts_as_of_a_time_are_those_learned_by_then_current_among_them(p: Ports) -> None:
    await p.knowledge.apply([fact("f1", 1, minute=1), fact("f2", 2, minute=2), fact("f3", 3, minute=3, subject="x")])

    then = await p.knowledge.facts_for(T, "b1", user_id=U, learned_by=T0 + timedelta(minutes=1))
    assert [f.fact_id for f in then] == ["f1"], "f2 superseded it later: not at minute 1"
    at_2 = await p.knowledge.facts_for(T, "b1", user_id=U, learned_by=T0 + timedelta(minutes=2))
    assert [f.fact_id for f in at_2] == ["f2"], "learned exactly then counts"
    assert [f.fact_id for f in await p.knowledge.facts_for(T, "b1", user_id=U)] == ["f3", "f2"]


async def test_facts_of_excluded_conversations_neither_count_nor_supersede(p: Ports) -> None:
    await p.knowledge.apply([fact("f1", 1, minute=1), fact("f2", 2, minute=2, conversation_id="fork")])
    await p.knowledge.apply([fact("f3", 3, minute=3, conversation_id="fork", user="u2", scope=player_scope("u2"))])

    assert [f.fact_id for f in await p.knowledge.facts_for(T, "b1", user_id=U)] == ["f2"]
    kept = await p.knowledge.facts_for(T, "b1", user_id=U, exclude_conversations={"fork"})
    assert [f.fact_id for f in kept] == ["f1"], "the fork's newer fact on the subject supersedes nothing"
    owned = await p.knowledge.owned(T, "b1", U, exclude_conversations={"fork"})
    assert [(f.fact_id, f.status) for f in owned] == [("f1", "active")]
    assert [f.fact_id for f in await p.knowledge.owned(T, "b1", "u2", exclude_conversations={"c1"})] == ["f3"]


async def test_scope_changes_follow_versions_and_widen_who_sees_a_fact(p: Ports) -> None:
    await p.knowledge.apply([fact("f1", 1, minute=1)])
    await p.knowledge.apply([scope_change("f1", 3, character_scope("b1"))])
    await p.knowledge.apply([scope_change("f1", 2, player_scope(U), promoted=False)])  # late, older

    got = await p.knowledge.by_id(T, "f1")
    assert got is not None
    assert got.scope == character_scope("b1")
    assert await p.knowledge.scope_versions(T, ["f1", "nope"]) == {"f1": 3}
    assert [f.fact_id for f in await p.knowledge.facts_for(T, "b1", user_id="u2")] == ["f1"]
    assert await p.knowledge.by_id("t2", "f1") is None


async def test_consolidation_and_retirement(p: Ports) -> None:
    facts = [fact("f1", 1, subject="a", minute=1), fact("f2", 2, subject="b", minute=2)]
    merged = fact("f3", 3, subject="ab", minute=3, consolidates=["f1", "f2"], messages=["m3"])
    await p.knowledge.apply([*facts, merged, fact("f4", 4, subject="c", minute=4), fact_retired("f4", 5)])

    assert [f.fact_id for f in await p.knowledge.facts_for(T, "b1", user_id=U)] == ["f3"]
    by_ids = await p.knowledge.by_ids(T, ["f4", "f1", "nope", "f3"])
    assert [(f.fact_id, f.status) for f in by_ids] == [("f4", "retired"), ("f1", "consolidated"), ("f3", "active")]
    assert set(by_ids[2].source_keys) == {f"{C}\x1fm1", f"{C}\x1fm2", f"{C}\x1fm3"}
    assert by_ids[2].consolidates == ("f1", "f2")
    assert [f.fact_id for f in await p.knowledge.derived_from(T, U, C, "m1")] == ["f3"]
    assert await p.knowledge.derived_from(T, U, C, "m4") == []
    assert await p.knowledge.derived_from(T, "u2", C, "m1") == []


async def test_knowledge_page_lists_newest_first_with_supersession(p: Ports) -> None:
    events = [fact(f"f{i}", i, subject="s" if i < 3 else f"s{i}", minute=i) for i in range(1, 6)]
    events += [fact("g1", 6, character="b2", minute=6), fact_retired("f5", 7)]
    await p.knowledge.apply(events)

    page, total = await p.knowledge.page(T, U, limit=3)
    assert total == 5
    assert [(f.fact_id, f.status) for f in page] == [("g1", "active"), ("f4", "active"), ("f3", "active")]
    rest, _ = await p.knowledge.page(T, U, limit=3, offset=3)
    assert [(f.fact_id, f.status) for f in rest] == [("f2", "active"), ("f1", "superseded")]
    everything, n = await p.knowledge.page(T, U, character_id="b1", include_inactive=True, limit=10)
    assert (n, everything[0].fact_id, everything[0].status) == (5, "f5", "retired")
    assert (await p.knowledge.page(T, U, fact_type="episodic"))[1] == 0
    assert await p.knowledge.page(T, "u2") == ([], 0)


async def test_knowledge_answers_alike(both: tuple[Ports, Ports]) -> None:
    events = [fact(f"f{i}", i, subject="s" if i < 3 else f"s{i}", minute=i) for i in range(1, 5)]
    events += [fact("f5", 5, subject="m", minute=5, consolidates=["f3", "f4"], messages=["m9"])]
    events += [scope_change("f5", 6, character_scope("b1")), fact_retired("f2", 7)]
    for ports in both:
        await ports.knowledge.apply(events)
    await alike(both, lambda q: q.knowledge.facts_for(T, "b1", user_id="u2"), unordered_keys)
    await alike(both, lambda q: q.knowledge.owned(T, "b1", U), unordered_keys)
    await alike(
        both,
        lambda q: q.knowledge.page(T, U, include_inactive=True, limit=4, offset=1),
        lambda r: (unordered_keys(r[0]), r[1]),
    )
    await alike(both, lambda q: q.knowledge.by_ids(T, ["f5", "f3", "f2"]), unordered_keys)
    await alike(both, lambda q: q.knowledge.scope_versions(T, ["f1", "f5"]))
    await alike(both, lambda q: q.knowledge.derived_from(T, U, C, "m3"), unordered_keys)
    await alike(both, lambda q: q.knowledge.in_conversation(T, U, C), unordered_keys)


async def test_knowledge_in_conversation_lists_every_status(p: Ports) -> None:
    events = [fact("f1", 1, subject="s", minute=1), fact("f2", 2, subject="s", minute=2), fact_retired("f1", 3)]
    events += [fact("g1", 4, subject="t", minute=4, character="b2")]
    await p.knowledge.apply(events)

    found = await p.knowledge.in_conversation(T, U, C)
    assert [(f.fact_id, f.status) for f in found] == [("g1", "active"), ("f2", "active"), ("f1", "retired")]
    assert await p.knowledge.in_conversation(T, "u2", C) == []
    assert await p.knowledge.in_conversation(T, U, "another") == []


# --- legacy lore ----------------------------------------------------------------------------------------
async def test_legacy_lore_live_deleted_and_paged(p: Ports) -> None:
    events = [legacy("l1", "s1", 1), legacy("l2", "s2", 2, bots=("b2",)), legacy("l3", "s3", 3)]
    await p.legacy.apply([*events, legacy_deleted("l3", "s3")])
    await p.legacy.apply(events)  # a late redelivered creation does not revive l3

    assert [v.legacy_id for v in await p.legacy.by_ids(T, ["l2", "l3", "l1"], user_id=U)] == ["l2", "l1"]
    assert await p.legacy.by_ids(T, ["l1"], user_id="u2") == []
    assert set(await p.legacy.for_memories(T, ["s1", "s3"])) == {"s1"}
    assert await p.legacy.deleted(T, ["l1", "l3"]) == {"l3"}
    assert sorted(await p.legacy.converted_memory_ids(T, U)) == ["s1", "s2"]
    page, total = await p.legacy.listed(LegacyPage(T, U), 0, 1)
    assert ([v.legacy_id for v in page], total) == (["l2"], 2)
    assert [v.legacy_id for v in (await p.legacy.listed(LegacyPage(T, U, bot_id="b1"), 0, 5))[0]] == ["l1"]
    (l1,) = await p.legacy.by_ids(T, ["l1"], user_id=U)
    assert (l1.title, l1.text, l1.emotional_tags, l1.applies_to) == ("title l1", "legacy l1", ("warm",), ("ana", "b1"))


async def test_the_listing_pages_narrow_to_one_conversation(p: Ports) -> None:
    await p.summaries.apply([summary("s1", 0, 4), summary("s2", 5, 9, version=2, conv="c2")])
    await p.legacy.apply([legacy("l1", "s1", 1), legacy("l2", "s2", 2, conv="c2")])
    await p.knowledge.apply([fact("f1", 1, minute=1), fact("f2", 2, subject="ana:job", minute=2, conversation_id="c2")])

    assert [
        s.view.summary_id for s in (await p.summaries.listed(SummaryPage(T, U, conversation_id="c2"), 0, 5))[0]
    ] == ["s2"]
    assert [s.view.summary_id for s in (await p.summaries.listed(SummaryPage(T, U, conversation_id=C), 0, 5))[0]] == [
        "s1"
    ]
    assert [v.legacy_id for v in (await p.legacy.listed(LegacyPage(T, U, conversation_id="c2"), 0, 5))[0]] == ["l2"]
    assert [v.legacy_id for v in (await p.legacy.listed(LegacyPage(T, U, conversation_id=C), 0, 5))[0]] == ["l1"]
    assert [f.fact_id for f in (await p.knowledge.page(T, U, conversation_id="c2"))[0]] == ["f2"]
    assert [f.fact_id for f in (await p.knowledge.page(T, U, conversation_id=C))[0]] == ["f1"]
    assert await p.knowledge.page(T, U, conversation_id="c9") == ([], 0)
    assert (await p.summaries.listed(SummaryPage(T, U), 0, 5))[1] == 2, "no conversation given: every conversation's"


async def test_legacy_lore_answers_alike(both: tuple[Ports, Ports]) -> None:
    events = [legacy(f"l{i}", f"s{i}", i % 3) for i in range(5)] + [legacy_deleted("l2", "s2")]
    for ports in both:
        await ports.legacy.apply(events)
    await alike(both, lambda q: q.legacy.listed(LegacyPage(T, U), 1, 3))
    await alike(both, lambda q: q.legacy.for_memories(T, ["s0", "s2", "s4"], user_id=U))
    await alike(both, lambda q: q.legacy.by_ids(T, ["l4", "l0"], user_id=U))


# --- lorebooks ------------------------------------------------------------------------------------------
async def test_lorebooks_fold_attach_and_delete(p: Ports) -> None:
    await p.lore.apply(lore_events())
    await p.lore.apply(lore_events()[1:])  # redelivered tail

    view = await p.lore.book(T, "lb1")
    assert view is not None
    assert (view.name, view.version, [e.content for e in view.book.entries]) == (
        "Port Vell",
        3,
        ["The harbour is old."],
    )
    assert [(r.lorebook_id, r.version, r.source) for r in await p.lore.attached(T, "b1")] == [("lb1", 3, "character")]
    assert await p.lore.attached(T, "b2") == []
    assert await p.lore.book("t2", "lb1") is None

    await p.lore.apply([lore_attach_chat(4)])
    refs = await p.lore.attached(T, "b1", U, C)
    assert [(r.lorebook_id, r.version, r.source) for r in refs] == [("lb1", 4, "chat")]
    assert [r.source for r in await p.lore.attached(T, "b9", U, C)] == ["chat"]

    await p.lore.apply([lore_deleted(5)])
    assert await p.lore.book(T, "lb1") is None
    assert await p.lore.attached(T, "b1", U, C) == []
    state = await p.lore.state(T, "lb1")
    assert state is not None
    assert (state.deleted, state.version) == (True, 5)


async def test_a_books_attachments_follow_its_attaches_and_detaches(p: Ports) -> None:
    s = lorebook_stream(T, "lb1")

    def change(version: int, kind: str, bots: list[str]) -> EventEnvelope:
        return recorded(T, s, version, f"lorebook.{kind}", {"lorebook_id": "lb1", "bot_ids": bots, f"{kind}_at": T0}, T0)  # fmt: skip

    async def bots_with_the_book() -> list[str]:
        return [b for b in ("b1", "b2", "b3", "b4") if await p.lore.attached(T, b)]

    await p.lore.apply(lore_events())  # attached to b1
    await p.lore.apply([change(4, "attached", ["b2", "b3", "b2"])])
    assert await bots_with_the_book() == ["b1", "b2", "b3"]
    await p.lore.apply([change(5, "detached", ["b1", "b3"]), change(6, "attached", ["b4"])])
    assert await bots_with_the_book() == ["b2", "b4"]
    assert [r.version for r in await p.lore.attached(T, "b4")] == [6]
    await p.lore.apply([change(7, "detached", ["b2", "b4"])])
    assert await bots_with_the_book() == []


async def test_lorebooks_answer_alike(both: tuple[Ports, Ports]) -> None:
    for ports in both:
        await ports.lore.apply([*lore_events("lb1"), *lore_events("lb2"), lore_attach_chat(4, "lb2")])
    await alike(both, lambda q: q.lore.state(T, "lb1"))
    await alike(both, lambda q: q.lore.books_by_ids(T, ["lb2", "lb1", "nope"]))
    await alike(both, lambda q: q.lore.attached(T, "b1", U, C))
    await alike(both, lambda q: q.lore.list_books(T))
    await alike(both, lambda q: q.lore.list_books(T, U))
    await alike(both, lambda q: q.lore.list_books(T, "nobody"))


async def test_lorebooks_are_listed_by_tenant_and_owner_without_deleted_ones(p: Ports) -> None:
    await p.lore.apply(
        [*lore_events("lb1"), *lore_events("lb2"), *lore_events("lb1", tenant="t2"), lore_deleted(4, "lb2")]
    )
    assert [(s.tenant_id, s.lorebook_id, s.name) for s in await p.lore.list_books(T)] == [(T, "lb1", "Port Vell")]
    [listed] = await p.lore.list_books(T)
    assert (listed.owner_user_id, listed.entries, listed.targets, listed.version) == (U, 1, (bot_stream(T, "b1"),), 3)
    assert [s.lorebook_id for s in await p.lore.list_books(T, U)] == ["lb1"]
    assert await p.lore.list_books(T, "someone-else") == []


# --- witnessed and lore_timed (single-service read models) ----------------------------------------------
async def test_witnessed_messages_per_character(p: Ports) -> None:
    events = [witnessed("b1", ["m0", "m1"], 0, 1), witnessed("b1", ["m4"], 4, 2), witnessed("b2", ["m4"], 4, 1)]
    events.append(witnessed("b1", ["x0"], 0, 3, conv="c0"))
    await p.witnessed.apply(events)
    await p.witnessed.apply(events)

    assert await p.witnessed.witnesses(T, "b1", ["m1", "m2", "m4"]) == {"m1", "m4"}
    assert await p.witnessed.witnesses(T, "b2", ["m1"]) == set()
    assert await p.witnessed.witnesses("t2", "b1", ["m1"]) == set()
    assert await p.witnessed.known_message_ids(T, "b1") == ["x0", "m0", "m1", "m4"]
    assert await p.witnessed.known_message_ids(T, "b1", user_id=U, conversation_id=C, limit=2) == ["m0", "m1"]


async def test_lore_timed_keeps_the_newest_state(p: Ports) -> None:
    await p.timed.apply([timed(2, 7, "lb1.0")])
    await p.timed.apply([timed(1, 3, "lb1.1")])  # late

    view = await p.timed.state(T, U, C)
    assert (view.version, view.message_count, sorted(view.sticky)) == (2, 7, ["lb1.0"])
    empty = await p.timed.state("t2", U, C)
    assert (empty.version, empty.sticky) == (0, {})
