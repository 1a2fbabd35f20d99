"""The operations the gateway serves: every public subject of the wire contract, as ``POST /v1/...``.

The path is the subject without ``mnemo.``, ``rpc.`` and the version, which becomes the path's prefix
(``mnemo.rpc.lore.book.create.v1`` -> ``/v1/lore/book/create``, ``mnemo.chat.message.created.v1`` ->
``/v1/chat/message/created``), so a NATS user finds each operation where the subject says. The request and
reply models are the wire contract's own (``shared/events/*contract.py``), so the OpenAPI document and the
NATS services validate with the same models.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict

from shared import subjects
from shared.events import contract as c
from shared.events import lore_contract as lc
from shared.events import memory_contract as mc

Kind = Literal["event", "rpc"]


@dataclass(frozen=True)
class Operation:
    subject: str
    kind: Kind
    request: type[BaseModel]
    reply: type[BaseModel] | None  # events answer with the gateway's own ``Accepted``
    summary: str

    @property
    def path(self) -> str:
        parts = self.subject.split(".")
        version, middle = parts[-1], [p for p in parts[1:-1] if p != "rpc"]
        return "/" + "/".join([version, *middle])

    @property
    def tag(self) -> str:
        return "chat events" if self.kind == "event" else self.subject.split(".")[2]

    @property
    def body_model(self) -> type[BaseModel]:
        """What the body is validated with: an RPC refuses unknown fields, as the service does
        (``shared.rpc.strict``); an event ignores them, as ingest does."""
        return strict(self.request) if self.kind == "rpc" else self.request


@functools.cache
def strict(model: type[BaseModel]) -> type[BaseModel]:
    """``model`` with unknown fields refused, under the same name (so the OpenAPI schema is named as the model)."""
    config = ConfigDict(**{**model.model_config, "extra": "forbid"})
    namespace = {"model_config": config, "__module__": model.__module__, "__qualname__": model.__qualname__}
    subclass: type[BaseModel] = type(model.__name__, (model,), namespace)
    subclass.__doc__ = model.__doc__
    return subclass


OPERATIONS: tuple[Operation, ...] = (
    Operation(subjects.MESSAGE_CREATED, "event", c.MessageCreated, None, "A chat message was posted"),
    Operation(subjects.MESSAGE_EDITED, "event", c.MessageEdited, None, "A message's text changed"),
    Operation(subjects.MESSAGE_DELETED, "event", c.MessageDeleted, None, "A message was removed"),
    Operation(subjects.BOT_UPSERTED, "event", c.BotUpserted, None, "A character was created or changed"),
    Operation(subjects.PERSONA_UPSERTED, "event", c.PersonaUpserted, None, "A persona was created or changed"),
    Operation(
        subjects.CONTEXT_ASSEMBLE,
        "rpc",
        c.ContextAssembleRequest,
        c.ContextAssembleReply,
        "The prompt context for the next bot reply",
    ),
    Operation(subjects.LORE_IMPORT, "rpc", lc.LoreImportRequest, lc.LoreImportReply, "Import a lorebook or card"),
    Operation(
        subjects.LORE_EXPORT,
        "rpc",
        lc.LoreExportRequest,
        lc.LoreExportReply,
        "Export a book as SillyTavern World Info (streamed)",
    ),
    Operation(subjects.LORE_LIST, "rpc", lc.LoreListRequest, lc.LoreListReply, "The tenant's books"),
    Operation(subjects.LORE_ATTACH, "rpc", lc.LoreAttachRequest, lc.LoreAttachReply, "Attach a book"),
    Operation(subjects.LORE_DETACH, "rpc", lc.LoreDetachRequest, lc.LoreDetachReply, "Detach a book"),
    Operation(
        subjects.LORE_BOOK_CREATE, "rpc", lc.LoreBookCreateRequest, lc.LoreBookCreateReply, "Create an empty book"
    ),
    Operation(subjects.LORE_BOOK_DELETE, "rpc", lc.LoreBookDeleteRequest, lc.LoreDeleteReply, "Delete a book"),
    Operation(subjects.LORE_ENTRY_CREATE, "rpc", lc.LoreEntryCreateRequest, lc.LoreEntryReply, "Add an entry"),
    Operation(subjects.LORE_ENTRY_UPDATE, "rpc", lc.LoreEntryUpdateRequest, lc.LoreEntryReply, "Change an entry"),
    Operation(subjects.LORE_ENTRY_DELETE, "rpc", lc.LoreEntryDeleteRequest, lc.LoreDeleteReply, "Delete an entry"),
    Operation(subjects.MEMORY_LIST, "rpc", mc.MemoryListRequest, mc.MemoryListReply, "One page of the user's memories"),
    Operation(
        subjects.MEMORY_CONVERT_TO_LORE,
        "rpc",
        mc.MemoryConvertToLoreRequest,
        mc.MemoryConvertToLoreReply,
        "Keep a memory as legacy lore",
    ),
    Operation(subjects.MEMORY_DELETE, "rpc", mc.MemoryDeleteRequest, mc.MemoryDeleteReply, "Delete a memory"),
    Operation(
        subjects.MEMORY_PROMOTE, "rpc", mc.MemoryPromoteRequest, mc.MemoryScopeReply, "Share a fact with a campaign"
    ),
    Operation(
        subjects.MEMORY_UNPROMOTE,
        "rpc",
        mc.MemoryUnpromoteRequest,
        mc.MemoryScopeReply,
        "Bring a fact back to the player",
    ),
)
