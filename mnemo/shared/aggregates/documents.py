"""The documents aggregate: an uploaded document's stream (``document/<tenant>/<document>``), the lore service's
decisions of its imports, pure, the clock passed in: ids, object names and the events to record (accepted, its
chunks, completed or failed, deleted). Its state is the documents read model's, which the lore service decides
on (a version is accepted, then completed or failed, once).

Idempotency: a new document's id is derived from the tenant, the owner, the name and the file's digest, so a
retried import (the reply was lost) answers the same document without recording anything; event ids are
derived from the document's stream and version, so a step repeated after a crash appends nothing new. ``EVENTS``
names the stream's payload classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    DocumentAccepted,
    DocumentChunk,
    DocumentChunked,
    DocumentCompleted,
    DocumentDeleted,
    DocumentFailed,
    document_stream,
    new_event,
)
from mnemo.shared.events.recorded.base import RecordedPayload

#: The payload classes of a document's stream.
EVENTS = (DocumentAccepted, DocumentChunked, DocumentCompleted, DocumentFailed, DocumentDeleted)


def document_id_for(tenant_id: str, owner_user_id: str, name: str, digest: str) -> str:
    return deterministic_id("document", tenant_id, owner_user_id, name, digest)


def book_id_for(tenant_id: str, document_id: str) -> str:
    """The lorebook a document belongs to: attach and detach it like any book."""
    return deterministic_id("lorebook", tenant_id, "document", document_id)


def inline_object_name(tenant_id: str, document_id: str, version: int) -> str:
    """Where a ``data_base64`` upload is stored: under the tenant's prefix like every upload."""
    return f"{tenant_id}/documents/{document_id}/v{version}"


def _event(tenant_id: str, document_id: str, key: str, payload: RecordedPayload, now: datetime) -> NewEvent:
    stream = document_stream(tenant_id, document_id)
    return new_event(
        payload,
        event_id=deterministic_id(stream, key),
        tenant_id=tenant_id,
        occurred_at=now,
    )


def accepted(
    tenant_id: str,
    document_id: str,
    lorebook_id: str,
    owner: str,
    name: str,
    version: int,
    obj: str,
    digest: str,
    size: int,
    now: datetime,
) -> NewEvent:
    payload = DocumentAccepted(
        document_id=document_id,
        lorebook_id=lorebook_id,
        owner_user_id=owner,
        name=name,
        version=version,
        object_name=obj,
        sha256=digest,
        size=size,
        at=now,
    )
    return _event(tenant_id, document_id, f"accepted/{version}", payload, now)


def chunked(
    tenant_id: str,
    document_id: str,
    owner: str,
    version: int,
    chunks: Sequence[dict[str, Any]],
    per_event: int,
    now: datetime,
) -> list[NewEvent]:
    """The chunks in parts of ``per_event``, each its own event (encrypted under the owner's key)."""
    parts = [chunks[i : i + per_event] for i in range(0, len(chunks), per_event)]
    return [
        _event(
            tenant_id,
            document_id,
            f"chunked/{version}/{n}",
            DocumentChunked(
                document_id=document_id,
                version=version,
                part=n,
                parts=len(parts),
                total_chunks=len(chunks),
                chunks=[DocumentChunk.model_validate(c) for c in part],
                owner_user_id=owner,
            ),
            now,
        )
        for n, part in enumerate(parts)
    ]


def completed(
    tenant_id: str, document_id: str, version: int, pages: int, chunks: Sequence[dict[str, Any]], now: datetime
) -> NewEvent:
    payload = DocumentCompleted(
        document_id=document_id,
        version=version,
        pages=pages,
        chunks=len(chunks),
        tokens=sum(int(c.get("tokens", 0)) for c in chunks),
        hashes=sorted({str(c["hash"]) for c in chunks}),
        at=now,
    )
    return _event(tenant_id, document_id, f"completed/{version}", payload, now)


def failed(tenant_id: str, document_id: str, version: int, reason: str, now: datetime) -> NewEvent:
    payload = DocumentFailed(document_id=document_id, version=version, reason=reason, at=now)
    return _event(tenant_id, document_id, f"failed/{version}", payload, now)


def deleted(tenant_id: str, document_id: str, version: int, now: datetime) -> NewEvent:
    payload = DocumentDeleted(document_id=document_id, at=now)
    return _event(tenant_id, document_id, f"deleted/{version}", payload, now)
