"""The lore service's document imports: accept an upload, read it in the background, record its chunks.

An import is answered as soon as it is accepted (``document.accepted`` recorded, the book created and
attached); the file is then read off the event loop (``parsing.py``: a subprocess with time and memory
limits, at most ``concurrent_imports`` at once), its chunks recorded in parts and the import ended with
``document.completed`` or ``document.failed`` (a reason for the user). After every step the document's
state is published on ``mnemo.lore.document.status.v1``. Each document's events are projected into the
documents read model right after their append, so ``document.get`` answers what was published.

The stored bytes: an inline upload is put in ``MNEMO_UPLOADS`` under the tenant's prefix, sealed under its
owner's data key (``stored.py``: a platform's own upload is sealed in place by the import); a failed import's
object is deleted (it is useless), so is a replaced version's once the new one completed and every object
of a deleted document.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import hashlib
import logging
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from nats.js.errors import NotFoundError
from nats.js.object_store import ObjectStore

from mnemo.services.lore.documents.parsing import parse_file
from mnemo.services.lore.documents.reading import DocumentError, kind_of
from mnemo.services.lore.documents.stored import StoredUploads
from mnemo.services.lore.settings import DocumentSettings
from mnemo.shared.aggregates import documents as ev
from mnemo.shared.aggregates.lorebook.deciders import BadRequest, LoreNotFound
from mnemo.shared.crypto import DecryptionError, FieldCipher
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import EventSaver
from mnemo.shared.events.envelope import NewEvent, utcnow
from mnemo.shared.events.recorded import DOCUMENT_ACCEPTED, document_stream
from mnemo.shared.readmodels.documents import DocumentsReadModel
from mnemo_client.wire import document_contract as wire
from mnemo_client.wire.lore_contract import LoreAttachRequest, LoreBookCreateRequest, LoreBookDeleteRequest

log = logging.getLogger(__name__)
MB = 1024**2


class Books(Protocol):
    """What imports need of ``mnemo.services.lore.books.LoreBooks``."""

    async def create_book(self, req: LoreBookCreateRequest) -> object: ...
    async def attach(self, req: LoreAttachRequest) -> object: ...
    async def delete_book(self, req: LoreBookDeleteRequest) -> object: ...


@dataclass(frozen=True)
class _Job:
    """One import under way: a version of a document and where its bytes are."""

    tenant_id: str
    document_id: str
    owner: str
    version: int
    name: str
    obj: str
    size: int  # 0 when unknown (a resumed import): the file's size is checked once it is on disk


@dataclass(eq=False)
class DocumentImports:
    store: EventStore
    documents: DocumentsReadModel
    books: Books
    saver: EventSaver
    uploads: Callable[[], Awaitable[ObjectStore]]
    cipher: FieldCipher
    status: Callable[[wire.DocumentState], Awaitable[None]]
    settings: DocumentSettings
    max_object_bytes: int

    def __post_init__(self) -> None:
        self._stored = StoredUploads(self.uploads, self.cipher)
        self._slots = asyncio.Semaphore(self.settings.concurrent_imports)
        self._running: dict[tuple[str, str], asyncio.Task[None]] = {}

    async def import_document(self, req: wire.DocumentImportRequest) -> wire.DocumentImportReply:
        try:
            kind_of(req.name)
        except DocumentError as exc:
            raise BadRequest(str(exc)) from exc
        raw: bytes | None = None
        if req.data_base64 is not None:
            try:
                raw = base64.b64decode(req.data_base64, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise BadRequest(f"`data_base64` is not valid base64: {exc}") from exc
            digest, size = hashlib.sha256(raw).hexdigest(), len(raw)
        else:
            assert req.object is not None  # the request model requires one of the two
            if not req.object.startswith(f"{req.tenant_id}/"):
                raise BadRequest("`object` must be named `<tenant_id>/...` in MNEMO_UPLOADS (the tenant's own upload)")
            try:
                digest, size = await self._stored.plain_digest(req.object)
            except NotFoundError as exc:
                raise LoreNotFound(f"no object {req.object!r} in MNEMO_UPLOADS") from exc
        if req.document_id is not None:
            rec = await self.documents.get(req.tenant_id, req.document_id)
            if rec is None or rec.state.owner_user_id != req.owner_user_id or rec.state.status == "deleted":
                raise LoreNotFound(f"no document {req.document_id!r} of this user in this tenant")
            if self._under_way(rec.state):
                raise BadRequest("an import of this document is still running; replace it once it has ended")
            document_id, version, book_id = req.document_id, rec.state.version + 1, rec.state.book_id
        else:
            document_id = ev.document_id_for(req.tenant_id, req.owner_user_id, req.name, digest)
            rec = await self.documents.get(req.tenant_id, document_id)
            if rec is not None and (rec.state.status == "completed" or self._under_way(rec.state)):
                # A retry: the same import, nothing new. A failed, deleted or abandoned one starts again.
                return wire.DocumentImportReply(
                    book_id=rec.state.book_id, document_id=document_id, version=rec.state.version
                )
            version = (
                rec.state.version + 1 if rec is not None else await self._first_version(req.tenant_id, document_id)
            )
            book_id = ev.book_id_for(req.tenant_id, document_id)
        obj = req.object or ev.inline_object_name(req.tenant_id, document_id, version)
        if raw is not None:
            await self._stored.put_inline(obj, raw, req.tenant_id, req.owner_user_id)
        await self.books.create_book(
            LoreBookCreateRequest(
                tenant_id=req.tenant_id,
                owner_user_id=req.owner_user_id,
                name=req.name,
                lorebook_id=book_id,
                attach_to_bots=req.attach_to_bots,
            )
        )
        if req.document_id is not None and req.attach_to_bots:
            await self.books.attach(
                LoreAttachRequest(tenant_id=req.tenant_id, lorebook_id=book_id, bot_ids=req.attach_to_bots)
            )
        now = utcnow()
        accepted = ev.accepted(
            req.tenant_id, document_id, book_id, req.owner_user_id, req.name, version, obj, digest, size, now
        )
        await self._record(req.tenant_id, document_id, [accepted])
        previous = rec.object_name if rec is not None and rec.object_name != obj else None
        self._start(_Job(req.tenant_id, document_id, req.owner_user_id, version, req.name, obj, size), previous)
        return wire.DocumentImportReply(book_id=book_id, document_id=document_id, version=version)

    async def resume(self) -> int:
        """Imports cut short by a restart (``processing`` with no task here) run again from their stored file;
        returns how many. Called once the service serves (``Deps.on_started``). Their events have deterministic
        ids, so the parts recorded before the restart are not recorded twice."""
        resumed = 0
        for rec in await self.documents.processing():
            s = rec.state
            if (s.tenant_id, s.document_id) in self._running:
                continue
            log.info("resuming the import of document %s v%d (cut short by a restart)", s.document_id, s.version)
            job = _Job(s.tenant_id, s.document_id, s.owner_user_id, s.version, s.name, rec.object_name, 0)
            self._start(job, previous=None)
            resumed += 1
        return resumed

    def _start(self, job: _Job, previous: str | None) -> None:
        key = (job.tenant_id, job.document_id)
        task = asyncio.create_task(self._run(job, previous))
        self._running[key] = task
        task.add_done_callback(lambda t: self._running.pop(key, None) if self._running.get(key) is t else None)

    def _under_way(self, state: wire.DocumentState) -> bool:
        """Processing here; a ``processing`` import with no task in this replica was cut short by a restart
        (``resume`` runs it again at start; meanwhile importing the file again starts a new version)."""
        return state.status == "processing" and (state.tenant_id, state.document_id) in self._running

    async def wait_idle(self) -> None:
        """Until every import under way has ended (tests, and a draining shutdown)."""
        while self._running:
            await asyncio.gather(*list(self._running.values()), return_exceptions=True)

    async def _run(self, job: _Job, previous: str | None) -> None:
        async with self._slots:
            try:
                reason = await self._read_and_record(job)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("import of document %s v%d stopped", job.document_id, job.version)
                reason = "the import stopped on an internal error; upload the file again"
            try:
                if reason is not None:
                    failed = ev.failed(job.tenant_id, job.document_id, job.version, reason, utcnow())
                    await self._record(job.tenant_id, job.document_id, [failed])
                    await self._delete_object(job.obj)
                elif previous is not None:
                    await self._delete_object(previous)
            except Exception:  # shutting down, or the log unreachable: it stays `processing` (docs/documents.md)
                log.exception("the end of document %s v%d was not recorded", job.document_id, job.version)

    async def _read_and_record(self, job: _Job) -> str | None:
        """None when completed, else why it failed."""
        limit = self.max_object_bytes
        if job.size > limit:
            return f"the file is {job.size / MB:,.0f} MB; the largest document mnemo imports is {limit / MB:,.0f} MB"
        s = self.settings
        with tempfile.TemporaryDirectory(dir=s.work_dir, prefix="mnemo-doc-") as work:
            path = Path(work) / f"upload{Path(job.name).suffix.lower()}"
            try:  # streamed to disk: the file is never whole in this process
                await self._stored.fetch(job.obj, job.tenant_id, job.owner, path)
            except DecryptionError as exc:
                log.warning("document %s v%d: stored file unreadable: %s", job.document_id, job.version, exc)
                return "the stored file cannot be read (damaged, or its owner's key was erased); upload it again"
            if path.stat().st_size > limit:
                return f"the file is over {limit / MB:,.0f} MB, the largest document mnemo imports"
            outcome = await parse_file(path, job.name, timeout_s=s.parse_timeout_s, memory_mb=s.parse_memory_mb)
        if not outcome.ok:
            return outcome.reason
        t, doc = job.tenant_id, job.document_id
        for part in ev.chunked(t, doc, job.owner, job.version, outcome.chunks, s.chunks_per_event, utcnow()):
            await self._record(t, doc, [part])
        done = ev.completed(t, doc, job.version, outcome.pages, outcome.chunks, utcnow())
        await self._record(t, doc, [done])
        return None

    async def _first_version(self, tenant_id: str, document_id: str) -> int:
        """The version a document the read model does not know starts at: 1, unless the log holds an earlier
        life of it that can no longer be read (its uploader or tenant was erased: their ``document.accepted``
        events are skipped). Then one past the stream's version, above every version that life used, so the
        new import's event ids are its own instead of the erased ones (the log would take those as a retry)."""
        stream = document_stream(tenant_id, document_id)
        version = await self.store.stream_version(stream)
        if version == 0:
            return 1
        readable = await self.store.read_stream(stream)
        return 1 if any(e.type == DOCUMENT_ACCEPTED.name for e in readable) else version + 1

    async def _record(self, tenant_id: str, document_id: str, events: Sequence[NewEvent]) -> None:
        """Append at the stream's head, project, publish what committed, then the document's new state."""

        await self.saver.save_at_head(document_stream(tenant_id, document_id), events, project=self.documents.apply)
        rec = await self.documents.get(tenant_id, document_id)
        if rec is not None:
            try:
                await self.status(rec.state)
            except Exception as exc:  # best effort: `document.get` answers the same state
                log.warning("document status not published: %s", exc)

    async def _delete_object(self, obj: str) -> None:
        with contextlib.suppress(NotFoundError):
            await (await self.uploads()).delete(obj)

    async def get(self, req: wire.DocumentGetRequest) -> wire.DocumentState:
        rec = await self.documents.get(req.tenant_id, req.document_id)
        if rec is None:
            raise LoreNotFound(f"no document {req.document_id!r} in this tenant")
        return rec.state

    async def list(self, req: wire.DocumentListRequest) -> wire.DocumentListReply:
        books = [req.book_id] if req.book_id is not None else None
        recs = await self.documents.list(req.tenant_id, owner_user_id=req.owner_user_id, lorebook_ids=books)
        return wire.DocumentListReply(documents=[r.state for r in recs])

    async def delete(self, req: wire.DocumentDeleteRequest) -> wire.DocumentDeleteReply:
        """The document's chunks (read model and points), its stored bytes and its book go."""
        rec = await self.documents.get(req.tenant_id, req.document_id)
        if rec is None or rec.state.owner_user_id != req.user_id:
            raise LoreNotFound(f"no document {req.document_id!r} of this user in this tenant")
        if rec.state.status == "deleted":
            return wire.DocumentDeleteReply(document_id=req.document_id, deleted=False)
        task = self._running.get((req.tenant_id, req.document_id))
        if task is not None:  # an import under way records nothing more
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        gone = ev.deleted(req.tenant_id, req.document_id, rec.state.version, utcnow())
        await self._record(req.tenant_id, req.document_id, [gone])
        await self._delete_object(rec.object_name)
        with contextlib.suppress(LoreNotFound):
            await self.books.delete_book(
                LoreBookDeleteRequest(tenant_id=req.tenant_id, user_id=req.user_id, lorebook_id=rec.state.book_id)
            )
        return wire.DocumentDeleteReply(document_id=req.document_id, deleted=True)
