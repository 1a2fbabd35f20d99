"""The ``memories`` read model: one row per live memory written through the memory API.

A projection of the ``memory/<tenant>/<memory>`` streams, rebuilt by ``mnemo replay``: ``memory.remembered``
inserts the row (``$setOnInsert``: applying it again changes nothing), ``memory.updated`` rewrites it when its
version is newer than the row's, ``memory.forgotten`` deletes it. The memory service applies a memory's whole
stream after each append, so the row always ends in the stream's last state. The title, content, assets and
metadata are encrypted under the owner's data key, bound to the memory id and field; the tags stay plain (they
are labels the search filters on, like the ids). Every query takes the tenant first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from pymongo import ASCENDING, DESCENDING, DeleteOne, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import MEMORY_FORGOTTEN, MEMORY_REMEMBERED, MEMORY_UPDATED
from mnemo.shared.events.recorded.memories import MemorySnapshot
from mnemo.shared.readmodels.erased import readable
from mnemo.shared.readmodels.repository import _bulk

COLLECTION = "rm_memories"
ENCRYPTED = ("title", "content", "assets", "metadata")
Doc = dict[str, Any]


@dataclass(frozen=True)
class MemoryView:
    memory_id: str
    tenant_id: str
    user_id: str
    by_user_id: str
    owner_namespace: str
    memory_type: str
    title: str
    content: str
    tags: tuple[str, ...]
    assets: tuple[dict[str, Any], ...]
    metadata: dict[str, Any]
    bot_id: str | None
    conversation_id: str | None
    occurred_at: datetime
    version: int
    origin: str = "api"

    @property
    def audience(self) -> tuple[str, ...]:
        return (self.bot_id,) if self.bot_id else ("*",)


@dataclass(frozen=True)
class Clause:
    """One namespace of a listing and the ``bot_id`` values its rows may have (None: any)."""

    namespace: str
    bots: tuple[str | None, ...] | None = None


@dataclass(frozen=True)
class MemoryQuery:
    """Which memories a listing reads, in the two forms the adapters need: one MongoDB filter per clause
    (``MemoriesReadModel``: an ``$or`` of them would be served by no index on SecantusDB) and a test on a view
    (the in-memory fake), side by side."""

    tenant_id: str
    clauses: Sequence[Clause]
    types: Sequence[str] | None = None
    tags: Sequence[str] = ()
    all_tags: bool = False  # every tag of ``tags`` (else any)
    since: datetime | None = None
    until: datetime | None = None  # excluded

    def filters(self) -> list[Doc]:
        rest: Doc = {}
        if self.types is not None:
            rest["memory_type"] = {"$in": list(self.types)}
        if self.tags:
            rest["tags"] = {"$all" if self.all_tags else "$in": list(self.tags)}
        when = {op: at for op, at in (("$gte", self.since), ("$lt", self.until)) if at is not None}
        if when:
            rest["occurred_at"] = when
        return [
            {
                "tenant_id": self.tenant_id,
                "owner_namespace": c.namespace,
                **({} if c.bots is None else {"bot_id": {"$in": list(c.bots)}}),
                **rest,
            }
            for c in self.clauses
        ]

    def admits(self, v: MemoryView) -> bool:
        tags = set(self.tags)
        return (
            v.tenant_id == self.tenant_id
            and any(c.namespace == v.owner_namespace and (c.bots is None or v.bot_id in c.bots) for c in self.clauses)
            and (self.types is None or v.memory_type in self.types)
            and (not tags or (tags <= set(v.tags) if self.all_tags else bool(tags & set(v.tags))))
            and (self.since is None or v.occurred_at >= as_utc(self.since))
            and (self.until is None or v.occurred_at < as_utc(self.until))
        )


class MemoryListing(Protocol):
    """The memory listing's query, stated once over what each adapter answers for a :class:`MemoryQuery`."""

    async def newest_of(self, q: MemoryQuery, limit: int) -> list[MemoryView]:
        """The newest ``limit`` memories ``q`` admits, newest ``occurred_at`` first then id."""
        ...

    async def newest(
        self,
        tenant_id: str,
        clauses: Sequence[Clause],
        *,
        types: Sequence[str] | None = None,
        tags: Sequence[str] = (),
        all_tags: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int,
    ) -> list[MemoryView]:
        """The newest ``limit`` memories (by ``occurred_at``) matching one of ``clauses``."""
        return await self.newest_of(MemoryQuery(tenant_id, clauses, types, tags, all_tags, since, until), limit)


class MemoriesReadModel(MemoryListing):
    def __init__(self, db: AsyncDatabase[Doc], cipher: FieldCipher) -> None:
        self._col: AsyncCollection[Doc] = db.get_collection(COLLECTION)
        self._cipher = cipher

    async def apply(self, events: Sequence[EventEnvelope]) -> None:
        """Project ``memory.*`` events (others are ignored), in order, in one ordered bulk write."""
        ops: list[UpdateOne | DeleteOne] = []
        for env in events:
            if env.type in (MEMORY_REMEMBERED.name, MEMORY_UPDATED.name):
                ops.append(await self._write(env))
            elif env.type == MEMORY_FORGOTTEN.name:
                ops.append(DeleteOne({"_id": env.payload["memory_id"], "tenant_id": env.tenant_id}))
        await _bulk(self._col, ops, ordered=True)

    async def _write(self, env: EventEnvelope) -> UpdateOne:
        state = MemorySnapshot.model_validate(env.payload)
        tc = await self._cipher.for_tenant(env.tenant_id, state.user_id)
        doc: Doc = {
            "tenant_id": env.tenant_id,
            **state.model_dump(exclude={"memory_id", *ENCRYPTED}),
            "version": env.version,
            "origin": env.payload.get("origin", "api"),
            **{f: tc.encrypt(state.memory_id, f, getattr(state, f)) for f in ENCRYPTED},
        }
        key = {"_id": state.memory_id, "tenant_id": env.tenant_id}
        if env.type == MEMORY_REMEMBERED.name:
            return UpdateOne(key, {"$setOnInsert": doc}, upsert=True)
        return UpdateOne({**key, "version": {"$lt": env.version}}, {"$set": doc})

    async def by_ids(self, tenant_id: str, memory_ids: Sequence[str]) -> list[MemoryView]:
        """The live memories among ``memory_ids`` of this tenant, in the order asked."""
        if not memory_ids:
            return []
        # By ``_id`` alone, the tenant checked on the rows: SecantusDB answers ``_id $in`` from its primary index
        # but scans for the same query with more fields (see ``summaries.py``). Nothing is decrypted before.
        rows = [d async for d in self._col.find({"_id": {"$in": list(dict.fromkeys(memory_ids))}})]
        found = {v.memory_id: v for v in await readable([d for d in rows if d["tenant_id"] == tenant_id], self._view)}
        return [found[i] for i in dict.fromkeys(memory_ids) if i in found]

    async def newest_of(self, q: MemoryQuery, limit: int) -> list[MemoryView]:
        rows: list[Doc] = []
        for query in q.filters():  # one indexed query per namespace, merged
            rows += (
                await self._col.find(query)
                .sort([("occurred_at", DESCENDING), ("_id", ASCENDING)])
                .limit(limit)
                .to_list()
            )
        rows.sort(key=lambda d: (-as_utc(d["occurred_at"]).timestamp(), str(d["_id"])))
        return await readable(rows[:limit], self._view)

    async def _view(self, d: Doc) -> MemoryView:
        tc = await self._cipher.for_tenant(d["tenant_id"], reading=(d,))

        def plain(field: str) -> Any:
            return tc.decrypt(d["_id"], field, d[field]) if d.get(field) is not None else None

        return MemoryView(
            memory_id=d["_id"],
            tenant_id=d["tenant_id"],
            user_id=d["user_id"],
            by_user_id=str(d.get("by_user_id") or d["user_id"]),
            owner_namespace=d["owner_namespace"],
            memory_type=d["memory_type"],
            title=str(plain("title") or ""),
            content=str(plain("content") or ""),
            tags=tuple(d.get("tags") or ()),
            assets=tuple(plain("assets") or ()),
            metadata=dict(plain("metadata") or {}),
            bot_id=d.get("bot_id"),
            conversation_id=d.get("conversation_id"),
            occurred_at=as_utc(d["occurred_at"]),
            version=int(d.get("version", 1)),
            origin=str(d.get("origin", "api")),
        )
