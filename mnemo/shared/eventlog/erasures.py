"""What erasures hide from a rebuild: every event of an erased user (tenant, book) recorded before the erasure.

An erased user's encrypted fields no longer decrypt (their keys are destroyed, reads skip those events), but
their plaintext events remain: ids and flags such as ``message.deleted``, ``summary.retired``,
``knowledge.witnessed``. Folded again they would bring back rows keyed by the user's ids, so ``mnemo replay``
asks :meth:`Erasures.hides` of every event. The owner of an event is its type's ``key_owner`` field; a book's
events without one (``lorebook.entry_deleted``) are hidden through the erasure's ``lorebook_ids``. Data the
user writes after their erasure (a new account with the same id) is not hidden.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from mnemo.shared.events.envelope import EventEnvelope, EventRegistry, UnknownEventType
from mnemo.shared.events.recorded import ERASURE_COMPLETED, document_stream, lorebook_stream


@dataclass
class Erasures:
    registry: EventRegistry
    tenants: dict[str, datetime] = field(default_factory=dict)
    users: dict[tuple[str, str], datetime] = field(default_factory=dict)
    streams: dict[str, datetime] = field(default_factory=dict)

    @classmethod
    def of(cls, registry: EventRegistry, events: Iterable[EventEnvelope]) -> Erasures:
        """From the ``erasure.completed`` events among ``events`` (the others are ignored)."""
        out = cls(registry)
        for env in events:
            if env.type != ERASURE_COMPLETED.name:
                continue
            e = ERASURE_COMPLETED.parse(env.payload)
            at = env.recorded_at
            if e.user_id is None:
                out.tenants[env.tenant_id] = max(at, out.tenants.get(env.tenant_id, at))
            else:
                key = (env.tenant_id, e.user_id)
                out.users[key] = max(at, out.users.get(key, at))
            for sid in (
                *(lorebook_stream(env.tenant_id, book) for book in e.lorebook_ids),
                *(document_stream(env.tenant_id, doc) for doc in e.document_ids),
            ):
                out.streams[sid] = max(at, out.streams.get(sid, at))
        return out

    def __bool__(self) -> bool:
        return bool(self.tenants or self.users or self.streams)

    def hides(self, env: EventEnvelope) -> bool:
        if env.type == ERASURE_COMPLETED.name:
            return False  # the record of an erasure is what survives it
        at = env.recorded_at
        if (t := self.tenants.get(env.tenant_id)) is not None and at <= t:
            return True
        if (s := self.streams.get(env.stream_id)) is not None and at <= s:
            return True
        try:
            owner = self.registry.get(env.type).owner(env.payload)
        except UnknownEventType:
            return False
        return owner is not None and (u := self.users.get((env.tenant_id, owner))) is not None and at <= u
