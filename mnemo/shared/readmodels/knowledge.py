"""The ``knowledge`` read model: what each character knows, one document per fact, text encrypted at rest.

A projection of the ``knowledge/<tenant>/<character>`` streams, rebuilt by replaying them:
``knowledge.fact_learned`` and ``knowledge.facts_consolidated`` insert a fact (``$setOnInsert`` keyed by the
deterministic fact id: applying twice is a no-op); a consolidation marks the facts it folds ``consolidated``;
``knowledge.fact_retired`` marks one ``retired``; ``knowledge.fact_promoted``/``unpromoted`` set the scope, but
only if the event is newer in its stream than the last scope change applied (``scope_version``), so a late
redelivery cannot undo a later change. Text and subject are encrypted with the tenant's data key, bound to the
fact id and field name. Every query takes the tenant first.

Current facts: not retired, not consolidated away, and not superseded, i.e. no newer fact of the same
character with the same subject among those visible (computed at read time; nothing is rewritten).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from pymongo import ASCENDING, DESCENDING, UpdateMany, UpdateOne
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.aggregates.knowledge import ACTIVE, FACT_EVENTS, fact_folds
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_RETIRED,
    FACTS_CONSOLIDATED,
    FactLearned,
    FactScopeChanged,
    campaign_scope,
    character_scope,
    player_scope,
)
from mnemo.shared.readmodels.erased import readable, readable_one
from mnemo.shared.readmodels.positions import StreamPositions

COLLECTION = "knowledge"
#: Per knowledge stream, the version its events are applied through, contiguously (``KnowledgePort.caught_up``).
POSITIONS = "knowledge_positions"
KNOWLEDGE_EVENTS = FACT_EVENTS  # what this read model folds: every fact event (``fact_folds``)


@dataclass(frozen=True)
class FactView:
    fact_id: str
    tenant_id: str
    user_id: str
    character_id: str
    character_kind: str
    conversation_id: str
    text: str
    subject: str
    fact_type: str
    tags: tuple[str, ...]
    confidence: float
    learned_at: datetime
    scope: str
    message_ids: tuple[str, ...]
    method: str
    prompt_version: str | None
    status: str  # active | superseded | consolidated | retired
    causation_id: str | None = None  # the event it was learned from (a message, or the edit of one)
    consolidates: tuple[str, ...] = ()  # the facts a consolidated fact folds
    source_keys: tuple[str, ...] = ()  # ``source_key``s of every message it derives from, directly or folded
    revises: str | None = None  # the fact this one is an edited version of


def source_key(conversation_id: str, message_id: str) -> str:
    """Platform message ids are unique within a conversation only."""
    return f"{conversation_id}\x1f{message_id}"


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def with_supersession(views: Sequence[FactView]) -> list[FactView]:
    """Newest first; an active fact with a newer active fact of the same character and subject among
    ``views`` gets status ``superseded``."""
    seen: set[tuple[str, str]] = set()
    out: list[FactView] = []
    for v in sorted(views, key=lambda f: (f.learned_at, f.fact_id), reverse=True):
        key = (v.character_id, v.subject)
        if v.status == ACTIVE and key in seen:
            v = FactView(**{**v.__dict__, "status": "superseded"})
        elif v.status == ACTIVE:
            seen.add(key)
        out.append(v)
    return out


def outside(views: Sequence[FactView], user_id: str, conversations: Collection[str]) -> list[FactView]:
    """``views`` but those learned in one of ``user_id``'s ``conversations`` (ids are per user)."""
    if not conversations:
        return list(views)
    return [v for v in views if v.user_id != user_id or v.conversation_id not in conversations]


def visible_scopes(user_id: str, character_id: str, campaign_id: str | None) -> list[str]:
    """The scopes of a character's facts that ``user_id``'s context sees: that user's private scope, the
    character-wide scope and (with ``campaign_id``) the campaign's."""
    scopes = [player_scope(user_id), character_scope(character_id)]
    if campaign_id is not None:
        scopes.append(campaign_scope(campaign_id))
    return scopes


def current_facts(
    found: Sequence[FactView], user_id: str, exclude_conversations: Collection[str], limit: int
) -> list[FactView]:
    """The current facts among ``found``, newest first, at most ``limit``: none learned in
    ``exclude_conversations`` of ``user_id`` (so they do not supersede either), none superseded."""
    views = with_supersession(outside(found, user_id, exclude_conversations))
    return [v for v in views if v.status == ACTIVE][: max(0, limit)]


async def mark_superseded(
    views: Sequence[FactView], owned_by_character: Callable[[str], Awaitable[Sequence[FactView]]]
) -> list[FactView]:
    """``views`` (one page of a user's facts) with those superseded among all that user's facts of the same
    character marked so: a page alone cannot tell, its newer fact may be on another page.
    ``owned_by_character``: the user's ``owned`` facts of one character."""
    superseded: set[str] = set()
    for cid in {v.character_id for v in views if v.status == ACTIVE}:
        superseded |= {f.fact_id for f in await owned_by_character(cid) if f.status == "superseded"}
    return [FactView(**{**v.__dict__, "status": "superseded"}) if v.fact_id in superseded else v for v in views]


@dataclass(frozen=True)
class FactRows:
    """Which of a tenant's facts a query reads, in the two forms the adapters need: a MongoDB filter
    (``KnowledgeReadModel``) and a test on a view (the in-memory fake), side by side so they cannot drift."""

    tenant_id: str
    user_id: str | None = None
    character_id: str | None = None
    fact_type: str | None = None
    scopes: tuple[str, ...] | None = None  # any of these
    only_active: bool = True
    conversation_id: str | None = None  # learned in this conversation

    def filter(self) -> dict[str, Any]:
        query: dict[str, Any] = {"tenant_id": self.tenant_id}
        fields = {
            "user_id": self.user_id,
            "character_id": self.character_id,
            "fact_type": self.fact_type,
            "conversation_id": self.conversation_id,
        }
        query |= {k: v for k, v in fields.items() if v is not None}
        if self.scopes is not None:
            query["scope"] = {"$in": list(self.scopes)}
        if self.only_active:
            query["status"] = ACTIVE
        return query

    def admits(self, f: FactView) -> bool:
        return (
            f.tenant_id == self.tenant_id
            and self.user_id in (None, f.user_id)
            and self.character_id in (None, f.character_id)
            and self.fact_type in (None, f.fact_type)
            and self.conversation_id in (None, f.conversation_id)
            and (self.scopes is None or f.scope in self.scopes)
            and (not self.only_active or f.status == ACTIVE)
        )


class FactQueries(Protocol):
    """The knowledge queries services make, stated once over what each adapter answers for a
    :class:`FactRows`: ``rows`` (every fact it admits) and ``rows_page`` (one page of them, newest
    ``learned_at`` first then id, and how many it admits)."""

    async def rows(self, q: FactRows) -> list[FactView]: ...

    async def rows_page(self, q: FactRows, offset: int, limit: int) -> tuple[list[FactView], int]: ...

    async def facts_for(
        self,
        tenant_id: str,
        character_id: str,
        *,
        user_id: str,
        campaign_id: str | None = None,
        limit: int = 50,
        exclude_conversations: Collection[str] = (),
        learned_by: datetime | None = None,
    ) -> list[FactView]:
        """The character's CURRENT facts visible in ``user_id``'s context, newest first: its facts in that
        user's private scope, its character-wide facts, and (with ``campaign_id``) the campaign's; none learned
        in ``exclude_conversations`` of that user (the other branches of a fork family, docs/branches.md: they
        neither count nor supersede). ``learned_by``: only those learned at or before it (a context as of an
        earlier message): left out BEFORE supersession, so a later fact does not hide the one it replaced."""
        scopes = tuple(visible_scopes(user_id, character_id, campaign_id))
        found = await self.rows(FactRows(tenant_id, character_id=character_id, scopes=scopes))
        if learned_by is not None:
            found = [f for f in found if _utc(f.learned_at) <= learned_by]
        return current_facts(found, user_id, exclude_conversations, limit)

    async def owned(
        self, tenant_id: str, character_id: str, user_id: str, exclude_conversations: Collection[str] = ()
    ) -> list[FactView]:
        """The character's facts learned in ``user_id``'s conversations that are not retired or consolidated
        (any scope), newest first, superseded ones marked; none of ``exclude_conversations``."""
        found = await self.rows(FactRows(tenant_id, user_id=user_id, character_id=character_id))
        return with_supersession(outside(found, user_id, exclude_conversations))

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
        conversation_id: str | None = None,
    ) -> tuple[list[FactView], int]:
        """One page of the facts owned by ``user_id`` (learned in their conversations), newest first, and the
        total matching. Retired and consolidated-away facts only with ``include_inactive``; superseded facts
        are listed with that status; ``conversation_id``: only facts learned in that conversation."""
        q = FactRows(
            tenant_id,
            user_id,
            character_id,
            fact_type,
            only_active=not include_inactive,
            conversation_id=conversation_id,
        )
        views, total = await self.rows_page(q, max(0, offset), max(0, limit))
        return await mark_superseded(views, lambda cid: self.owned(tenant_id, cid, user_id)), total


class KnowledgeReadModel(FactQueries):
    def __init__(self, db: AsyncDatabase[dict[str, Any]], cipher: FieldCipher) -> None:
        self._col = db[COLLECTION]
        self._positions = StreamPositions(db[POSITIONS])
        self._cipher = cipher

    # --- projection -------------------------------------------------------------------------------------
    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Fold the knowledge fact events among ``events`` (others are ignored), in order, in bulk writes."""
        ops: list[UpdateOne | UpdateMany] = []
        for env in events:
            on_event = _APPLY.get(env.type)
            if on_event is not None:
                await on_event(self, env, ops)
        await self._flush(ops)

    async def _on_learned(self, env: EventEnvelope, ops: list[UpdateOne | UpdateMany]) -> None:
        ops.append(await self._insert(env, FACT_LEARNED.parse(env.payload), []))

    async def _on_consolidated(self, env: EventEnvelope, ops: list[UpdateOne | UpdateMany]) -> None:
        t = env.tenant_id
        merged = FACTS_CONSOLIDATED.parse(env.payload)
        await self._flush(ops)  # the folded facts' source keys must be readable
        ops.append(await self._insert(env, merged, [k async for k in self._source_keys(t, merged.consolidates)]))
        folded = {"tenant_id": t, "_id": {"$in": merged.consolidates}, "status": ACTIVE}
        ops.append(UpdateMany(folded, {"$set": {"status": "consolidated", "consolidated_into": merged.fact_id}}))

    async def _on_retired(self, env: EventEnvelope, ops: list[UpdateOne | UpdateMany]) -> None:
        r = FACT_RETIRED.parse(env.payload)
        retired = {"$set": {"status": "retired", "retired_reason": r.reason}}
        ops.append(UpdateOne({"_id": r.fact_id, "tenant_id": env.tenant_id}, retired))

    async def _on_scope_changed(self, env: EventEnvelope, ops: list[UpdateOne | UpdateMany]) -> None:
        c = FactScopeChanged.model_validate(env.payload)  # the fields both promotion events share
        newer = {"_id": c.fact_id, "tenant_id": env.tenant_id, "scope_version": {"$lt": env.version}}
        ops.append(UpdateOne(newer, {"$set": {"scope": c.to_scope, "scope_version": env.version}}))

    async def _flush(self, ops: list[UpdateOne | UpdateMany]) -> None:
        if ops:
            await self._col.bulk_write(ops, ordered=True)
            ops.clear()

    async def _insert(self, env: EventEnvelope, fact: FactLearned, extra_keys: list[str]) -> UpdateOne:
        keys = [source_key(fact.conversation_id, m) for m in fact.message_ids] + extra_keys
        doc = await self._doc(env, fact, keys)
        return UpdateOne({"_id": fact.fact_id, "tenant_id": env.tenant_id}, {"$setOnInsert": doc}, upsert=True)

    async def _source_keys(self, tenant_id: str, fact_ids: Sequence[str]) -> Any:
        async for d in self._col.find({"tenant_id": tenant_id, "_id": {"$in": list(fact_ids)}}, {"source_keys": 1}):
            for k in d.get("source_keys", ()):
                yield k

    async def _doc(self, env: EventEnvelope, fact: FactLearned, keys: list[str]) -> dict[str, Any]:
        tc = await self._cipher.for_tenant(env.tenant_id, fact.user_id)
        return {
            "tenant_id": env.tenant_id,
            "event_id": env.event_id,
            "causation_id": env.causation_id,
            **fact.model_dump(exclude={"fact_id", "text", "subject", "consolidates"}),
            "text": tc.encrypt(fact.fact_id, "text", fact.text),
            "subject": tc.encrypt(fact.fact_id, "subject", fact.subject),
            "tags": tc.encrypt(fact.fact_id, "tags", list(fact.tags)),
            "consolidates": list(getattr(fact, "consolidates", [])),
            "source_keys": list(dict.fromkeys(keys)),
            "scope_version": env.version,
            "status": ACTIVE,
        }

    async def caught_up(self, tenant_id: str, streams: Sequence[str]) -> dict[str, int]:
        return await self._positions.of(tenant_id, streams)

    async def mark_caught_up(self, tenant_id: str, versions: Mapping[str, int]) -> None:
        await self._positions.advance(tenant_id, versions)

    # --- queries ----------------------------------------------------------------------------------------
    async def rows(self, q: FactRows) -> list[FactView]:
        return await readable(self._col.find(q.filter()), self._view)

    async def rows_page(self, q: FactRows, offset: int, limit: int) -> tuple[list[FactView], int]:
        total = await self._col.count_documents(q.filter())
        cursor = self._col.find(q.filter()).sort([("learned_at", DESCENDING), ("_id", DESCENDING)])
        return await readable([d async for d in cursor.skip(offset).limit(limit)], self._view), total

    async def by_id(self, tenant_id: str, fact_id: str) -> FactView | None:
        """The fact with that id in the tenant, whatever its status (callers check the owner)."""
        doc = await self._col.find_one({"_id": fact_id, "tenant_id": tenant_id})
        return await readable_one(doc, self._view)

    async def by_ids(self, tenant_id: str, fact_ids: Sequence[str]) -> list[FactView]:
        """The facts among ``fact_ids`` in the tenant, whatever their status, in the order asked."""
        found = {d["_id"]: d async for d in self._col.find({"tenant_id": tenant_id, "_id": {"$in": list(fact_ids)}})}
        return await readable([found[i] for i in fact_ids if i in found], self._view)

    async def scope_versions(self, tenant_id: str, fact_ids: Sequence[str]) -> dict[str, int]:
        """The log version of the event that last set each fact's scope (the embedding service compares it
        with the events it indexes, so a late redelivery cannot restore an older scope)."""
        query = {"tenant_id": tenant_id, "_id": {"$in": list(fact_ids)}}
        return {d["_id"]: int(d.get("scope_version", 0)) async for d in self._col.find(query, {"scope_version": 1})}

    async def derived_from(self, tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> list[FactView]:
        """Facts not yet retired or consolidated that were learned from that message (directly or through a
        consolidation)."""
        query = {
            "tenant_id": tenant_id,
            "user_id": user_id,
            "source_keys": source_key(conversation_id, message_id),
            "status": ACTIVE,
        }
        return await readable(self._col.find(query), self._view)

    async def in_conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> list[FactView]:
        """Every fact learned in the conversation, whatever its status, newest first; ``superseded`` by a newer
        fact of the same character and subject in this conversation."""
        query = {"tenant_id": tenant_id, "user_id": user_id, "conversation_id": conversation_id}
        views = await readable(self._col.find(query).sort([("learned_at", ASCENDING), ("_id", ASCENDING)]), self._view)
        return with_supersession(views)

    async def _view(self, d: dict[str, Any]) -> FactView:
        tc = await self._cipher.for_tenant(d["tenant_id"], reading=(d,))
        return FactView(
            fact_id=d["_id"],
            tenant_id=d["tenant_id"],
            user_id=d["user_id"],
            character_id=d["character_id"],
            character_kind=d["character_kind"],
            conversation_id=d["conversation_id"],
            text=str(tc.decrypt(d["_id"], "text", d["text"])),
            subject=str(tc.decrypt(d["_id"], "subject", d["subject"])),
            fact_type=d["fact_type"],
            # rows written before tags were encrypted hold a plain list
            tags=tuple(t if isinstance(t := d.get("tags", ()), list) else tc.decrypt(d["_id"], "tags", t)),
            confidence=float(d["confidence"]),
            learned_at=_utc(d["learned_at"]),
            scope=d["scope"],
            message_ids=tuple(d.get("message_ids", ())),
            method=d["method"],
            prompt_version=d.get("prompt_version"),
            status=d.get("status", ACTIVE),
            causation_id=d.get("causation_id"),
            consolidates=tuple(d.get("consolidates", ())),
            source_keys=tuple(d.get("source_keys", ())),
            revises=d.get("revises"),
        )


# Event type -> how ``KnowledgeReadModel.apply`` folds it (appending to the pending bulk writes).
_APPLY: dict[str, Callable[[KnowledgeReadModel, EventEnvelope, list[UpdateOne | UpdateMany]], Awaitable[None]]] = (
    fact_folds(
        learned=KnowledgeReadModel._on_learned,
        consolidated=KnowledgeReadModel._on_consolidated,
        retired=KnowledgeReadModel._on_retired,
        scope_changed=KnowledgeReadModel._on_scope_changed,
    )
)
