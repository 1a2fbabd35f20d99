"""The lore service's own pure part of an import: read the file and name the book (the events it becomes are the
lorebook aggregate's decision, ``mnemo.shared.aggregates.lorebook.deciders.import_events``).

Idempotency: a book's id is derived from the tenant, the owner, the name and the file's content, and its
event ids from the book's stream, so a retried import (the request-reply timed out, the reply was lost)
records nothing new and answers the same.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from typing import Any

from mnemo.services.lore.formats.convert import ImportResult, MalformedFileError
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared.events.envelope import deterministic_id
from mnemo_client.wire.lore_contract import LoreImportRequest


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
