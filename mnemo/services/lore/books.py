"""The lore service's I/O: append lorebook events, project them, publish them; read books for export.

Every change is an event in the book's stream (``lorebook/<tenant>/<book>``). The service projects its new
events into the read model right after its append (idempotent; the whole stream when they do not follow the
stored state), so a reply means the book is readable (the context-assembler sees it on the next request)
even when an earlier attempt crashed between the append and the projection. Publishing is best effort: the relay republishes anything not confirmed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from mnemo.services.lore import domain
from mnemo.services.lore.formats.exporter import entry_to_world_info, export_world_info
from mnemo.services.lore.limits import check_attach, check_book, with_entry
from mnemo.shared.aggregates.lorebook import BookState, VersionGap, deciders, fold_all
from mnemo.shared.aggregates.lorebook.deciders import BadRequest, LoreNotFound
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import AppendDecision, EventSaver
from mnemo.shared.events.envelope import EventEnvelope, NewEvent, utcnow
from mnemo.shared.events.recorded import lorebook_stream
from mnemo.shared.lore.model import LoreEntry
from mnemo.shared.readmodels.ports import LorePort
from mnemo.shared.settings import LimitsSettings
from mnemo_client.wire import lore_contract as wire

_EntryRequest = TypeVar("_EntryRequest", wire.LoreEntryCreateRequest, wire.LoreEntryUpdateRequest)
__all__ = ["BadRequest", "LoreBooks", "LoreNotFound"]


@dataclass(eq=False)
class LoreBooks:
    store: EventStore
    read_model: LorePort
    saver: EventSaver
    limits: LimitsSettings = field(default_factory=LimitsSettings)

    async def import_book(self, req: wire.LoreImportRequest) -> wire.LoreImportReply:
        """Raises ``LoreImportError`` (from ``formats.importer``) when the file cannot be read as a lorebook."""
        result, lorebook_id = domain.read_file(req)
        limits = self.limits.for_tenant(req.tenant_id)
        check_book(result.book.entries, limits)
        await check_attach(self.read_model, req.tenant_id, lorebook_id, req.attach_to_bots, limits)
        state = await self._book_state(req.tenant_id, lorebook_id)
        # A book deleted (or erased) and imported again is a new generation: its event ids must not be the
        # first import's.
        generation = state.version if state is not None and state.deleted else 0
        events = deciders.import_events(req, result, lorebook_id, utcnow(), generation)
        await self._record(req.tenant_id, lorebook_id, events)
        return wire.LoreImportReply(
            lorebook_id=lorebook_id,
            entries=len(result.book.entries),
            format=result.format,
            warnings=[
                wire.LoreImportWarning(uid=w.uid, field=w.field, message=f"{w.field}: {w.message}")
                for w in result.warnings
            ],
        )

    async def export_book(self, req: wire.LoreExportRequest) -> wire.LoreExportReply:
        view = await self.read_model.book(req.tenant_id, req.lorebook_id)
        if view is None:
            raise LoreNotFound(f"no lorebook {req.lorebook_id!r} in this tenant")
        data: dict[str, Any] = export_world_info(view.book, view.original)
        return wire.LoreExportReply(lorebook_id=view.lorebook_id, name=view.name, data=data)

    async def attach(self, req: wire.LoreAttachRequest) -> wire.LoreAttachReply:
        view = await self.read_model.book(req.tenant_id, req.lorebook_id)
        if view is None or (req.user_id is not None and view.owner_user_id != req.user_id):
            raise LoreNotFound(f"no lorebook {req.lorebook_id!r} in this tenant")
        limits = self.limits.for_tenant(req.tenant_id)
        await check_attach(self.read_model, req.tenant_id, req.lorebook_id, req.bot_ids, limits)
        await self._record(req.tenant_id, req.lorebook_id, [deciders.attach_event(req, utcnow())])
        return wire.LoreAttachReply(
            lorebook_id=req.lorebook_id, bot_ids=sorted(set(req.bot_ids)), conversation=req.conversation
        )

    async def _record(self, tenant_id: str, lorebook_id: str, events: Sequence[NewEvent]) -> None:
        """Append at the stream's current version (another request changing this book meanwhile makes it
        re-read and retry), project, then publish what committed."""
        stream = lorebook_stream(tenant_id, lorebook_id)

        async def project(committed: Sequence[EventEnvelope]) -> None:
            await self._project(stream, committed)

        await self.saver.save_at_head(stream, events, project=project)

    async def _book_state(self, tenant_id: str, lorebook_id: str) -> BookState | None:
        """The book to decide on: its aggregate, the fold of its log stream (``mnemo.shared.aggregates.lorebook``),
        begun at the read model's state as a snapshot, so only the log's events past it are read (none, unless
        a crash came between an append and its projection). When nothing of the stream can be read any more
        (its owner or tenant was erased: their events are skipped), a deleted book at the stream's version, so
        that a new create or import starts a new life with event ids of its own instead of repeating the erased
        ones (which the log would take as a retry and ignore)."""
        snapshot = await self.read_model.state(tenant_id, lorebook_id)
        stream = lorebook_stream(tenant_id, lorebook_id)
        tail = await self.store.read_stream(stream, after_version=snapshot.version if snapshot is not None else 0)
        with contextlib.suppress(VersionGap):  # raised when only the unreadable earlier life is there
            if (state := fold_all(snapshot, tail)) is not None:
                return state
        version = await self.store.stream_version(stream)
        return BookState(tenant_id, lorebook_id, deleted=True, version=version) if version else None

    async def _project(self, stream: str, committed: Sequence[EventEnvelope]) -> None:
        """Fold just the new events onto the stored state; the whole stream when they do not follow it (a
        retry after a crash between append and projection: nothing new, or the read model is behind)."""
        if committed:
            try:
                await self.read_model.apply(committed)
                return
            except VersionGap:
                pass
        await self.read_model.apply(await self.store.read_stream(stream))

    # --- management: every change is decided on the book's folded state and appended at its version ------
    async def _change(
        self, tenant_id: str, lorebook_id: str, decide: Callable[[BookState | None], Sequence[NewEvent]]
    ) -> BookState | None:
        """Decide on the current state and append at its version; on a conflict (another change, or a read
        model behind the log after a crash) re-project the stream and decide again. Returns the new state."""
        stream = lorebook_stream(tenant_id, lorebook_id)

        async def on_state() -> AppendDecision[BookState | None]:
            state = await self._book_state(tenant_id, lorebook_id)
            return AppendDecision(state.version if state else 0, decide(state), state)

        async def reproject() -> None:
            await self.read_model.apply(await self.store.read_stream(stream))

        async def project(committed: Sequence[EventEnvelope]) -> None:
            await self._project(stream, committed)

        done = await self.saver.save_decided(stream, on_state, project=project, on_conflict=reproject)
        if done.result is None:
            return done.value
        return await self.read_model.state(tenant_id, lorebook_id)

    async def _changed(
        self, tenant_id: str, lorebook_id: str, decide: Callable[[BookState | None], Sequence[NewEvent]]
    ) -> bool:
        """:meth:`_change` for a call whose reply says whether anything changed: whether the decision that was
        appended (the last one, after any conflict) had events."""
        changed = False

        def recorded(state: BookState | None) -> Sequence[NewEvent]:
            nonlocal changed
            events = decide(state)
            changed = bool(events)
            return events

        await self._change(tenant_id, lorebook_id, recorded)
        return changed

    async def create_book(self, req: wire.LoreBookCreateRequest) -> wire.LoreBookCreateReply:
        lorebook_id = deciders.book_id_for(req)
        limits = self.limits.for_tenant(req.tenant_id)
        await check_attach(self.read_model, req.tenant_id, lorebook_id, req.attach_to_bots, limits)
        created = False

        def decide(state: BookState | None) -> Sequence[NewEvent]:
            nonlocal created
            events = deciders.create_book(state, req, utcnow())
            created = bool(events)
            return events

        await self._change(req.tenant_id, lorebook_id, decide)
        return wire.LoreBookCreateReply(lorebook_id=lorebook_id, created=created)

    async def delete_book(self, req: wire.LoreBookDeleteRequest) -> wire.LoreDeleteReply:
        deleted = await self._changed(
            req.tenant_id,
            req.lorebook_id,
            lambda state: deciders.delete_book(
                deciders.owned(state, req.user_id, req.lorebook_id, allow_deleted=True), utcnow()
            ),
        )
        return wire.LoreDeleteReply(lorebook_id=req.lorebook_id, deleted=deleted)

    async def rename_book(self, req: wire.LoreBookRenameRequest) -> wire.LoreBookRenameReply:
        renamed = await self._changed(
            req.tenant_id,
            req.lorebook_id,
            lambda state: deciders.rename_book(deciders.owned(state, req.user_id, req.lorebook_id), req.name, utcnow()),
        )
        return wire.LoreBookRenameReply(lorebook_id=req.lorebook_id, name=req.name, renamed=renamed)

    async def detach(self, req: wire.LoreDetachRequest) -> wire.LoreDetachReply:
        await self._change(
            req.tenant_id,
            req.lorebook_id,
            lambda state: deciders.detach(deciders.owned(state, req.user_id, req.lorebook_id), req, utcnow()),
        )
        return wire.LoreDetachReply(
            lorebook_id=req.lorebook_id, bot_ids=sorted(set(req.bot_ids)), conversation=req.conversation
        )

    async def create_entry(self, req: wire.LoreEntryCreateRequest) -> wire.LoreEntryReply:
        return await self._entry_change(req, deciders.create_entry)

    async def update_entry(self, req: wire.LoreEntryUpdateRequest) -> wire.LoreEntryReply:
        return await self._entry_change(req, deciders.update_entry)

    async def _entry_change(
        self,
        req: _EntryRequest,
        change: Callable[[BookState, _EntryRequest, datetime], tuple[LoreEntry, list[NewEvent]]],
    ) -> wire.LoreEntryReply:
        """Create or update one entry of an owned book (``change`` is ``deciders.create_entry`` or
        ``deciders.update_entry``); the reply carries the entry as it now is."""
        made: list[Any] = []
        limits = self.limits.for_tenant(req.tenant_id)

        def decide(state: BookState | None) -> Sequence[NewEvent]:
            book = deciders.owned(state, req.user_id, req.lorebook_id)
            entry, events = change(book, req, utcnow())
            if events:
                check_book(with_entry(book.book.entries, entry), limits)
            made[:] = [entry, bool(events)]
            return events

        await self._change(req.tenant_id, req.lorebook_id, decide)
        entry, changed = made
        return wire.LoreEntryReply(
            lorebook_id=req.lorebook_id, uid=entry.uid, entry=entry_to_world_info(entry), changed=changed
        )

    async def delete_entry(self, req: wire.LoreEntryDeleteRequest) -> wire.LoreDeleteReply:
        deleted = await self._changed(
            req.tenant_id,
            req.lorebook_id,
            lambda state: deciders.delete_entry(deciders.owned(state, req.user_id, req.lorebook_id), req.uid, utcnow()),
        )
        return wire.LoreDeleteReply(lorebook_id=req.lorebook_id, uid=req.uid, deleted=deleted)
