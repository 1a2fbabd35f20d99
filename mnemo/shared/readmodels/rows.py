"""Which read-model rows belong to a user or a tenant, found the same way in every collection of the catalog,
and :class:`TenantRows`, the port through which privacy's erasure and export read and delete them.

The collections are the projection catalog's (``catalog.py``, which also says which rows a user's erasure
keeps: bots are the platform's). In each, a row is found by its shape, so no read model needs a rule of its
own: every read-model document of mnemo carries ``tenant_id`` and, when a user owns it, ``user_id`` or
``owner_user_id``; documents keyed by a user's stream id (``conversation/<tenant>/<user>/...``) are matched by
their ``_id`` too, and a user's lorebooks take their attachments along (``lorebook_id``). The event log, the
key store and the relay's bookkeeping are not read models: the log is crypto-shredded instead (its events stay,
unreadable).

Why a user's rows are picked here, in Python, from their tenant's: one query holding all of those alternatives
(an ``$or`` with an ``_id`` regex) reads the whole collection on SecantusDB, the embedded default, whose planner
uses an index only for a filter of plain fields (every read model has one that starts with ``tenant_id``) or
for ``_id`` equality and ``$in``. So erasure reads the tenant's rows by that index, keeping the few fields below,
and deletes the user's by ``_id``: the cost follows the tenant's size, not the database's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.events.envelope import stream_id

Row = dict[str, Any]
#: The field that names a row's owner: ``user_id`` (messages, summaries, facts, ...) or ``owner_user_id``
#: (lorebooks, documents).
OwnerField = Literal["user_id", "owner_user_id"]
#: Not read models (the log and its outbox, the keys and their tombstones).
NOT_READ_MODELS = frozenset({"events", "relay_intents", "relay_receipts", "relay_state", "tenant_keys", "erased_keys"})
#: Stream kinds whose id continues with the owning user (``mnemo/shared/events/recorded``).
USER_STREAM_KINDS = ("conversation", "persona", "summaries", "legacy_lore", "lore_timed")
#: Rows deleted per ``_id $in`` query: well inside MongoDB's 16 MB command limit whatever the ids.
DELETE_BATCH = 1000
#: What :func:`owned_by` looks at: read with the tenant's rows instead of the rows whole.
OWNER_FIELDS = {"_id": 1, "user_id": 1, "owner_user_id": 1, "lorebook_id": 1}


def tenant_rows(tenant_id: str) -> dict[str, Any]:
    """Every read-model document of the tenant (served by the ``tenant_id``-first index of each read model)."""
    return {"tenant_id": tenant_id}


def owned_by(tenant_id: str, user_id: str, lorebook_ids: Iterable[str]) -> Callable[[Mapping[str, Any]], bool]:
    """The test of whether a row of ``tenant_id`` (read with :data:`OWNER_FIELDS`) is the user's, or one of their
    books'. Built once per read model swept, since it runs on every row of the tenant there."""
    books = frozenset(lorebook_ids)
    streams = tuple(stream_id(kind, tenant_id, user_id) for kind in USER_STREAM_KINDS)
    below = tuple(f"{stream}/" for stream in streams)  # a stream id continued by more parts

    def theirs(doc: Mapping[str, Any]) -> bool:
        if user_id in (doc.get("user_id"), doc.get("owner_user_id")):
            return True
        book, row_id = doc.get("lorebook_id"), doc.get("_id")
        if isinstance(book, str) and book in books:
            return True
        return isinstance(row_id, str) and (row_id in streams or row_id.startswith(below))

    return theirs


def _rows_of(tenant_id: str, user_id: str | None, by: OwnerField) -> dict[str, Any]:
    """The tenant's rows, or those whose ``by`` names ``user_id``."""
    return tenant_rows(tenant_id) | ({by: user_id} if user_id is not None else {})


class TenantRows(Protocol):
    """A tenant's rows in any collection of the catalog, read by owner and deleted by shape, whatever read model
    holds them: the one port that goes through every collection (``tests/contract/test_tenant_rows_contract.py``
    runs one suite on both adapters). The rows are as stored: encrypted fields stay encrypted."""

    def owned(
        self, collection: str, tenant_id: str, user_id: str | None, *, by: OwnerField = "user_id"
    ) -> AsyncIterator[Row]:
        """The tenant's rows of ``collection`` (given a user, those whose ``by`` is theirs), by ``_id``."""
        ...

    async def delete_owned(
        self, collection: str, tenant_id: str, user_id: str | None, lorebook_ids: Sequence[str]
    ) -> int:
        """Delete the tenant's rows of ``collection`` or, given a user, theirs and their books' (:func:`owned_by`);
        how many went."""
        ...


class MongoTenantRows:
    def __init__(self, db: AsyncDatabase[Row]) -> None:
        self._db = db

    async def owned(
        self, collection: str, tenant_id: str, user_id: str | None, *, by: OwnerField = "user_id"
    ) -> AsyncIterator[Row]:
        async for doc in self._db[collection].find(_rows_of(tenant_id, user_id, by)).sort("_id", 1):
            yield doc

    async def delete_owned(
        self, collection: str, tenant_id: str, user_id: str | None, lorebook_ids: Sequence[str]
    ) -> int:
        rows = self._db[collection]
        if user_id is None:
            return (await rows.delete_many(tenant_rows(tenant_id))).deleted_count
        is_theirs = owned_by(tenant_id, user_id, lorebook_ids)
        theirs = [d["_id"] async for d in rows.find(tenant_rows(tenant_id), OWNER_FIELDS) if is_theirs(d)]
        deleted = 0
        for start in range(0, len(theirs), DELETE_BATCH):
            batch = theirs[start : start + DELETE_BATCH]
            deleted += (await rows.delete_many({"_id": {"$in": batch}})).deleted_count
        return deleted


class InMemoryTenantRows:
    """Rows held per collection in memory (``insert`` puts them there, as the read models' adapters would)."""

    def __init__(self) -> None:
        self._collections: dict[str, dict[Any, Row]] = {}

    def insert(self, collection: str, rows: Iterable[Row]) -> None:
        self._collections.setdefault(collection, {}).update((row["_id"], dict(row)) for row in rows)

    async def owned(
        self, collection: str, tenant_id: str, user_id: str | None, *, by: OwnerField = "user_id"
    ) -> AsyncIterator[Row]:
        wanted = _rows_of(tenant_id, user_id, by)
        rows = self._collections.get(collection, {})
        for key in sorted(rows):
            if all(rows[key].get(field) == value for field, value in wanted.items()):
                yield dict(rows[key])

    async def delete_owned(
        self, collection: str, tenant_id: str, user_id: str | None, lorebook_ids: Sequence[str]
    ) -> int:
        rows = self._collections.get(collection, {})
        is_theirs = owned_by(tenant_id, user_id, lorebook_ids) if user_id is not None else lambda _row: True
        gone = [key for key, row in rows.items() if row.get("tenant_id") == tenant_id and is_theirs(row)]
        for key in gone:
            del rows[key]
        return len(gone)


if TYPE_CHECKING:  # both adapters satisfy the port (checked by mypy)

    def _adapters(db: AsyncDatabase[Row]) -> tuple[TenantRows, TenantRows]:
        return MongoTenantRows(db), InMemoryTenantRows()
