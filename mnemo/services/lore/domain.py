"""Pure decisions of the lore service: read the file, name the book, and build the events to record.

Idempotency: a book's id is derived from the tenant, the owner, the name and the file's content, and its
event ids from the book's stream, so a retried import (the request-reply timed out, the reply was lost)
records nothing new and answers the same.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from datetime import datetime
from typing import Any

from mnemo.services.lore.formats.convert import ImportResult, MalformedFileError
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.services.lore.manage import binding
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    LorebookAttached,
    LorebookImported,
    lorebook_stream,
    new_event,
)
from mnemo_client.wire.lore_contract import LoreAttachRequest, LoreImportRequest


def file_bytes(req: LoreImportRequest) -> bytes | None:
    """The decoded ``data_base64``, or None when the file came as a JSON object."""
    if req.data_base64 is None:
        return None
    try:
        return base64.b64decode(req.data_base64, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MalformedFileError(f"`data_base64` is not valid base64: {exc}") from exc


def read_file(req: LoreImportRequest) -> tuple[ImportResult, str]:
    """The imported book and its id; raises ``LoreImportError`` naming what is wrong with the file."""
    raw = file_bytes(req)
    source: dict[str, Any] | bytes = raw if raw is not None else (req.data or {})
    result = import_lorebook(source, req.format, name=req.name)
    content = raw if raw is not None else json.dumps(req.data, sort_keys=True, ensure_ascii=False).encode()
    digest = hashlib.sha256(content).hexdigest()
    return result, deterministic_id("lorebook", req.tenant_id, req.owner_user_id, req.name, digest)


def import_events(
    req: LoreImportRequest, result: ImportResult, lorebook_id: str, now: datetime, generation: int = 0
) -> list[NewEvent]:
    """``generation``: 0, or the stream version when the book was deleted and is imported again."""
    stream = lorebook_stream(req.tenant_id, lorebook_id)
    suffix = (str(generation),) if generation else ()
    imported = LorebookImported(
        lorebook_id=lorebook_id,
        owner_user_id=req.owner_user_id,
        name=req.name,
        format=result.format,
        book=result.book.model_dump(mode="json"),
        original=result.original,
        warnings=[w.model_dump(mode="json") for w in result.warnings],
        imported_at=now,
    )
    events = [
        new_event(
            imported,
            event_id=deterministic_id(stream, "imported", *suffix),
            tenant_id=req.tenant_id,
            occurred_at=now,
        )
    ]
    if req.attach_to_bots:
        bots = sorted(set(req.attach_to_bots))
        attached = LorebookAttached(lorebook_id=lorebook_id, bot_ids=bots, attached_at=now)
        events.append(
            new_event(
                attached,
                event_id=deterministic_id(stream, "attached", *bots, *suffix),
                tenant_id=req.tenant_id,
                occurred_at=now,
            )
        )
    return events


def attach_event(req: LoreAttachRequest, now: datetime) -> NewEvent:
    attached = LorebookAttached(**binding(req.lorebook_id, req), attached_at=now)
    return new_event(attached, tenant_id=req.tenant_id, occurred_at=now)
