"""The lore service's I/O: append lorebook events, project them, publish them; read books for export.

Every change is an event in the book's stream (``lorebook/<tenant>/<book>``). The service projects the whole
stream into the read model right after its append (idempotent), so a reply means the book is readable (the
context-assembler sees it on the next request) even when an earlier attempt crashed between the append and
the projection. Publishing is best effort: the relay republishes anything not confirmed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.lore import domain
from shared.eventlog.port import ConcurrencyError, EventStore
from shared.events.envelope import NewEvent, utcnow
from shared.events.lore_contract import (
    LoreAttachReply,
    LoreAttachRequest,
    LoreExportReply,
    LoreExportRequest,
    LoreImportReply,
    LoreImportRequest,
    LoreImportWarning,
)
from shared.events.recorded import lorebook_stream
from shared.lore.exporter import export_world_info
from shared.readmodels.lore import LoreReadModel
from shared.runtime import CommittedPublisher

MAX_CONFLICT_RETRIES = 5


class NotFound(LookupError):
    """The book does not exist in this tenant."""


class LoreBooks:
    def __init__(self, store: EventStore, read_model: LoreReadModel, publisher: CommittedPublisher) -> None:
        self._store = store
        self._read_model = read_model
        self._publisher = publisher

    async def import_book(self, req: LoreImportRequest) -> LoreImportReply:
        """Raises ``LoreImportError`` (from ``shared.lore``) when the file cannot be read as a lorebook."""
        result, lorebook_id = domain.read_file(req)
        events = domain.import_events(req, result, lorebook_id, utcnow())
        await self._record(req.tenant_id, lorebook_id, events)
        return LoreImportReply(
            lorebook_id=lorebook_id,
            entries=len(result.book.entries),
            format=result.format,
            warnings=[
                LoreImportWarning(uid=w.uid, field=w.field, message=f"{w.field}: {w.message}") for w in result.warnings
            ],
        )

    async def export_book(self, req: LoreExportRequest) -> LoreExportReply:
        view = await self._read_model.book(req.tenant_id, req.lorebook_id)
        if view is None:
            raise NotFound(f"no lorebook {req.lorebook_id!r} in this tenant")
        data: dict[str, Any] = export_world_info(view.book, view.original)
        return LoreExportReply(lorebook_id=view.lorebook_id, name=view.name, data=data)

    async def attach(self, req: LoreAttachRequest) -> LoreAttachReply:
        if await self._read_model.book(req.tenant_id, req.lorebook_id) is None:
            raise NotFound(f"no lorebook {req.lorebook_id!r} in this tenant")
        await self._record(req.tenant_id, req.lorebook_id, [domain.attach_event(req, utcnow())])
        return LoreAttachReply(
            lorebook_id=req.lorebook_id, bot_ids=sorted(set(req.bot_ids)), conversation=req.conversation
        )

    async def _record(self, tenant_id: str, lorebook_id: str, events: Sequence[NewEvent]) -> None:
        stream = lorebook_stream(tenant_id, lorebook_id)
        for _ in range(MAX_CONFLICT_RETRIES):
            version = await self._store.stream_version(stream)
            try:
                result = await self._store.append(stream, version, events)
            except ConcurrencyError:
                continue  # another request changed this book meanwhile; re-read and retry
            await self._read_model.apply(await self._store.read_stream(stream))
            if result.committed:
                await self._publisher.publish_committed(result.committed)
            return
        raise ConcurrencyError(stream, -1)
