"""The memory service's I/O: check ownership, append events, project them, publish them; list the view.

A memory is a summary (``summaries/<tenant>/<user>/<conversation>``); its legacy lore entry lives in its own
stream (``legacy_lore/<tenant>/<user>/<legacy>``). Ownership: a memory is found through the summaries read
model filtered by tenant AND user, and its state (live, retired, deleted) is then read from its stream, the
source of truth, so a request naming another user's or tenant's memory gets ``MemoryNotFound``, exactly like an
unknown id.

Projection: the service projects its own events right after the append (the legacy entry's whole stream, and
the ``summary.retired`` it wrote), instead of waiting for a log consumer: a reply then means the change is
visible to the next list or context request, and a crash between the append and the projection heals on
the retry (the append reports duplicates, the projection runs again; both are idempotent). Publishing is best
effort: the relay republishes anything not confirmed, and the embedding service derives the vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.services.memory.knowledge_items import FactItems
from mnemo.services.memory.listing import merge_page, sources_for
from mnemo.shared.aggregates import legacy_lore
from mnemo.shared.aggregates import summaries as aggregate
from mnemo.shared.eventlog.port import AppendResult, EventStore
from mnemo.shared.eventlog.save import EventSaver, Project
from mnemo.shared.events.envelope import EventEnvelope, NewEvent, utcnow
from mnemo.shared.events.recorded import legacy_lore_stream, summary_stream
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.legacy_lore import LegacyLoreView, LegacyPage
from mnemo.shared.readmodels.ports import LegacyLorePort, SummariesPort
from mnemo.shared.readmodels.summaries import SummaryListed, SummaryPage
from mnemo_client.wire import memory_contract as wire


class MemoryNotFound(LookupError):
    """No such memory for this tenant and user (or it was deleted)."""


class MemoryNotLive(ValueError):
    """The memory is an earlier version: edited, consolidated or made stale (the message says what replaced it)."""


@dataclass(eq=False)
class Memories:
    store: EventStore
    summaries: SummariesPort
    legacy: LegacyLorePort
    saver: EventSaver
    knowledge: FactItems | None = None

    async def _memory(self, tenant_id: str, user_id: str, memory_id: str) -> aggregate.MemoryState:
        views = await self.summaries.by_ids(tenant_id, [memory_id], user_id=user_id)
        if not views:
            raise MemoryNotFound(f"no memory {memory_id!r} for this user")
        events = await self.store.read_stream(summary_stream(tenant_id, user_id, views[0].conversation_id))
        state = aggregate.memory_state(events, memory_id)
        if state is None or state.created.user_id != user_id:
            raise MemoryNotFound(f"no memory {memory_id!r} for this user")
        return state

    async def convert_to_lore(self, req: wire.MemoryConvertToLoreRequest) -> wire.MemoryConvertToLoreReply:
        state = await self._memory(req.tenant_id, req.user_id, req.memory_id)
        if state.deleted:
            raise MemoryNotFound(f"memory {req.memory_id!r} was deleted")
        entry = legacy_lore.legacy_entry(req.tenant_id, req, state.created, utcnow())
        stream = legacy_lore_stream(req.tenant_id, req.user_id, entry.legacy_id)
        result = await self._record(
            stream, [legacy_lore.legacy_created_event(req.tenant_id, entry)], self._legacy_stream(stream)
        )
        if (await self._memory(req.tenant_id, req.user_id, req.memory_id)).deleted:
            # A delete ran meanwhile and may have looked for legacy lore before this append: remove it here.
            await self._delete_legacy(req.tenant_id, req.user_id, req.memory_id)
            raise MemoryNotFound(f"memory {req.memory_id!r} was deleted")
        views = await self.legacy.by_ids(req.tenant_id, [entry.legacy_id], user_id=req.user_id)
        if not views:
            raise MemoryNotFound(f"memory {req.memory_id!r} was deleted")
        view = views[0]
        return wire.MemoryConvertToLoreReply(
            legacy_id=view.legacy_id,
            memory_id=view.memory_id,
            applies_to_bots=list(view.applies_to_bots),
            applies_to_personas=list(view.applies_to_personas),
            created=bool(result.committed),
        )

    async def delete(self, req: wire.MemoryDeleteRequest) -> wire.MemoryDeleteReply:
        """Retire the summary first, then delete its legacy entry (and those made from the versions it was
        edited from). A retry after a crash in between finds the
        (deleted) memory and completes both: deterministic event ids make the repeats no-ops. A conversion
        racing this delete checks the memory again after its own append and removes what it made, so no
        legacy entry outlives its memory whatever the interleaving."""
        state = await self._memory(req.tenant_id, req.user_id, req.memory_id)
        memory = state.created
        retired = aggregate.memory_deleted_event(req.tenant_id, memory, utcnow())

        async def project(committed: Sequence[EventEnvelope]) -> None:
            await self.summaries.apply(committed or await self.store.get_events([retired.event_id]))

        await self._record(summary_stream(req.tenant_id, req.user_id, memory.conversation_id), [retired], project)
        stream = await self.store.read_stream(summary_stream(req.tenant_id, req.user_id, memory.conversation_id))
        legacy_ids: list[str] = []
        for version in [req.memory_id, *aggregate.earlier_versions(stream, req.memory_id)]:
            legacy_ids += await self._delete_legacy(req.tenant_id, req.user_id, version)
        return wire.MemoryDeleteReply(memory_id=req.memory_id, deleted=not state.deleted, legacy_ids=legacy_ids)

    async def edit(self, req: wire.MemoryEditRequest) -> wire.MemoryEditReply:
        """Append the new version and the old one's retirement together, then project them, so the next list
        or context request reads the new text. A retry finds the old version retired as `edited` by this same
        text (the new id is derived from it) and answers as the first time."""
        state = await self._memory(req.tenant_id, req.user_id, req.memory_id)
        memory = state.created
        if state.deleted:
            raise MemoryNotFound(f"memory {req.memory_id!r} was deleted")
        edited = aggregate.edited_version(memory, req.text, req.user_id)
        events = aggregate.memory_edited_events(req.tenant_id, memory, edited, utcnow())
        if state.retired_reason is not None:
            if state.retired_reason != aggregate.EDITED or state.replaced_by != edited.summary_id:
                now = f"; its current version is {state.replaced_by!r}" if state.replaced_by else ""
                raise MemoryNotLive(f"memory {req.memory_id!r} was {state.retired_reason}{now}")
            # A retry: project again (the first attempt may have stopped between its append and its projection).
            await self.summaries.apply(await self.store.get_events([e.event_id for e in events]))
            return wire.MemoryEditReply(memory_id=edited.summary_id, previous_id=memory.summary_id, changed=False)
        if req.text == memory.text:
            return wire.MemoryEditReply(memory_id=memory.summary_id, previous_id=memory.summary_id, changed=False)

        async def project(_: Sequence[EventEnvelope]) -> None:
            await self.summaries.apply(await self.store.get_events([e.event_id for e in events]))

        await self._record(summary_stream(req.tenant_id, req.user_id, memory.conversation_id), events, project)
        return wire.MemoryEditReply(memory_id=edited.summary_id, previous_id=memory.summary_id, changed=True)

    async def _delete_legacy(self, tenant_id: str, user_id: str, memory_id: str) -> list[str]:
        """Delete the memory's legacy entry if it has one; returns its id if it was live until now."""
        legacy_id = legacy_lore.legacy_id_for(tenant_id, user_id, memory_id)
        stream = legacy_lore_stream(tenant_id, user_id, legacy_id)
        if await self.store.stream_version(stream) == 0:
            return []
        live = await self.legacy.by_ids(tenant_id, [legacy_id], user_id=user_id)
        deleted = [legacy_lore.legacy_deleted_event(tenant_id, user_id, memory_id, utcnow())]
        await self._record(stream, deleted, self._legacy_stream(stream))
        return [v.legacy_id for v in live]

    async def list_items(self, req: wire.MemoryListRequest) -> wire.MemoryListReply:
        sources = sources_for(req)
        count = req.offset + req.limit  # the prefix of each source a page of the union can need
        prefixes: list[list[wire.MemoryItem]] = []
        total = 0
        if sources.summaries:
            items, n = await self._summary_items(req, count)
            prefixes.append(items)
            total += n
        if sources.legacy:
            asked = LegacyPage(req.tenant_id, req.user_id, req.bot_id, req.conversation_id)
            views, n = await self.legacy.listed(asked, 0, count)
            prefixes.append([legacy_item(v) for v in views])
            total += n
        if sources.knowledge and self.knowledge is not None:
            fact_type = req.type if req.type not in (None, wire.LEGACY_MEMORY) else None
            items, n = await self.knowledge.first(
                req.tenant_id,
                req.user_id,
                character_id=req.bot_id,
                fact_type=fact_type,
                conversation_id=req.conversation_id,
                count=count,
            )
            prefixes.append(items)
            total += n
        return wire.MemoryListReply(
            items=merge_page(prefixes, req.offset, req.limit), total=total, offset=req.offset, limit=req.limit
        )

    async def _summary_items(self, req: wire.MemoryListRequest, count: int) -> tuple[list[wire.MemoryItem], int]:
        converted: list[str] | None = None
        if req.converted_to_lore is not None:
            converted = await self.legacy.converted_memory_ids(req.tenant_id, req.user_id)
        asked = SummaryPage(
            req.tenant_id,
            req.user_id,
            summary_type=req.type,
            participant=req.bot_id,
            only_ids=converted if req.converted_to_lore else None,
            except_ids=(converted or ()) if req.converted_to_lore is False else (),
            include_retired=req.include_retired,
            conversation_id=req.conversation_id,
        )
        listed, total = await self.summaries.listed(asked, 0, count)
        ids = [s.view.summary_id for s in listed]
        legacy = await self.legacy.for_memories(req.tenant_id, ids, user_id=req.user_id)
        return [summary_item(s, legacy.get(s.view.summary_id)) for s in listed], total

    async def _record(self, stream: str, events: Sequence[NewEvent], project: Project) -> AppendResult:
        # Another writer (the summarizer) may append meanwhile: re-read the version and retry; each caller
        # projects its own way before the saver publishes.
        return await self.saver.save_at_head(stream, events, project=project)

    def _legacy_stream(self, stream: str) -> Project:
        """Project a legacy entry's whole stream (idempotent: a retry after a crash heals)."""

        async def project(_: Sequence[EventEnvelope]) -> None:
            await self.legacy.apply(await self.store.read_stream(stream))

        return project


def summary_item(listed: SummaryListed, legacy: LegacyLoreView | None) -> wire.MemoryItem:
    view = listed.view
    return mapped(
        wire.MemoryItem,
        view,
        source="memory",
        id=view.summary_id,
        type=view.summary_type,
        converted_to_lore=legacy is not None,
        legacy_id=legacy.legacy_id if legacy else None,
        status=listed.status,
        prompt_version=listed.prompt_version,
        message_ids=view.cited_message_ids,
    )


def legacy_item(view: LegacyLoreView) -> wire.MemoryItem:
    return mapped(
        wire.MemoryItem, view, source="legacy_lore", id=view.legacy_id, type=wire.LEGACY_MEMORY, converted_to_lore=True
    )
