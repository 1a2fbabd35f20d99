"""The public wire contract as a FastStream application, for its AsyncAPI document (`make asyncapi`).

The running services consume JetStream in raw batches (see shared/delivery.py), which FastStream cannot
describe; this app declares each public subject with its pydantic model instead, so the document is
generated from the same models the services validate with. It is never run against a server.
"""

from __future__ import annotations

from typing import Any

from faststream import FastStream
from faststream.nats import NatsBroker
from faststream.specification import AsyncAPI

from shared import subjects
from shared.events import contract, document_contract, lore_contract, memory_contract

_LORE_ERRORS = (
    "Request-reply (lore service). Errors: ErrorReply {error: {code, message}} with bad_request (invalid request, "
    "or a file that is not a readable lorebook, saying what is wrong) or not_found (no such book in the tenant)."
)
_DOCUMENT_ERRORS = (
    "Request-reply (lore service): documents as lore. The file goes in the JetStream Object Store bucket "
    "MNEMO_UPLOADS as `<tenant_id>/...` (or inline as data_base64 when small); import answers `accepted` at once "
    "and the lore service publishes DocumentState on mnemo.lore.document.status.v1 until `completed` or `failed` "
    "(with a reason). Errors: ErrorReply {error: {code, message}} with bad_request (invalid request, unsupported "
    "file type, an object outside the tenant's prefix) or not_found (no such object or document of this user)."
)
_MEMORY_ERRORS = (
    "Request-reply (memory service). Errors: ErrorReply {error: {code, message}} with bad_request (invalid JSON "
    "or request, saying what is wrong) or not_found (no such memory for that tenant and user)."
)


def build_contract_app() -> FastStream:
    broker = NatsBroker(logger=None)
    inbound: list[tuple[str, type[Any], str]] = [
        (subjects.MESSAGE_CREATED, contract.MessageCreated, "A chat message was posted (JetStream)."),
        (subjects.MESSAGE_EDITED, contract.MessageEdited, "A message's text changed (JetStream)."),
        (subjects.MESSAGE_DELETED, contract.MessageDeleted, "A message was removed (JetStream)."),
        (subjects.BOT_UPSERTED, contract.BotUpserted, "A character was created or changed (JetStream)."),
        (subjects.PERSONA_UPSERTED, contract.PersonaUpserted, "A user's persona was created or changed."),
    ]
    for subject, model, description in inbound:
        broker.publisher(subject, schema=model, description=description, title=subject)

    @broker.subscriber(
        subjects.CONTEXT_ASSEMBLE,
        title=subjects.CONTEXT_ASSEMBLE,
        description="Request-reply: the prompt context for the next bot reply. Invalid requests get "
        "ErrorReply {error: {code, message}}.",
    )
    async def assemble(request: contract.ContextAssembleRequest) -> contract.ContextAssembleReply:
        raise NotImplementedError("documentation only: the context-assembler service answers this subject")

    @broker.subscriber(subjects.LORE_IMPORT, title=subjects.LORE_IMPORT, description=_LORE_ERRORS)
    async def lore_import(request: lore_contract.LoreImportRequest) -> lore_contract.LoreImportReply:
        raise NotImplementedError("documentation only: the lore service answers this subject")

    @broker.subscriber(subjects.LORE_EXPORT, title=subjects.LORE_EXPORT, description=_LORE_ERRORS)
    async def lore_export(request: lore_contract.LoreExportRequest) -> lore_contract.LoreExportReply:
        raise NotImplementedError("documentation only: the lore service answers this subject")

    @broker.subscriber(subjects.LORE_ATTACH, title=subjects.LORE_ATTACH, description=_LORE_ERRORS)
    async def lore_attach(request: lore_contract.LoreAttachRequest) -> lore_contract.LoreAttachReply:
        raise NotImplementedError("documentation only: the lore service answers this subject")

    lore_management: list[tuple[str, type[Any], type[Any]]] = [
        (subjects.LORE_DETACH, lore_contract.LoreDetachRequest, lore_contract.LoreDetachReply),
        (subjects.LORE_BOOK_CREATE, lore_contract.LoreBookCreateRequest, lore_contract.LoreBookCreateReply),
        (subjects.LORE_BOOK_DELETE, lore_contract.LoreBookDeleteRequest, lore_contract.LoreDeleteReply),
        (subjects.LORE_ENTRY_CREATE, lore_contract.LoreEntryCreateRequest, lore_contract.LoreEntryReply),
        (subjects.LORE_ENTRY_UPDATE, lore_contract.LoreEntryUpdateRequest, lore_contract.LoreEntryReply),
        (subjects.LORE_ENTRY_DELETE, lore_contract.LoreEntryDeleteRequest, lore_contract.LoreDeleteReply),
    ]
    for subject, request_model, reply_model in lore_management:
        broker.subscriber(subject, title=subject, description=_LORE_ERRORS)(_documented(request_model, reply_model))

    documents: list[tuple[str, type[Any], type[Any]]] = [
        (
            subjects.LORE_DOCUMENT_IMPORT,
            document_contract.DocumentImportRequest,
            document_contract.DocumentImportReply,
        ),
        (subjects.LORE_DOCUMENT_GET, document_contract.DocumentGetRequest, document_contract.DocumentState),
        (subjects.LORE_DOCUMENT_LIST, document_contract.DocumentListRequest, document_contract.DocumentListReply),
        (
            subjects.LORE_DOCUMENT_DELETE,
            document_contract.DocumentDeleteRequest,
            document_contract.DocumentDeleteReply,
        ),
    ]
    for subject, request_model, reply_model in documents:
        broker.subscriber(subject, title=subject, description=_DOCUMENT_ERRORS)(_documented(request_model, reply_model))
    broker.publisher(
        subjects.LORE_DOCUMENT_STATUS,
        schema=document_contract.DocumentState,
        title=subjects.LORE_DOCUMENT_STATUS,
        description="A document's import state at each step (core NATS, published by the lore service).",
    )

    @broker.subscriber(
        subjects.MEMORY_CONVERT_TO_LORE, title=subjects.MEMORY_CONVERT_TO_LORE, description=_MEMORY_ERRORS
    )
    async def memory_convert_to_lore(
        request: memory_contract.MemoryConvertToLoreRequest,
    ) -> memory_contract.MemoryConvertToLoreReply:
        raise NotImplementedError("documentation only: the memory service answers this subject")

    @broker.subscriber(subjects.MEMORY_DELETE, title=subjects.MEMORY_DELETE, description=_MEMORY_ERRORS)
    async def memory_delete(request: memory_contract.MemoryDeleteRequest) -> memory_contract.MemoryDeleteReply:
        raise NotImplementedError("documentation only: the memory service answers this subject")

    @broker.subscriber(subjects.MEMORY_LIST, title=subjects.MEMORY_LIST, description=_MEMORY_ERRORS)
    async def memory_list(request: memory_contract.MemoryListRequest) -> memory_contract.MemoryListReply:
        raise NotImplementedError("documentation only: the memory service answers this subject")

    return FastStream(
        broker,
        specification=AsyncAPI(
            title="mnemo",
            version="1.0.0",
            description="Long-term memory and lore for chat and roleplay platforms: public wire contract v1.",
        ),
    )


def _documented(request_model: type[Any], reply_model: type[Any]) -> Any:
    """A documentation-only handler typed with the subject's request and reply models."""

    async def handler(request: Any) -> Any:
        raise NotImplementedError("documentation only: the lore service answers this subject")

    handler.__annotations__ = {"request": request_model, "return": reply_model}
    return handler


def asyncapi_document() -> dict[str, Any]:
    doc: dict[str, Any] = build_contract_app().schema.to_specification().to_jsonable()
    return doc
