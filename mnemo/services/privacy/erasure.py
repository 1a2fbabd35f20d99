"""Erasing a user or a tenant: destroy their data keys, delete what was derived, record that it happened.

Order matters. Keys first: from then on nothing of theirs decrypts in this process, and in any other once its
key cache expires (``MNEMO_KEY_CACHE_SECONDS``), so a projector still holding an event of theirs cannot bring
rows back for long; the rows, vectors, uploaded files and JetStream messages of theirs are then deleted, and
the rows and vectors once more after that cache time (``resweep``), catching whatever an in-flight projection
wrote meanwhile. Last, an ``erasure.completed`` event records ids and counts (no content); ``mnemo replay``
reads it to skip every event of theirs recorded before it (docs/privacy.md). Each step is idempotent, so a
failed erasure is retried by calling it again. A replica deletes one erasure's (or resweep's) rows at a time,
and the JetStream messages by sequence from an index of whose each message is, brought up to date by a
reading that every erasure waiting at the time shares (``stream_purge``); requests are rate-limited per
tenant. So a flood of erasures queues for readings instead of multiplying them.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from nats.js import JetStreamContext

from mnemo.services.privacy.stream_purge import stream_passes
from mnemo.services.privacy.uploads import delete_uploads
from mnemo.shared import subjects
from mnemo.shared.aggregates import privacy
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import new_id, utcnow
from mnemo.shared.events.recorded import privacy_stream
from mnemo.shared.readmodels import catalog
from mnemo.shared.readmodels.documents import DOCUMENTS
from mnemo.shared.readmodels.lore import LOREBOOKS
from mnemo.shared.readmodels.rows import TenantRows
from mnemo.shared.vectors import points
from mnemo.shared.vectors.port import VectorFilter, VectorIndex
from mnemo_client.wire.privacy_contract import EraseTenantRequest, EraseUserRequest, ErasureReply

log = logging.getLogger(__name__)

#: The streams a user's messages are deleted from (mnemo/services/privacy/stream_purge.py says why each).
PURGED_STREAMS = (
    # Every subject: the stream stores keyed events under the ingest partitions' subjects (mnemo.ingest.>).
    (subjects.CHAT_STREAM, ">"),
    (subjects.LOG_STREAM, subjects.LOG_ALL),
    (subjects.DLQ_STREAM, subjects.DLQ_ALL),
)


@dataclass(frozen=True)
class _Target:
    tenant_id: str
    user_id: str | None  # None: the whole tenant


class Eraser:
    def __init__(
        self,
        rows: TenantRows,
        cipher: FieldCipher,
        saver: EventSaver,
        *,
        vectors: VectorIndex | None,
        js: JetStreamContext | None,
        resweep_after_s: float,
    ) -> None:
        self._rows, self._cipher, self._saver = rows, cipher, saver
        self._vectors, self._js = vectors, js
        self._resweep_after_s = resweep_after_s
        self._resweeps: dict[_Target, asyncio.Task[None]] = {}
        # One erasure's (or resweep's) row deletion at a time per replica: each queries every read model, and
        # a flood of erasure requests must queue rather than multiply that load on the database.
        self._one_at_a_time = asyncio.Lock()
        self._stream_passes = stream_passes(js, PURGED_STREAMS) if js is not None else None

    async def erase_user(self, req: EraseUserRequest) -> ErasureReply:
        return await self._erase(_Target(req.tenant_id, req.user_id))

    async def erase_tenant(self, req: EraseTenantRequest) -> ErasureReply:
        return await self._erase(_Target(req.tenant_id, None))

    async def drain(self) -> None:
        """Wait for scheduled resweeps (tests; a stopping service)."""
        if self._resweeps:
            await asyncio.gather(*self._resweeps.values(), return_exceptions=True)

    async def _erase(self, target: _Target) -> ErasureReply:
        reply, books = await self._erase_now(target)
        if target not in self._resweeps:  # an erasure repeated before its resweep needs only the one
            task = asyncio.create_task(self._resweep(target, books))
            self._resweeps[target] = task
            task.add_done_callback(lambda _: self._resweeps.pop(target, None))
        return reply

    async def _erase_now(self, target: _Target) -> tuple[ErasureReply, list[str]]:
        erased_at = utcnow()
        books = await self._owned_books(target)
        documents, objects = await self._owned_documents(target)  # read before their rows are deleted
        async with self._one_at_a_time:
            key_ids = await self._cipher.erase(target.tenant_id, target.user_id)
            deleted = await self._sweep(target, books)
        if self._stream_passes is not None:
            deleted["stream_messages"] = await self._stream_passes.purge((target.tenant_id, target.user_id))
        if self._js is not None:
            deleted["uploads"] = await delete_uploads(
                self._js, target.tenant_id, None if target.user_id is None else objects
            )
        erasure_id = new_id()
        new = privacy.erasure_completed(
            target.tenant_id, erasure_id, target.user_id, key_ids=key_ids, deleted=deleted, books=books,
            documents=documents, erased_at=erased_at, now=utcnow(),
        )  # fmt: skip
        await self._saver.save_at_head(privacy_stream(target.tenant_id), [new])
        log.info("erased %s: %d keys destroyed, deleted %s", target, len(key_ids), deleted)
        return ErasureReply(erasure_id=erasure_id, keys_destroyed=len(key_ids), deleted=deleted), books

    async def _owned_books(self, target: _Target) -> list[str]:
        books = self._rows.owned(LOREBOOKS, target.tenant_id, target.user_id, by="owner_user_id")
        return sorted({str(d["lorebook_id"]) async for d in books})

    async def _owned_documents(self, target: _Target) -> tuple[list[str], list[str]]:
        """The ids of their documents and the names of the stored files."""
        owned = self._rows.owned(DOCUMENTS, target.tenant_id, target.user_id, by="owner_user_id")
        documents = [d async for d in owned]
        return sorted({str(d["document_id"]) for d in documents}), sorted({str(d["object_name"]) for d in documents})

    async def _sweep(self, target: _Target, books: list[str]) -> dict[str, int]:
        """Rows and vectors (the streams are :attr:`_stream_passes`')."""
        deleted: dict[str, int] = {}
        for collection in catalog.erasable():
            if target.user_id is not None and collection.kept_on_user_erasure:
                continue
            if count := await self._rows.delete_owned(collection.name, target.tenant_id, target.user_id, books):
                deleted[collection.name] = count
        if self._vectors is not None:
            filters = _vector_filters(target, books)
            for flt in filters:
                await self._vectors.delete(flt)
            deleted["vector_filters"] = len(filters)
        return deleted

    async def _resweep(self, target: _Target, books: list[str]) -> None:
        """Rows and vectors again, once in-flight work can no longer hold the key. Not the streams: what reached
        them after the first pass is new activity, or log events under the destroyed key (shredded)."""
        await asyncio.sleep(self._resweep_after_s)
        try:
            async with self._one_at_a_time:
                late = await self._sweep(target, books)
        except Exception:
            log.exception("resweep of %s failed: call the erasure again", target)
            return
        if any(late.values()):
            log.info("resweep of %s deleted what in-flight work wrote after the erasure: %s", target, late)


def _vector_filters(target: _Target, books: list[str]) -> list[VectorFilter]:
    if target.user_id is None:
        return [VectorFilter.where(**{points.TENANT_ID: target.tenant_id})]
    user = VectorFilter.where(**{points.TENANT_ID: target.tenant_id, points.USER_ID: target.user_id})
    books_points = [points.lore_entries_by_uid(target.tenant_id, b) for b in books]
    documents = [points.document_books(target.tenant_id, books)] if books else []
    return [user, *books_points, *documents]
