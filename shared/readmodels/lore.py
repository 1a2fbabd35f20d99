"""Lorebooks read model: the books of each tenant (user text encrypted) and the attachment index.

Two collections, both rebuilt by ``mnemo replay`` from the ``lorebook/<tenant>/<book>`` streams:

- ``rm_lorebooks``: one document per book, ``_id`` = its stream id (also the AES-GCM associated data of the
  encrypted ``name``, ``book`` and ``original``). ``version`` is the log version of the import it holds, so a
  consumer can cache anything derived from a book per ``(lorebook_id, version)``; a stale write fails the
  version filter and its upsert hits the ``_id`` index (a duplicate key, ignored).
- ``rm_lore_attachments``: one document per (target, book), where a target is a bot (``bot/<tenant>/<bot>``)
  or a conversation (``conversation/<tenant>/<user>/<conversation>``). Inserts only, so re-applying an
  attachment is a no-op. Targets are stream ids, which start with the tenant: a lookup can never reach
  another tenant's books, and a book attached to one bot is invisible to the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pymongo import ASCENDING, IndexModel, InsertOne, ReplaceOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from shared.crypto import FieldCipher
from shared.events.envelope import EventEnvelope
from shared.events.recorded import (
    LOREBOOK_ATTACHED,
    LOREBOOK_IMPORTED,
    LorebookAttached,
    LorebookImported,
    bot_stream,
    conversation_stream,
    lorebook_stream,
)
from shared.lore.model import Lorebook
from shared.readmodels.repository import _bulk

LOREBOOKS = "rm_lorebooks"
LORE_ATTACHMENTS = "rm_lore_attachments"
ENCRYPTED = frozenset({"name", "book", "original"})
Doc = dict[str, Any]
LoreSource = Literal["character", "chat"]


@dataclass(frozen=True)
class LorebookRef:
    """A book attached to the bot (``character`` lore) or to the conversation (``chat`` lore), at a version."""

    lorebook_id: str
    version: int
    source: LoreSource


@dataclass(frozen=True)
class LorebookView:
    tenant_id: str
    lorebook_id: str
    owner_user_id: str
    name: str
    format: str
    version: int
    book: Lorebook
    original: dict[str, Any]


class LoreReadModel:
    def __init__(self, db: AsyncDatabase[Doc], cipher: FieldCipher) -> None:
        self._cipher = cipher
        self.books: AsyncCollection[Doc] = db.get_collection(LOREBOOKS)
        self.attachments: AsyncCollection[Doc] = db.get_collection(LORE_ATTACHMENTS)

    async def ensure_indexes(self) -> None:
        await self.attachments.create_indexes(
            [IndexModel([("tenant_id", ASCENDING), ("target", ASCENDING)], name="tenant_target")]
        )

    async def drop_all(self) -> None:
        for collection in (self.books, self.attachments):
            await collection.drop()
        await self.ensure_indexes()

    async def apply(self, envelopes: Iterable[EventEnvelope]) -> None:
        """Project lorebook events (other types are ignored); idempotent, any order across streams."""
        book_ops: list[ReplaceOne[Doc]] = []
        attach_ops: list[InsertOne[Doc]] = []
        for env in envelopes:
            if env.type == LOREBOOK_IMPORTED.name:
                book_ops.append(await self._book_write(env))
            elif env.type == LOREBOOK_ATTACHED.name:
                attach_ops += attachment_writes(env)
        await _bulk(self.books, book_ops, ordered=False)
        await _bulk(self.attachments, attach_ops, ordered=False)

    async def _book_write(self, env: EventEnvelope) -> ReplaceOne[Doc]:
        imported = LorebookImported.model_validate(env.payload)
        doc_id = lorebook_stream(env.tenant_id, imported.lorebook_id)
        doc = {
            "tenant_id": env.tenant_id,
            "lorebook_id": imported.lorebook_id,
            "owner_user_id": imported.owner_user_id,
            "name": imported.name,
            "format": imported.format,
            "entries": len(imported.book.get("entries") or []),  # type: ignore[arg-type]
            "book": imported.book,
            "original": imported.original,
        }
        cipher = await self._cipher.for_tenant(env.tenant_id)
        encrypted = {**cipher.encrypt_fields(doc_id, doc, ENCRYPTED), "version": env.version}
        return ReplaceOne({"_id": doc_id, "version": {"$lt": env.version}}, encrypted, upsert=True)

    # --- reads ----------------------------------------------------------------------------------------
    async def book(self, tenant_id: str, lorebook_id: str) -> LorebookView | None:
        found = await self.books_by_ids(tenant_id, [lorebook_id])
        return found.get(lorebook_id)

    async def books_by_ids(self, tenant_id: str, lorebook_ids: Sequence[str]) -> dict[str, LorebookView]:
        """The given books of the tenant that exist, decrypted, by id."""
        ids = [lorebook_stream(tenant_id, b) for b in dict.fromkeys(lorebook_ids)]
        if not ids:
            return {}
        docs = await self.books.find({"_id": {"$in": ids}}).to_list()
        cipher = await self._cipher.for_tenant(tenant_id)
        out: dict[str, LorebookView] = {}
        for doc in docs:
            plain = cipher.decrypt_fields(doc["_id"], doc, ENCRYPTED)
            out[plain["lorebook_id"]] = LorebookView(
                tenant_id=plain["tenant_id"],
                lorebook_id=plain["lorebook_id"],
                owner_user_id=plain["owner_user_id"],
                name=plain["name"],
                format=plain.get("format") or "",
                version=int(plain["version"]),
                book=Lorebook.model_validate(plain["book"]),
                original=plain.get("original") or {},
            )
        return out

    async def attached(
        self, tenant_id: str, bot_id: str, user_id: str | None = None, conversation_id: str | None = None
    ) -> list[LorebookRef]:
        """Books attached to the bot or to the conversation, with their current version; no decryption.

        A book attached to both counts as the conversation's (``chat`` lore comes first in SillyTavern)."""
        targets = {bot_stream(tenant_id, bot_id): "character"}
        if user_id is not None and conversation_id is not None:
            targets[conversation_stream(tenant_id, user_id, conversation_id)] = "chat"
        rows = await self.attachments.find({"tenant_id": tenant_id, "target": {"$in": list(targets)}}).to_list()
        sources: dict[str, LoreSource] = {}
        for row in sorted(rows, key=lambda r: targets[r["target"]] != "chat"):
            sources.setdefault(row["lorebook_id"], "chat" if targets[row["target"]] == "chat" else "character")
        if not sources:
            return []
        ids = [lorebook_stream(tenant_id, b) for b in sources]
        docs = await self.books.find({"_id": {"$in": ids}}, {"lorebook_id": 1, "version": 1}).to_list()
        versions = {d["lorebook_id"]: int(d["version"]) for d in docs}
        return [LorebookRef(b, versions[b], s) for b, s in sorted(sources.items()) if b in versions]


def attachment_writes(env: EventEnvelope) -> list[InsertOne[Doc]]:
    attached = LorebookAttached.model_validate(env.payload)
    targets = [bot_stream(env.tenant_id, b) for b in attached.bot_ids]
    if attached.user_id is not None and attached.conversation_id is not None:
        targets.append(conversation_stream(env.tenant_id, attached.user_id, attached.conversation_id))
    return [
        InsertOne(
            {
                "_id": f"{target}|{attached.lorebook_id}",
                "tenant_id": env.tenant_id,
                "target": target,
                "lorebook_id": attached.lorebook_id,
            }
        )
        for target in targets
    ]
