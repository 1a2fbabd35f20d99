"""Lore service wiring: three request-reply subscribers (see ``handlers.py`` for the contract).

Subjects ``mnemo.rpc.lore.import.v1``, ``mnemo.rpc.lore.export.v1`` and ``mnemo.rpc.lore.attach.v1``, each in
the queue group ``mnemo_lore`` (replicas share requests; each answered once).
"""

from __future__ import annotations

from faststream.nats import NatsRouter
from faststream.nats.message import NatsMessage

from services.lore.books import LoreBooks
from services.lore.handlers import StrictAttach, StrictExport, StrictImport, answer
from shared import subjects
from shared.events.contract import ErrorReply
from shared.events.lore_contract import LoreAttachReply, LoreExportReply, LoreImportReply
from shared.readmodels.lore import LoreReadModel
from shared.runtime import Deps

SERVICE = "lore"


async def raw_body(message: NatsMessage) -> bytes:
    """Keep the body as bytes, so that invalid JSON still gets an ErrorReply (FastStream would drop it)."""
    return message.body


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

    return router
