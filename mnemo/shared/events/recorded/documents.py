"""``document/<tenant>/<document>``: uploaded documents (lore of the ``document`` kind) and their chunks.

An import is ``document.accepted`` (the stored object, its hash and the version it makes), then
``document.chunked`` parts (the chunks' text, heading, page and content hash, a few hundred at most per
event so each stays far under NATS' payload limit), then ``document.completed`` (the chunk hashes of the
version, so the embedding service can retire the others) or ``document.failed`` (a reason a user
understands). ``document.deleted`` ends the document (its stored bytes are removed by the lore service).
The chunks' text is in the log, so ``mnemo replay`` rebuilds the chunks and their points without parsing the
stored file again.
"""

from __future__ import annotations

from datetime import datetime

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def document_stream(tenant_id: str, document_id: str) -> str:
    return stream_id("document", tenant_id, document_id)


class DocumentAccepted(RecordedPayload):
    """A version of a document was accepted for import; ``object_name`` is in the ``MNEMO_UPLOADS`` bucket."""

    document_id: str
    lorebook_id: str
    owner_user_id: str
    name: str
    version: int
    object_name: str
    sha256: str
    size: int
    at: datetime


DOCUMENT_ACCEPTED = REGISTRY.register(
    "document.accepted", DocumentAccepted, encrypted=("name",), key_owner="owner_user_id"
)


class DocumentChunk(RecordedPayload):
    index: int
    text: str  # what is shown (the heading path is prefixed only to what is embedded)
    heading: str = ""  # the heading path, ``Part I > Chapter 3``
    page: int | None = None  # 1-based page of the chunk's start (PDF, .docx page breaks); None: no pages
    last_page: int | None = None  # the page it ends on, when another
    hash: str  # of the embedded text: an unchanged chunk of a new version is not embedded again
    tokens: int = 0


class DocumentChunked(RecordedPayload):
    document_id: str
    version: int
    part: int
    parts: int
    total_chunks: int
    chunks: list[DocumentChunk]
    #: The uploader, whose data key encrypts the chunks (erasing them shreds the text in the log too); absent in
    #: parts recorded before it was added: the tenant's key.
    owner_user_id: str | None = None


DOCUMENT_CHUNKED = REGISTRY.register(
    "document.chunked", DocumentChunked, encrypted=("chunks",), key_owner="owner_user_id"
)


class DocumentCompleted(RecordedPayload):
    document_id: str
    version: int
    pages: int
    chunks: int
    tokens: int
    hashes: list[str]  # every chunk hash of this version
    at: datetime


DOCUMENT_COMPLETED = REGISTRY.register("document.completed", DocumentCompleted)


class DocumentFailed(RecordedPayload):
    document_id: str
    version: int
    reason: str
    at: datetime


DOCUMENT_FAILED = REGISTRY.register("document.failed", DocumentFailed, encrypted=("reason",))


class DocumentDeleted(RecordedPayload):
    document_id: str
    at: datetime


DOCUMENT_DELETED = REGISTRY.register("document.deleted", DocumentDeleted)
DOCUMENT_EVENTS = frozenset(
    {
        DOCUMENT_ACCEPTED.name,
        DOCUMENT_CHUNKED.name,
        DOCUMENT_COMPLETED.name,
        DOCUMENT_FAILED.name,
        DOCUMENT_DELETED.name,
    }
)
