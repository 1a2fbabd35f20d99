"""Lore service wiring: request-reply subscribers (see ``handlers.py`` for the contract).

Subjects ``mnemo.rpc.lore.{import,export,attach,detach}.v1``, ``mnemo.rpc.lore.book.{create,delete}.v1`` and
``mnemo.rpc.lore.entry.{create,update,delete}.v1``, each in the queue group ``mnemo_lore`` (replicas share
requests; each answered once).
"""

from __future__ import annotations

from faststream.nats import NatsRouter

from services.lore.books import LoreBooks
from services.lore.handlers import (
    StrictAttach,
    StrictBookCreate,
    StrictBookDelete,
    StrictDetach,
    StrictEntryCreate,
    StrictEntryDelete,
    StrictEntryUpdate,
    StrictExport,
    StrictImport,
    answer,
)
from shared import subjects
from shared.events.contract import ErrorReply
from shared.events.lore_contract import (
    LoreAttachReply,
    LoreBookCreateReply,
    LoreDeleteReply,
    LoreDetachReply,
    LoreEntryReply,
    LoreExportReply,
    LoreImportReply,
)
from shared.readmodels.lore import LoreReadModel
from shared.rpc import raw_body
from shared.runtime import Deps

SERVICE = "lore"


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    books = LoreBooks(deps.store, LoreReadModel(deps.db, deps.cipher), deps.publisher)
    queue = subjects.queue_group(SERVICE)

    @router.subscriber(
        subjects.LORE_IMPORT,
        queue=queue,
        decoder=raw_body,
        max_workers=4,
        title=f"lore: {subjects.LORE_IMPORT}",
        description="Request LoreImportRequest; reply LoreImportReply or ErrorReply.",
    )
    async def on_lore_import(body: bytes) -> LoreImportReply | ErrorReply:
        return await answer(StrictImport, body, books.import_book)

    @router.subscriber(
        subjects.LORE_EXPORT,
        queue=queue,
        decoder=raw_body,
        title=f"lore: {subjects.LORE_EXPORT}",
        description="Request LoreExportRequest; reply LoreExportReply or ErrorReply.",
    )
    async def on_lore_export(body: bytes) -> LoreExportReply | ErrorReply:
        return await answer(StrictExport, body, books.export_book)

    @router.subscriber(
        subjects.LORE_ATTACH,
        queue=queue,
        decoder=raw_body,
        title=f"lore: {subjects.LORE_ATTACH}",
        description="Request LoreAttachRequest; reply LoreAttachReply or ErrorReply.",
    )
    async def on_lore_attach(body: bytes) -> LoreAttachReply | ErrorReply:
        return await answer(StrictAttach, body, books.attach)

    @router.subscriber(subjects.LORE_DETACH, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_DETACH}")
    async def on_lore_detach(body: bytes) -> LoreDetachReply | ErrorReply:
        return await answer(StrictDetach, body, books.detach)

    @router.subscriber(
        subjects.LORE_BOOK_CREATE, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_BOOK_CREATE}"
    )
    async def on_book_create(body: bytes) -> LoreBookCreateReply | ErrorReply:
        return await answer(StrictBookCreate, body, books.create_book)

    @router.subscriber(
        subjects.LORE_BOOK_DELETE, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_BOOK_DELETE}"
    )
    async def on_book_delete(body: bytes) -> LoreDeleteReply | ErrorReply:
        return await answer(StrictBookDelete, body, books.delete_book)

    @router.subscriber(
        subjects.LORE_ENTRY_CREATE, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_ENTRY_CREATE}"
    )
    async def on_entry_create(body: bytes) -> LoreEntryReply | ErrorReply:
        return await answer(StrictEntryCreate, body, books.create_entry)

    @router.subscriber(
        subjects.LORE_ENTRY_UPDATE, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_ENTRY_UPDATE}"
    )
    async def on_entry_update(body: bytes) -> LoreEntryReply | ErrorReply:
        return await answer(StrictEntryUpdate, body, books.update_entry)

    @router.subscriber(
        subjects.LORE_ENTRY_DELETE, queue=queue, decoder=raw_body, title=f"lore: {subjects.LORE_ENTRY_DELETE}"
    )
    async def on_entry_delete(body: bytes) -> LoreDeleteReply | ErrorReply:
        return await answer(StrictEntryDelete, body, books.delete_entry)

    return router
