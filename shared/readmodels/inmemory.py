"""In-memory fakes of the shared read models (the ports in ``ports.py``), for component tests without servers.

Each folds the same events with the same rules as its MongoDB adapter (idempotent on redelivery, version
filters, tenant scoping, ordering of every query) and keeps plain values: nothing is encrypted, which is
the one thing the adapters do that a fake need not. ``tests/contract/test_readmodels_contract.py`` runs one
suite on both, so the two cannot drift.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from shared.events.envelope import EventEnvelope, stream_parts
from shared.events.recorded import (
    BOT_RECORDED,
    EVERYONE,
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    LEGACY_LORE_CREATED,
    LEGACY_LORE_DELETED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    PERSONA_RECORDED,
    BotRecorded,
    FactLearned,
    FactRetired,
    FactsConsolidated,
    FactScopeChanged,
    LegacyLoreCreated,
    LegacyLoreDeleted,
    MessageDeleted,
    MessageEdited,
    MessageRecorded,
    PersonaRecorded,
    SummaryCreated,
    SummaryRetired,
    bot_stream,
    campaign_scope,
    character_scope,
    conversation_stream,
    persona_stream,
    player_scope,
)
from shared.lore.history import LORE_EVENTS, BookState, fold_all
from shared.lore.model import Lorebook
from shared.presence import bot_may_see
from shared.readmodels.conversation import ConversationState, as_utc, fold
from shared.readmodels.knowledge import ACTIVE, FactView, source_key, with_supersession
from shared.readmodels.legacy_lore import LegacyLoreView
from shared.readmodels.lore import LorebookRef, LorebookView, LoreSource
from shared.readmodels.messages import MessageKey, MessageStatus, MessageView, message_doc_id
from shared.readmodels.ports import ConversationReadModel, KnowledgePort, LegacyLorePort, LorePort, SummariesPort
from shared.readmodels.profiles import BotView, PersonaView
from shared.readmodels.summaries import SummaryListed, SummaryView


def _naive_utc(value: datetime) -> datetime:
    """A datetime as MongoDB hands it back to a client that is not tz-aware: UTC, without tzinfo."""
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


# --- conversations, messages, profiles ----------------------------------------------------------------
class InMemoryReadModels:
    """``ReadModels`` in memory (port: ``ConversationReadModel``)."""

    def __init__(self) -> None:
        self.states: dict[str, ConversationState] = {}
        self.messages: dict[str, tuple[MessageView, int]] = {}  # doc id -> (view, version)
        self.bots: dict[str, tuple[BotView, int]] = {}
        self.personas: dict[str, tuple[PersonaView, int]] = {}

    async def apply(
        self, envelopes: Iterable[EventEnvelope], *, known_states: Mapping[str, ConversationState] | None = None
    ) -> dict[str, ConversationState]:
        by_stream: dict[str, list[EventEnvelope]] = defaultdict(list)
        for env in envelopes:
            by_stream[env.stream_id].append(env)
        conversation_streams: list[str] = []
        for sid, events in by_stream.items():
            events.sort(key=lambda e: e.version)
            if stream_parts(sid)[0] == "conversation":
                conversation_streams.append(sid)
            for env in events:
                self._message(env)
                self._profile(env)
        before = dict(known_states or {})
        missing = [s for s in conversation_streams if s not in before]
        before.update(await self.conversation_states(missing))
        after = {s: fold(before[s], by_stream[s]) for s in conversation_streams}
        for s, st in after.items():
            stored = self.states.get(s)
            if st.version > before[s].version and (stored is None or stored.version < st.version):
                self.states[s] = st
        return after

    def _message(self, env: EventEnvelope) -> None:
        if env.type == MESSAGE_RECORDED.name:
            m = MessageRecorded.model_validate(env.payload)
            doc_id = message_doc_id(env.tenant_id, m.user_id, m.conversation_id, m.message_id)
            if doc_id not in self.messages:
                view = MessageView(
                    tenant_id=env.tenant_id,
                    user_id=m.user_id,
                    conversation_id=m.conversation_id,
                    message_id=m.message_id,
                    index=m.index,
                    role=m.role,
                    author_id=m.author_id,
                    author_name=m.author_name or "",
                    content=m.content or "",
                    created_at=as_utc(m.created_at),
                    bot_ids=list(m.bot_ids),
                    persona_id=m.persona_id,
                    tokens=m.tokens,
                    deleted=False,
                    edited_at=None,
                    deleted_at=None,
                )
                self.messages[doc_id] = (view, env.version)
        elif env.type == MESSAGE_EDITED.name:
            e = MessageEdited.model_validate(env.payload)
            doc_id = message_doc_id(env.tenant_id, e.user_id, e.conversation_id, e.message_id)
            if (found := self.messages.get(doc_id)) and found[1] < env.version:
                edited = replace(found[0], content=e.content, tokens=e.tokens, edited_at=as_utc(e.edited_at))
                self.messages[doc_id] = (edited, env.version)
        elif env.type == MESSAGE_DELETED.name:
            d = MessageDeleted.model_validate(env.payload)
            doc_id = message_doc_id(env.tenant_id, d.user_id, d.conversation_id, d.message_id)
            if (found := self.messages.get(doc_id)) and found[1] < env.version:
                gone = replace(found[0], deleted=True, deleted_at=as_utc(d.deleted_at))
                self.messages[doc_id] = (gone, env.version)

    def _profile(self, env: EventEnvelope) -> None:
        if env.type == BOT_RECORDED.name:
            b = BotRecorded.model_validate(env.payload)
            doc_id = bot_stream(env.tenant_id, b.bot_id)
            if (old := self.bots.get(doc_id)) is None or old[1] < env.version:
                bot = BotView(
                    tenant_id=env.tenant_id,
                    bot_id=b.bot_id,
                    owner_user_id=b.owner_user_id,
                    name=b.name,
                    system_prompt=b.system_prompt or "",
                    updated_at=as_utc(b.updated_at),
                    gender=b.gender,
                    age=b.age,
                    knowledge_sharing=b.knowledge_sharing,
                )
                self.bots[doc_id] = (bot, env.version)
        elif env.type == PERSONA_RECORDED.name:
            p = PersonaRecorded.model_validate(env.payload)
            doc_id = persona_stream(env.tenant_id, p.user_id, p.persona_id)
            if (old_p := self.personas.get(doc_id)) is None or old_p[1] < env.version:
                persona = PersonaView(
                    tenant_id=env.tenant_id,
                    user_id=p.user_id,
                    persona_id=p.persona_id,
                    name=p.name,
                    description=p.description or "",
                    traits=[str(t) for t in p.traits],
                    updated_at=as_utc(p.updated_at),
                    instructions=p.instructions or "",
                )
                self.personas[doc_id] = (persona, env.version)

    async def conversation_states(self, stream_ids: Sequence[str]) -> dict[str, ConversationState]:
        unique = list(dict.fromkeys(stream_ids))
        return {s: self.states.get(s) or ConversationState.for_stream(s) for s in unique}

    async def conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None:
        return self.states.get(conversation_stream(tenant_id, user_id, conversation_id))

    async def message_status(
        self, keys: Iterable[MessageKey], *, scene: bool = False
    ) -> dict[MessageKey, MessageStatus]:
        out: dict[MessageKey, MessageStatus] = {}
        for key in keys:
            found = self.messages.get(message_doc_id(*key))
            if found is None:
                continue
            m, version = found
            status = MessageStatus(index=m.index, deleted=m.deleted, version=version)
            if scene:
                status = replace(
                    status,
                    role=m.role,
                    author_id=m.author_id,
                    bot_ids=tuple(m.bot_ids),
                    persona_id=m.persona_id,
                    created_at=m.created_at,
                )
            out[key] = status
        return out

    def _of(self, tenant_id: str, user_id: str, conversation_id: str) -> list[MessageView]:
        return [
            m
            for m, _ in self.messages.values()
            if (m.tenant_id, m.user_id, m.conversation_id) == (tenant_id, user_id, conversation_id)
        ]

    async def message_range(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        start_index: int,
        end_index: int | None = None,
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        found = [
            m
            for m in self._of(tenant_id, user_id, conversation_id)
            if start_index <= m.index and (end_index is None or m.index < end_index)
        ]
        return sorted((m for m in found if _wanted(m, include_deleted, visible_to)), key=lambda m: m.index)

    async def recent(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        limit: int,
        *,
        before_index: int | None = None,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        if limit <= 0:
            return []
        end = before_index
        if end is None:
            state = await self.conversation(tenant_id, user_id, conversation_id)
            if state is None:
                return []
            end = state.message_count
        found = await self.message_range(tenant_id, user_id, conversation_id, 0, end, visible_to=visible_to)
        return found[-limit:]

    async def by_ids(
        self,
        tenant_id: str,
        user_id: str,
        conversation_id: str,
        message_ids: Iterable[str],
        *,
        include_deleted: bool = False,
        visible_to: str | None = None,
    ) -> list[MessageView]:
        ids = [message_doc_id(tenant_id, user_id, conversation_id, m) for m in dict.fromkeys(message_ids)]
        found = [self.messages[i][0] for i in ids if i in self.messages]
        return sorted((m for m in found if _wanted(m, include_deleted, visible_to)), key=lambda m: m.index)

    async def bot(self, tenant_id: str, bot_id: str) -> BotView | None:
        found = self.bots.get(bot_stream(tenant_id, bot_id))
        return found[0] if found else None

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaView | None:
        found = self.personas.get(persona_stream(tenant_id, user_id, persona_id))
        return found[0] if found else None


def _wanted(m: MessageView, include_deleted: bool, visible_to: str | None) -> bool:
    if m.deleted and not include_deleted:
        return False
    return visible_to is None or bot_may_see(visible_to, m.bot_ids or ())


# --- summaries ------------------------------------------------------------------------------------------
class InMemorySummaries:
    """``SummariesReadModel`` in memory (port: ``SummariesPort``)."""

    def __init__(self) -> None:
        self.docs: dict[str, dict[str, Any]] = {}  # summary id -> fields (no "text" while a retirement stub)

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            if env.type == "summary.created":
                s = SummaryCreated.model_validate(env.payload)
                doc = self.docs.get(s.summary_id)
                if doc is not None and doc["tenant_id"] != env.tenant_id:
                    continue  # another tenant's id: the adapter's upsert fails on _id
                fields = {"tenant_id": env.tenant_id, **s.model_dump(exclude={"summary_id"})}
                fields["start_at"] = _naive_utc(s.start_at)
                fields["end_at"] = _naive_utc(s.end_at)
                if doc is None:
                    self.docs[s.summary_id] = {**fields, "status": "active", "replaced_by": None}
                else:
                    doc.update(fields)
            elif env.type == "summary.retired":
                r = SummaryRetired.model_validate(env.payload)
                doc = self.docs.setdefault(r.summary_id, {"tenant_id": env.tenant_id})
                if doc["tenant_id"] == env.tenant_id:
                    doc.update(status=r.reason, replaced_by=r.replaced_by)

    @staticmethod
    def _view(summary_id: str, d: dict[str, Any]) -> SummaryView:
        return SummaryView(
            summary_id=summary_id,
            tenant_id=d["tenant_id"],
            user_id=d["user_id"],
            conversation_id=d["conversation_id"],
            summary_type=d["summary_type"],
            text=str(d["text"]),
            importance=int(d["importance"]),
            participants=tuple(d.get("participants", ())),
            start_at=d["start_at"],
            end_at=d["end_at"],
            message_ids=tuple(d.get("message_ids", ())),
            first_index=int(d["first_index"]),
            last_index=int(d["last_index"]),
            method=d["method"],
            audience=tuple(d.get("audience", (EVERYONE,))),
            consolidates=tuple(d.get("consolidates", ())),
            status=str(d.get("status", "active")),
            replaced_by=d.get("replaced_by"),
            prompt_version=d.get("prompt_version"),
            emotional_context=d.get("emotional_context"),
        )

    def _created(self, tenant_id: str) -> list[tuple[str, dict[str, Any]]]:
        return [(i, d) for i, d in self.docs.items() if d["tenant_id"] == tenant_id and "text" in d]

    async def recent_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int = 10
    ) -> list[SummaryView]:
        mine = [
            (i, d)
            for i, d in self._created(tenant_id)
            if (d["user_id"], d["conversation_id"]) == (user_id, conversation_id)
        ]
        mine.sort(key=lambda p: -int(p[1]["last_index"]))
        return [self._view(i, d) for i, d in mine[:limit]]

    async def by_ids(
        self,
        tenant_id: str,
        summary_ids: Sequence[str],
        *,
        user_id: str | None = None,
        conversation_id: str | None = None,
    ) -> list[SummaryView]:
        wanted = {"user_id": user_id, "conversation_id": conversation_id}
        found = {
            i: self._view(i, d)
            for i, d in self._created(tenant_id)
            if i in summary_ids and all(v is None or d.get(k) == v for k, v in wanted.items())
        }
        return [found[i] for i in summary_ids if i in found]

    async def inactive(self, tenant_id: str, summary_ids: Sequence[str]) -> set[str]:
        return {
            i
            for i in summary_ids
            if (d := self.docs.get(i)) is not None and d["tenant_id"] == tenant_id and d.get("status") != "active"
        }

    async def live_summaries(
        self, tenant_id: str, user_id: str, conversation_id: str, *, audience_member: str | None = None
    ) -> list[SummaryView]:
        live = [
            (i, d)
            for i, d in self._created(tenant_id)
            if (d["user_id"], d["conversation_id"]) == (user_id, conversation_id)
            and d.get("status") == "active"
            and (audience_member is None or {audience_member, EVERYONE} & set(d.get("audience", ())))
        ]
        live.sort(key=lambda p: (int(p[1]["first_index"]), p[0]))
        return [self._view(i, d) for i, d in live]

    async def page(
        self,
        tenant_id: str,
        user_id: str,
        *,
        summary_type: str | None = None,
        participant: str | None = None,
        only_ids: Sequence[str] | None = None,
        except_ids: Sequence[str] | None = None,
        include_retired: bool = False,
        limit: int,
        offset: int = 0,
    ) -> tuple[list[SummaryListed], int]:
        def matches(i: str, d: dict[str, Any]) -> bool:
            status = d.get("status")
            return (
                d["user_id"] == user_id
                and (status != "deleted" if include_retired else status in (None, "active"))
                and (summary_type is None or d["summary_type"] == summary_type)
                and (participant is None or participant in d.get("participants", ()))
                and (only_ids is None or i in only_ids)
                and (not except_ids or i not in except_ids)
            )

        found = [(i, d) for i, d in self._created(tenant_id) if matches(i, d)]
        total = len(found)
        if limit <= 0 or offset >= total:
            return [], total
        found.sort(key=lambda p: p[0])
        found.sort(key=lambda p: p[1]["end_at"], reverse=True)
        return [
            SummaryListed(self._view(i, d), str(d.get("status") or "active"), d.get("prompt_version"))
            for i, d in found[offset : offset + limit]
        ], total


# --- knowledge ------------------------------------------------------------------------------------------
class InMemoryKnowledge:
    """``KnowledgeReadModel`` in memory (port: ``KnowledgePort``)."""

    def __init__(self) -> None:
        self.facts: dict[str, FactView] = {}
        self.scope_version: dict[str, int] = {}

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            t = env.tenant_id
            if env.type == FACT_LEARNED.name:
                self._insert(env, FactLearned.model_validate(env.payload), [])
            elif env.type == FACTS_CONSOLIDATED.name:
                merged = FactsConsolidated.model_validate(env.payload)
                folded = [f for i in merged.consolidates if (f := self._mine(t, i)) is not None]
                self._insert(env, merged, [k for f in folded for k in f.source_keys])
                for f in folded:
                    if f.status == ACTIVE:
                        self.facts[f.fact_id] = replace(f, status="consolidated")
            elif env.type == FACT_RETIRED.name:
                r = FactRetired.model_validate(env.payload)
                if (f := self._mine(t, r.fact_id)) is not None:
                    self.facts[f.fact_id] = replace(f, status="retired")
            elif env.type in (FACT_PROMOTED.name, FACT_UNPROMOTED.name):
                c = FactScopeChanged.model_validate(env.payload)
                f = self._mine(t, c.fact_id)
                if f is not None and self.scope_version[f.fact_id] < env.version:
                    self.facts[f.fact_id] = replace(f, scope=c.to_scope)
                    self.scope_version[f.fact_id] = env.version

    def _mine(self, tenant_id: str, fact_id: str) -> FactView | None:
        f = self.facts.get(fact_id)
        return f if f is not None and f.tenant_id == tenant_id else None

    def _insert(self, env: EventEnvelope, fact: FactLearned, extra_keys: list[str]) -> None:
        if fact.fact_id in self.facts:
            return
        keys = [source_key(fact.conversation_id, m) for m in fact.message_ids] + extra_keys
        learned = fact.learned_at if fact.learned_at.tzinfo is not None else fact.learned_at.replace(tzinfo=UTC)
        self.facts[fact.fact_id] = FactView(
            fact_id=fact.fact_id,
            tenant_id=env.tenant_id,
            user_id=fact.user_id,
            character_id=fact.character_id,
            character_kind=fact.character_kind,
            conversation_id=fact.conversation_id,
            text=fact.text,
            subject=fact.subject,
            fact_type=fact.fact_type,
            tags=tuple(fact.tags),
            confidence=float(fact.confidence),
            learned_at=learned.astimezone(UTC),
            scope=fact.scope,
            message_ids=tuple(fact.message_ids),
            method=fact.method,
            prompt_version=fact.prompt_version,
            status=ACTIVE,
            causation_id=env.causation_id,
            consolidates=tuple(getattr(fact, "consolidates", ())),
            source_keys=tuple(dict.fromkeys(keys)),
        )
        self.scope_version[fact.fact_id] = env.version

    def _of(self, tenant_id: str) -> list[FactView]:
        return [f for f in self.facts.values() if f.tenant_id == tenant_id]

    async def facts_for(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str,
        campaign_id: str | None = None,
        limit: int = 50,
    ) -> list[FactView]:
        scopes = {player_scope(user_id), character_scope(character_id)}
        if campaign_id is not None:
            scopes.add(campaign_scope(campaign_id))
        found = [
            f
            for f in self._of(tenant_id)
            if f.character_id == character_id and f.status == ACTIVE and f.scope in scopes
        ]
        return [v for v in with_supersession(found) if v.status == ACTIVE][: max(0, limit)]

    async def owned(self, tenant_id: str, character_id: str, user_id: str) -> list[FactView]:
        return with_supersession(
            [
                f
                for f in self._of(tenant_id)
                if (f.character_id, f.user_id) == (character_id, user_id) and f.status == ACTIVE
            ]
        )

    async def page(
        self,
        tenant_id: str,
        user_id: str,
        *,
        character_id: str | None = None,
        fact_type: str | None = None,
        limit: int = 50,
        offset: int = 0,
        include_inactive: bool = False,
    ) -> tuple[list[FactView], int]:
        found = [
            f
            for f in self._of(tenant_id)
            if f.user_id == user_id
            and (character_id is None or f.character_id == character_id)
            and (fact_type is None or f.fact_type == fact_type)
            and (include_inactive or f.status == ACTIVE)
        ]
        found.sort(key=lambda f: (f.learned_at, f.fact_id), reverse=True)
        views = found[max(0, offset) : max(0, offset) + max(0, limit)]
        superseded: set[str] = set()
        for cid in {v.character_id for v in views if v.status == ACTIVE}:
            superseded |= {f.fact_id for f in await self.owned(tenant_id, cid, user_id) if f.status == "superseded"}
        return [replace(v, status="superseded") if v.fact_id in superseded else v for v in views], len(found)

    async def by_id(self, tenant_id: str, fact_id: str) -> FactView | None:
        return self._mine(tenant_id, fact_id)

    async def by_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> list[FactView]:
        return [f for i in fact_ids if (f := self._mine(tenant_id, i)) is not None]

    async def scope_versions(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, int]:
        return {i: self.scope_version[i] for i in fact_ids if self._mine(tenant_id, i) is not None}

    async def derived_from(self, tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> list[FactView]:
        key = source_key(conversation_id, message_id)
        return [f for f in self._of(tenant_id) if f.user_id == user_id and key in f.source_keys and f.status == ACTIVE]


# --- legacy lore ----------------------------------------------------------------------------------------
class InMemoryLegacyLore:
    """``LegacyLoreReadModel`` in memory (port: ``LegacyLorePort``)."""

    def __init__(self) -> None:
        self.entries: dict[str, tuple[LegacyLoreView, bool]] = {}  # legacy id -> (view, deleted)

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        for env in events:
            if env.type == LEGACY_LORE_CREATED.name:
                c = LegacyLoreCreated.model_validate(env.payload)
                if c.legacy_id in self.entries:
                    continue
                view = LegacyLoreView(
                    legacy_id=c.legacy_id,
                    tenant_id=env.tenant_id,
                    user_id=c.user_id,
                    memory_id=c.memory_id,
                    conversation_id=c.conversation_id,
                    title=c.title,
                    text=c.text or "",
                    participants=tuple(c.participants),
                    start_at=as_utc(c.start_at),
                    end_at=as_utc(c.end_at),
                    importance=int(c.importance),
                    emotional_tags=tuple(c.emotional_tags or ()),
                    applies_to_bots=tuple(c.applies_to_bots),
                    applies_to_personas=tuple(c.applies_to_personas),
                    summary_type=c.summary_type,
                    method=c.method,
                    prompt_version=c.prompt_version,
                )
                self.entries[c.legacy_id] = (view, False)
            elif env.type == LEGACY_LORE_DELETED.name:
                d = LegacyLoreDeleted.model_validate(env.payload)
                found = self.entries.get(d.legacy_id)
                if found is not None and found[0].tenant_id == env.tenant_id:
                    self.entries[d.legacy_id] = (replace(found[0], title=None, text="", emotional_tags=()), True)

    def _live(self, tenant_id: str, user_id: str | None) -> list[LegacyLoreView]:
        return [
            v
            for v, deleted in self.entries.values()
            if not deleted and v.tenant_id == tenant_id and (user_id is None or v.user_id == user_id)
        ]

    async def by_ids(self, tenant_id: str, ids: Sequence[str], *, user_id: str) -> list[LegacyLoreView]:
        found = {v.legacy_id: v for v in self._live(tenant_id, user_id)}
        return [found[i] for i in ids if i in found]

    async def for_memories(
        self, tenant_id: str, memory_ids: Sequence[str], *, user_id: str | None = None
    ) -> dict[str, LegacyLoreView]:
        return {v.memory_id: v for v in self._live(tenant_id, user_id) if v.memory_id in memory_ids}

    async def deleted(self, tenant_id: str, legacy_ids: Sequence[str]) -> set[str]:
        return {
            i
            for i in legacy_ids
            if (found := self.entries.get(i)) is not None and found[1] and found[0].tenant_id == tenant_id
        }

    async def converted_memory_ids(self, tenant_id: str, user_id: str) -> list[str]:
        return [v.memory_id for v in self._live(tenant_id, user_id)]

    async def page(
        self, tenant_id: str, user_id: str, *, bot_id: str | None = None, limit: int, offset: int = 0
    ) -> tuple[list[LegacyLoreView], int]:
        found = [
            v
            for v in self._live(tenant_id, user_id)
            if bot_id is None or bot_id in v.applies_to or bot_id in v.participants
        ]
        total = len(found)
        if limit <= 0 or offset >= total:
            return [], total
        found.sort(key=lambda v: v.legacy_id)
        found.sort(key=lambda v: v.end_at, reverse=True)
        return found[offset : offset + limit], total


# --- lorebooks ------------------------------------------------------------------------------------------
class InMemoryLore:
    """``LoreReadModel`` in memory (port: ``LorePort``)."""

    def __init__(self) -> None:
        self.books: dict[tuple[str, str], BookState] = {}  # (tenant, book) -> folded state
        self.attachments: dict[tuple[str, str], set[str]] = {}  # (tenant, book) -> target stream ids

    async def apply(self, envelopes: Iterable[EventEnvelope]) -> None:
        by_book: dict[tuple[str, str], list[EventEnvelope]] = {}
        for env in envelopes:
            if env.type in LORE_EVENTS:
                by_book.setdefault((env.tenant_id, str(env.payload["lorebook_id"])), []).append(env)
        for key, events in by_book.items():
            first = min(e.version for e in events)
            base = None if first == 1 else await self.state(*key)
            state = fold_all(base, events)
            if state is None or (base is not None and state.version <= base.version):
                continue
            stored = self.books.get(key)
            if stored is not None and stored.version > state.version:
                continue
            self.books[key] = _copy_state(state)
            self.attachments[key] = set(state.targets)

    async def state(self, tenant_id: str, lorebook_id: str) -> BookState | None:
        found = self.books.get((tenant_id, lorebook_id))
        return None if found is None else _copy_state(found)

    async def book(self, tenant_id: str, lorebook_id: str) -> LorebookView | None:
        return (await self.books_by_ids(tenant_id, [lorebook_id])).get(lorebook_id)

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]:
        out: dict[str, LorebookView] = {}
        for b in dict.fromkeys(lorebook_ids):
            s = self.books.get((tenant_id, b))
            if s is not None and not s.deleted:
                copied = _copy_state(s)
                out[b] = LorebookView(
                    tenant_id=s.tenant_id,
                    lorebook_id=s.lorebook_id,
                    owner_user_id=s.owner_user_id,
                    name=s.name,
                    format=s.format or "",
                    version=s.version,
                    book=copied.book,
                    original=copied.original or {},
                )
        return out

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]:
        bot_target = bot_stream(tenant_id, bot_id)
        chat_target = (
            conversation_stream(tenant_id, user_id, conversation_id)
            if user_id is not None and conversation_id is not None
            else None
        )
        sources: dict[str, LoreSource] = {}
        for (tenant, book), targets in self.attachments.items():
            if tenant != tenant_id:
                continue
            if chat_target is not None and chat_target in targets:
                sources[book] = "chat"
            elif bot_target in targets:
                sources[book] = "character"
        return [
            LorebookRef(b, s.version, src)
            for b, src in sorted(sources.items())
            if (s := self.books.get((tenant_id, b))) is not None and not s.deleted
        ]


def _copy_state(s: BookState) -> BookState:
    """A stored state as the adapter reads it back: its own book and original, through their JSON form."""
    return replace(
        s,
        book=Lorebook.model_validate(s.book.model_dump(mode="json")),
        original=copy.deepcopy(s.original),
        targets=list(s.targets),
    )


if TYPE_CHECKING:  # each fake satisfies its port (checked by mypy)
    _models: ConversationReadModel = InMemoryReadModels()
    _summaries: SummariesPort = InMemorySummaries()
    _knowledge: KnowledgePort = InMemoryKnowledge()
    _legacy: LegacyLorePort = InMemoryLegacyLore()
    _lore: LorePort = InMemoryLore()
