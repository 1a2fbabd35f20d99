"""The privacy aggregate: a tenant's privacy stream (``privacy/<tenant>``), the audit record of each erasure
(``erasure.completed``: whose data, which keys were destroyed, what was deleted), pure, the clock passed in.
Nothing is decided on its state: the privacy service erases, then records what it did; replay reads the record
to skip what was erased. ``EVENTS`` names the stream's payload classes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import ErasureCompleted, new_event, privacy_stream

#: The payload classes of a tenant's privacy stream.
EVENTS = (ErasureCompleted,)


def erasure_completed(
    tenant_id: str,
    erasure_id: str,
    user_id: str | None,
    *,
    key_ids: Sequence[str],
    deleted: Mapping[str, int],
    books: Sequence[str],
    documents: Sequence[str],
    erased_at: datetime,
    now: datetime,
) -> NewEvent:
    """The record of the erasure ``erasure_id`` of ``user_id`` (None: the whole tenant), begun at ``erased_at``
    and recorded at ``now``; its event id is derived from the erasure's, so a repeated append records it once."""
    payload = ErasureCompleted(
        erasure_id=erasure_id, user_id=user_id, key_ids=list(key_ids), deleted=dict(deleted),
        lorebook_ids=list(books), document_ids=list(documents), erased_at=erased_at,
    )  # fmt: skip
    event_id = deterministic_id(privacy_stream(tenant_id), erasure_id)
    return new_event(payload, event_id=event_id, tenant_id=tenant_id, occurred_at=now)
