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
from shared.events import contract, lore_contract, memory_contract, privacy_contract

_LORE_ERRORS = (
    "Request-reply (lore service). Errors: ErrorReply {error: {code, message}} with bad_request (invalid request, "
    "or a file that is not a readable lorebook, saying what is wrong) or not_found (no such book in the tenant)."
)
_MEMORY_ERRORS = (
    "Request-reply (memory service). Errors: ErrorReply {error: {code, message}} with bad_request (invalid JSON "
    "or request, saying what is wrong) or not_found (no such memory for that tenant and user)."
)

_PRIVACY_ERRORS = (
    "Request-reply (privacy service; docs/privacy.md). Errors: ErrorReply {error: {code, message}} with "
    "bad_request (invalid JSON or request, saying what is wrong) or internal."
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

    @broker.subscriber(subjects.PRIVACY_ERASE_USER, title=subjects.PRIVACY_ERASE_USER, description=_PRIVACY_ERRORS)
    async def privacy_erase_user(request: privacy_contract.EraseUserRequest) -> privacy_contract.ErasureReply:
        raise NotImplementedError("documentation only: the privacy service answers this subject")

    @broker.subscriber(subjects.PRIVACY_ERASE_TENANT, title=subjects.PRIVACY_ERASE_TENANT, description=_PRIVACY_ERRORS)
    async def privacy_erase_tenant(request: privacy_contract.EraseTenantRequest) -> privacy_contract.ErasureReply:
        raise NotImplementedError("documentation only: the privacy service answers this subject")

    @broker.subscriber(subjects.PRIVACY_EXPORT_USER, title=subjects.PRIVACY_EXPORT_USER, description=_PRIVACY_ERRORS)
    async def privacy_export_user(request: privacy_contract.ExportUserRequest) -> privacy_contract.ExportUserReply:
        raise NotImplementedError("documentation only: the privacy service answers this subject")

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
