"""The memory API's use cases: remember, update, forget and history over ``memory/<tenant>/<memory>`` streams.

Each call reads the memory's stream (the source of truth), decides with the memories aggregate
(``mnemo.shared.aggregates.memories``), appends under optimistic concurrency (a lost race reads and decides again), projects the memory's whole stream into the
memories read model, then publishes: a reply means the next search or context sees the change, and the
embedding service derives the vectors from the published events. ``engine`` says whether the call came on the
engine's subject (``mnemo.rpc.memory.engine.<verb>.v1``), which is what the right to write campaign and
character namespaces is (``mnemo/shared/namespaces.py``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TypeVar

from mnemo.shared.aggregates import memories as rules
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import AppendDecision, Appended, EventSaver
from mnemo.shared.events.envelope import utcnow
from mnemo.shared.events.recorded import memory_stream
from mnemo.shared.readmodels.ports import MemoriesPort
from mnemo_client.wire import memory_api_contract as wire

R = TypeVar("R")


class MemoryApi:
    def __init__(self, store: EventStore, memories: MemoriesPort, saver: EventSaver) -> None:
        self._store = store
        self._memories = memories
        self._saver = saver

    async def _load(self, tenant_id: str, memory_id: str) -> tuple[rules.Memory | None, int]:
        """The memory and its stream's version (read apart: the events of an erased owner are not readable)."""
        stream = memory_stream(tenant_id, memory_id)
        events = await self._store.read_stream(stream)
        return rules.fold(events), await self._store.stream_version(stream)

    async def _project(self, tenant_id: str, memory_id: str) -> None:
        """The memory's whole stream into the read model (idempotent: a retry after a crash heals)."""
        await self._memories.apply(await self._store.read_stream(memory_stream(tenant_id, memory_id)))

    async def _save(
        self, tenant_id: str, memory_id: str, decide: Callable[[], Awaitable[AppendDecision[R]]]
    ) -> Appended[R]:
        """Decide and append under optimistic concurrency (a lost race decides again), project the memory, then
        publish what was committed."""
        return await self._saver.save_decided(
            memory_stream(tenant_id, memory_id), decide, project=lambda _: self._project(tenant_id, memory_id)
        )

    async def remember(self, req: wire.MemoryRememberRequest, *, engine: bool = False) -> wire.MemoryRememberReply:
        rules.check_write(req.owner_namespace, req.user_id, engine=engine)
        memory_id = rules.memory_id_for(req.tenant_id, req.user_id, req.idempotency_key)

        async def decide() -> AppendDecision[bool]:
            memory, version = await self._load(req.tenant_id, memory_id)
            if memory is None:
                return AppendDecision(version, [rules.remembered_event(req.tenant_id, memory_id, req, utcnow())], True)
            if not rules.same_request(memory, req):
                raise rules.MemoryRequestRefused(
                    f"idempotency_key {req.idempotency_key!r} already made another memory ({memory_id})"
                )
            return AppendDecision(version, [], False)

        done = await self._save(req.tenant_id, memory_id, decide)
        memory, _ = await self._load(req.tenant_id, memory_id)
        if memory is None:  # the key's memory belonged to an erased owner: its events no longer read
            raise rules.MemoryRequestRefused(f"idempotency_key {req.idempotency_key!r} belongs to an erased memory")
        return wire.MemoryRememberReply(
            memory_id=memory_id,
            created=done.value,
            version=memory.version,
            title=memory.current.title,
            forgotten=memory.forgotten,
        )

    async def update(self, req: wire.MemoryUpdateRequest, *, engine: bool = False) -> wire.MemoryUpdateReply:
        async def decide() -> AppendDecision[int]:
            memory, version = await self._load(req.tenant_id, req.memory_id)
            memory = rules.check_access(memory, req.user_id, engine=engine, write=True)
            if memory.forgotten:
                raise rules.RememberedNotFound(f"memory {req.memory_id!r} was forgotten")
            event = rules.updated_event(req.tenant_id, memory, req, utcnow())
            return AppendDecision(version, [event] if event else [], memory.version + (1 if event else 0))

        done = await self._save(req.tenant_id, req.memory_id, decide)
        return wire.MemoryUpdateReply(memory_id=req.memory_id, version=done.value, changed=done.result is not None)

    async def forget(self, req: wire.MemoryForgetRequest, *, engine: bool = False) -> wire.MemoryForgetReply:
        async def decide() -> AppendDecision[bool]:
            memory, version = await self._load(req.tenant_id, req.memory_id)
            memory = rules.check_access(memory, req.user_id, engine=engine, write=True)
            if memory.forgotten:
                return AppendDecision(version, [], False)
            return AppendDecision(
                version, [rules.forgotten_event(req.tenant_id, memory, req.user_id, req.reason, utcnow())], True
            )

        done = await self._save(req.tenant_id, req.memory_id, decide)
        # Already forgotten: projected anyway, to heal a crash between an earlier append and its projection.
        if done.result is None:
            await self._project(req.tenant_id, req.memory_id)
        return wire.MemoryForgetReply(memory_id=req.memory_id, forgotten=done.value)

    async def history(self, req: wire.MemoryHistoryRequest, *, engine: bool = False) -> wire.MemoryHistoryReply:
        memory, _ = await self._load(req.tenant_id, req.memory_id)
        memory = rules.check_access(memory, req.user_id, engine=engine, write=False)
        return wire.MemoryHistoryReply(
            memory_id=memory.memory_id,
            owner_namespace=memory.namespace,
            user_id=memory.owner,
            bot_id=memory.first.bot_id,
            forgotten=memory.forgotten,
            versions=rules.redacted(memory.versions) if memory.forgotten else memory.versions,
        )
