"""Public wire contract v1 of documents as lore: import (upload), get, list and delete (request-reply), and
the status events a client follows.

A file travels in the JetStream Object Store bucket ``MNEMO_UPLOADS`` under a name that starts with the
tenant (``<tenant_id>/...``), or for a small file inline as ``data_base64``. The import is answered at once
(``accepted``); the work goes on in the lore service, which publishes a :class:`DocumentState` on
``mnemo.lore.document.status.v1`` at each step (``processing`` with progress, then ``completed`` or
``failed`` with a reason), and ``mnemo.rpc.lore.document.get.v1`` answers the same state. Errors are
``ErrorReply``: ``bad_request`` (no file, both, an object of another tenant, over the size limit),
``not_found`` (no such object or document, or not the acting user's).
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field, model_validator

from mnemo_client.wire.contract import Id, _Tenanted, _Wire

DocumentStatus = Literal["processing", "completed", "failed", "deleted"]
#: ``data_base64`` is for small files: NATS messages stop near 1 MB, larger ones go through the bucket.
MAX_INLINE_BASE64 = 1_000_000


class DocumentImportRequest(_Tenanted):
    """`mnemo.rpc.lore.document.import.v1` request."""

    owner_user_id: Id = Field(..., description="the user uploading the document (its owner)")
    name: str = Field(
        ..., min_length=1, max_length=512, description="the file name; its extension says the type (.txt, .md, ...)"
    )
    object: str | None = Field(
        None, max_length=1024, description="the object's name in the MNEMO_UPLOADS bucket, `<tenant_id>/...`"
    )
    data_base64: str | None = Field(None, max_length=MAX_INLINE_BASE64, description="a small file's bytes")
    attach_to_bots: list[Id] = Field(default_factory=list, max_length=1000, description="bots that get it")
    document_id: Id | None = Field(
        None, description="replace this document of the owner with a new version (unset: a new document)"
    )

    @model_validator(mode="after")
    def _one_file(self) -> DocumentImportRequest:
        if (self.object is None) == (self.data_base64 is None):
            raise ValueError("give the file as exactly one of `object` (in MNEMO_UPLOADS) or `data_base64`")
        return self


class DocumentImportReply(_Wire):
    book_id: str = Field(..., description="the lorebook the document belongs to (attach/detach it like any book)")
    document_id: str
    version: int = Field(..., ge=1, description="the version this import makes")
    status: Literal["accepted"] = "accepted"


class DocumentProgress(_Wire):
    pages_read: int = 0
    chunks_recorded: int = 0


class DocumentState(_Wire):
    """`mnemo.rpc.lore.document.get.v1` reply and the body of `mnemo.lore.document.status.v1`."""

    tenant_id: str
    document_id: str
    book_id: str
    owner_user_id: str
    name: str
    status: DocumentStatus
    version: int = Field(..., description="the version being imported, or the last one")
    active_version: int | None = Field(None, description="the version whose chunks are searched")
    pages: int = 0
    chunks: int = 0
    tokens: int = 0
    progress: DocumentProgress = Field(default_factory=DocumentProgress)
    reason: str | None = Field(None, description="why the last import failed, for the user")
    updated_at: datetime | None = None


class DocumentGetRequest(_Tenanted):
    document_id: Id


class DocumentListRequest(_Tenanted):
    owner_user_id: Id | None = Field(None, description="only this user's documents")
    book_id: Id | None = Field(None, description="only this book's documents")


class DocumentListReply(_Wire):
    documents: list[DocumentState]


class DocumentDeleteRequest(_Tenanted):
    user_id: Id = Field(..., description="the acting user: the document's owner")
    document_id: Id


class DocumentDeleteReply(_Wire):
    document_id: str
    deleted: bool = Field(..., description="false when it was already gone")
