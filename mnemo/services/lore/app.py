"""Lore service wiring: request-reply subscribers, each in the queue group ``mnemo_lore`` (replicas share
requests; each answered once).

Contract: ``mnemo.rpc.lore.{import,export,list,attach,detach}.v1``, ``mnemo.rpc.lore.book.{create,delete}.v1`` and
``mnemo.rpc.lore.entry.{create,update,delete}.v1`` (see ``mnemo_client.wire.lore_contract``), and documents:
``mnemo.rpc.lore.document.{import,get,list,delete}.v1`` (``mnemo_client.wire.document_contract``, imports run
in the background: ``documents/imports.py``). Every request gets a
reply: the reply model, or ``ErrorReply`` with ``bad_request`` (invalid request, or a file that is not a
readable lorebook, with what is wrong), ``not_found`` (no such book in the tenant, or not the acting user's),
``book_too_large`` / ``too_many_books`` / ``rate_limited`` (the tenant's limits, ``mnemo/services/lore/limits.py``)
or ``internal`` (``mnemo.shared.rpc``).
"""

from __future__ import annotations

import functools

from faststream.nats import NatsRouter
from nats.js.object_store import ObjectStore

from mnemo.services.lore.books import BadRequest, LoreBooks, LoreNotFound
from mnemo.services.lore.documents.imports import DocumentImports
from mnemo.services.lore.formats.convert import LoreImportError
from mnemo.services.lore.listing import list_books
from mnemo.services.lore.settings import SECTION, LoreSettings
from mnemo.shared import subjects
from mnemo.shared.bootstrap import ServiceDefinition
from mnemo.shared.deps import Deps
from mnemo.shared.limits import RateLimiter
from mnemo.shared.readmodels.catalog import DOCUMENTS, LORE
from mnemo.shared.rpc import serve
from mnemo.shared.settings import read_section
from mnemo_client.wire.document_contract import (
    DocumentDeleteRequest,
    DocumentGetRequest,
    DocumentImportRequest,
    DocumentListRequest,
    DocumentState,
)
from mnemo_client.wire.lore_contract import (
    LoreAttachRequest,
    LoreBookCreateRequest,
    LoreBookDeleteRequest,
    LoreBookRenameRequest,
    LoreDetachRequest,
    LoreEntryCreateRequest,
    LoreEntryDeleteRequest,
    LoreEntryUpdateRequest,
    LoreExportRequest,
    LoreImportRequest,
    LoreListRequest,
)

SERVICE = "lore"
ERRORS: dict[type[Exception], str] = {
    LoreImportError: "bad_request",
    BadRequest: "bad_request",
    LoreNotFound: "not_found",
}


def document_imports(deps: Deps, books: LoreBooks, settings: LoreSettings | None = None) -> DocumentImports:
    """Document imports over the broker's Object Store bucket and core NATS status events."""
    broker = deps.broker

    async def uploads() -> ObjectStore:
        # Declared with its limits at start (mnemo/shared/streams.py); FastStream caches the handle.
        return await broker.object_storage(subjects.UPLOADS_BUCKET, declare=False)

    async def status(state: DocumentState) -> None:
        await broker.publish(state.model_dump_json().encode(), subjects.LORE_DOCUMENT_STATUS)

    return DocumentImports(
        deps.store,
        deps.read_model(DOCUMENTS),
        books,
        deps.saver,
        uploads,
        deps.cipher,
        status,
        (settings or read_section(SECTION, LoreSettings)).documents,
        deps.settings.streams.upload_max_object_bytes,
    )


def create_router(deps: Deps) -> NatsRouter:
    router = NatsRouter()
    model = deps.read_model(LORE)
    books = LoreBooks(deps.store, model, deps.saver, deps.settings.limits)
    documents = document_imports(deps, books)
    deps.on_started.append(documents.resume)
    on = functools.partial(serve, router, service=SERVICE, errors=ERRORS, limiter=RateLimiter(deps.settings.limits))
    on(subjects.LORE_IMPORT, request=LoreImportRequest, call=books.import_book, max_workers=4)
    on(subjects.LORE_EXPORT, request=LoreExportRequest, call=books.export_book)
    on(subjects.LORE_ATTACH, request=LoreAttachRequest, call=books.attach)
    on(subjects.LORE_DETACH, request=LoreDetachRequest, call=books.detach)
    on(subjects.LORE_BOOK_CREATE, request=LoreBookCreateRequest, call=books.create_book)
    on(subjects.LORE_BOOK_DELETE, request=LoreBookDeleteRequest, call=books.delete_book)
    on(subjects.LORE_BOOK_RENAME, request=LoreBookRenameRequest, call=books.rename_book)
    on(subjects.LORE_ENTRY_CREATE, request=LoreEntryCreateRequest, call=books.create_entry)
    on(subjects.LORE_ENTRY_UPDATE, request=LoreEntryUpdateRequest, call=books.update_entry)
    on(subjects.LORE_ENTRY_DELETE, request=LoreEntryDeleteRequest, call=books.delete_entry)
    on(subjects.LORE_LIST, request=LoreListRequest, call=functools.partial(list_books, model))
    on(subjects.LORE_DOCUMENT_IMPORT, request=DocumentImportRequest, call=documents.import_document, max_workers=4)
    on(subjects.LORE_DOCUMENT_GET, request=DocumentGetRequest, call=documents.get)
    on(subjects.LORE_DOCUMENT_LIST, request=DocumentListRequest, call=documents.list)
    on(subjects.LORE_DOCUMENT_DELETE, request=DocumentDeleteRequest, call=documents.delete)
    return router


DEFINITION = ServiceDefinition(SERVICE, create_router, read_models=(LORE, DOCUMENTS))
