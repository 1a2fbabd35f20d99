"""``lorebook/<tenant>/<book>``: imported and managed lorebooks, their entries and attachments."""

from __future__ import annotations

from datetime import datetime

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload


def lorebook_stream(tenant_id: str, lorebook_id: str) -> str:
    return stream_id("lorebook", tenant_id, lorebook_id)


class LorebookImported(RecordedPayload):
    """A book was imported: the normalised book (``mnemo.shared.lore.model.Lorebook`` dumped by field name) and the
    source document as read (kept so that export can write back what mnemo does not model)."""

    lorebook_id: str
    owner_user_id: str
    name: str
    format: str
    book: dict[str, object]
    original: dict[str, object]
    warnings: list[dict[str, object]]
    imported_at: datetime


LOREBOOK_IMPORTED = REGISTRY.register(
    "lorebook.imported",
    LorebookImported,
    encrypted=("name", "book", "original", "warnings"),
    key_owner="owner_user_id",
)


class LorebookBinding(RecordedPayload):
    """Which bots' conversations and/or which one user's conversation a book is (un)bound to: what attaching and
    detaching share (ids only, no user text)."""

    lorebook_id: str
    bot_ids: list[str]
    user_id: str | None = None
    conversation_id: str | None = None


class LorebookAttached(LorebookBinding):
    """The book applies to these bots' conversations and/or one user's conversation."""

    attached_at: datetime


LOREBOOK_ATTACHED = REGISTRY.register("lorebook.attached", LorebookAttached)


class LorebookCreated(RecordedPayload):
    """An empty book was created (entries come as ``lorebook.entry_created``)."""

    lorebook_id: str
    owner_user_id: str
    name: str
    description: str = ""
    created_at: datetime


LOREBOOK_CREATED = REGISTRY.register(
    "lorebook.created", LorebookCreated, encrypted=("name", "description"), key_owner="owner_user_id"
)


class LorebookEntryWritten(RecordedPayload):
    """The whole entry after the change (``mnemo.shared.lore.model.LoreEntry`` dumped by field name): the fold
    replaces the entry with the same uid, so a replayed log never needs the request that made it."""

    lorebook_id: str
    uid: int
    entry: dict[str, object]
    at: datetime
    #: The book's owner, whose data key encrypts the entry (absent in entries written before: the tenant's key).
    owner_user_id: str | None = None


class LorebookEntryCreated(LorebookEntryWritten):
    """``lorebook.entry_created``: an entry was added to the book."""


class LorebookEntryUpdated(LorebookEntryWritten):
    """``lorebook.entry_updated``: an entry of the book changed (the payload holds it whole)."""


LOREBOOK_ENTRY_CREATED = REGISTRY.register(
    "lorebook.entry_created", LorebookEntryCreated, encrypted=("entry",), key_owner="owner_user_id"
)
LOREBOOK_ENTRY_UPDATED = REGISTRY.register(
    "lorebook.entry_updated", LorebookEntryUpdated, encrypted=("entry",), key_owner="owner_user_id"
)


class LorebookEntryDeleted(RecordedPayload):
    lorebook_id: str
    uid: int
    at: datetime


LOREBOOK_ENTRY_DELETED = REGISTRY.register("lorebook.entry_deleted", LorebookEntryDeleted)


class LorebookDeleted(RecordedPayload):
    """The book is gone: its entries, its attachments and its vectors (the fold keeps a tombstone)."""

    lorebook_id: str
    at: datetime


LOREBOOK_DELETED = REGISTRY.register("lorebook.deleted", LorebookDeleted)


class LorebookRenamed(RecordedPayload):
    """``lorebook.renamed``: the book's owner gave it a new name."""

    lorebook_id: str
    owner_user_id: str  # whose data key encrypts the name, as for the book's other events
    name: str
    at: datetime


LOREBOOK_RENAMED = REGISTRY.register(
    "lorebook.renamed", LorebookRenamed, encrypted=("name",), key_owner="owner_user_id"
)


class LorebookDetached(LorebookBinding):
    """The book no longer applies to these bots and/or to that conversation."""

    detached_at: datetime


LOREBOOK_DETACHED = REGISTRY.register("lorebook.detached", LorebookDetached)
