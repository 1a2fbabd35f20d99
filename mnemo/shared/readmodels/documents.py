"""Documents read model: each uploaded document's import state, and the chunks of its versions.

A projection of the ``document/<tenant>/<document>`` streams (``mnemo/shared/events/recorded/documents.py``),
rebuilt by ``mnemo replay``; the lore service projects its own events right after appending them.

- ``rm_documents``: one per document, ``_id`` = its stream id. ``version`` is the import under way or the
  last one, ``active_version`` the last completed one: the only version retrieval reads, so a failed or
  unfinished import never shows a chunk, and a replacement takes over at its ``document.completed``.
  ``hashes`` are the active version's chunk hashes (the embedding service keeps exactly their points).
- ``rm_document_chunks``: one per (document, version, chunk), text and heading encrypted with the tenant's
  key. A version's rows are dropped when another version completes, when it fails, or with the document.

Every query takes the tenant first: nothing crosses tenants.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pymongo import ASCENDING, DeleteMany, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.crypto import FieldCipher, KeyErased
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    DOCUMENT_ACCEPTED,
    DOCUMENT_CHUNKED,
    DOCUMENT_COMPLETED,
    DOCUMENT_DELETED,
    DOCUMENT_FAILED,
    document_stream,
)
from mnemo.shared.readmodels.erased import readable, readable_one
from mnemo_client.wire.document_contract import DocumentProgress, DocumentState

DOCUMENTS = "rm_documents"
CHUNKS = "rm_document_chunks"
Doc = dict[str, Any]
WriteOp = UpdateOne | DeleteMany


@dataclass(frozen=True)
class DocumentRecord:
    state: DocumentState
    object_name: str
    hashes: frozenset[str]  # of the active version


@dataclass(frozen=True)
class ChunkView:
    document_id: str
    version: int
    index: int
    text: str
    heading: str
    page: int | None
    hash: str
    last_page: int | None = None


def _chunk_id(stream: str, version: int, index: int) -> str:
    return f"{stream}|{version}|{index}"


class DocumentsReadModel:
    def __init__(self, db: AsyncDatabase[Doc], cipher: FieldCipher) -> None:
        self._db = db
        self._cipher = cipher

    # Resolved on use, so a service built without a database (component tests) can hold one unused.
    @property
    def _docs(self) -> AsyncCollection[Doc]:
        return self._db.get_collection(DOCUMENTS)

    @property
    def _chunks(self) -> AsyncCollection[Doc]:
        return self._db.get_collection(CHUNKS)

    async def apply(self, events: Iterable[EventEnvelope]) -> None:
        """Project ``document.*`` events (others are ignored), in order."""
        ops_docs: list[WriteOp] = []
        ops_chunks: list[WriteOp] = []
        for env in events:
            await self._one(env, ops_docs, ops_chunks)
        # Chunk rows first: a document is never shown completed before its chunks are readable.
        # Every write is an upsert or update by ``_id``, or a deletion: re-applying one is harmless.
        if ops_chunks:
            await self._chunks.bulk_write(ops_chunks, ordered=True)
        if ops_docs:
            await self._docs.bulk_write(ops_docs, ordered=True)

    async def _one(self, env: EventEnvelope, docs: list[WriteOp], chunks: list[WriteOp]) -> None:
        t = env.tenant_id
        if env.type == DOCUMENT_ACCEPTED.name:
            a = DOCUMENT_ACCEPTED.parse(env.payload)
            stream = document_stream(t, a.document_id)
            tc = await self._cipher.for_tenant(t, a.owner_user_id)  # the uploader's key: erasure shreds it
            fields: Doc = {
                "tenant_id": t,
                "document_id": a.document_id,
                "lorebook_id": a.lorebook_id,
                "owner_user_id": a.owner_user_id,
                "name": tc.encrypt(stream, "name", a.name),
                "version": a.version,
                "status": "processing",
                "object_name": a.object_name,
                "progress": {"pages_read": 0, "chunks_recorded": 0},
                "reason": None,
                "deleted": False,
                "updated_at": a.at,
            }
            docs.append(UpdateOne({"_id": stream}, {"$set": fields}, upsert=True))
        elif env.type == DOCUMENT_CHUNKED.name:
            c = DOCUMENT_CHUNKED.parse(env.payload)
            stream = document_stream(t, c.document_id)
            tc = await self._cipher.for_tenant(t, c.owner_user_id)
            for ch in c.chunks:
                cid = _chunk_id(stream, c.version, ch.index)
                row: Doc = {
                    "tenant_id": t,
                    "document_id": c.document_id,
                    "owner_user_id": c.owner_user_id,  # erasing the user deletes the rows (mnemo/services/privacy)
                    "version": c.version,
                    "index": ch.index,
                    "hash": ch.hash,
                    "page": ch.page,
                    "last_page": ch.last_page,
                    "tokens": ch.tokens,
                    "text": tc.encrypt(cid, "text", ch.text),
                    "heading": tc.encrypt(cid, "heading", ch.heading),
                }
                chunks.append(UpdateOne({"_id": cid}, {"$set": row}, upsert=True))
            recorded = max((ch.index + 1 for ch in c.chunks), default=0)
            pages = max((ch.last_page or ch.page or 0 for ch in c.chunks), default=0)
            progress = {"progress.chunks_recorded": recorded, "progress.pages_read": pages}
            docs.append(
                UpdateOne(
                    {"_id": stream, "version": c.version, "deleted": False},
                    {"$max": progress, "$set": {"updated_at": env.occurred_at}},
                )
            )
        elif env.type == DOCUMENT_COMPLETED.name:
            d = DOCUMENT_COMPLETED.parse(env.payload)
            stream = document_stream(t, d.document_id)
            chunks.append(DeleteMany({"tenant_id": t, "document_id": d.document_id, "version": {"$ne": d.version}}))
            done = {
                "progress.pages_read": d.pages,
                "pages": d.pages,
                "chunks": d.chunks,
                "tokens": d.tokens,
                "hashes": d.hashes,
            }
            docs.append(
                UpdateOne(
                    {"_id": stream, "version": d.version, "deleted": False},
                    {"$set": {"status": "completed", "active_version": d.version, "updated_at": d.at, **done}},
                )
            )
        elif env.type == DOCUMENT_FAILED.name:
            f = DOCUMENT_FAILED.parse(env.payload)
            stream = document_stream(t, f.document_id)
            tc = await self._cipher.for_tenant(t)
            chunks.append(DeleteMany({"tenant_id": t, "document_id": f.document_id, "version": f.version}))
            reason = tc.encrypt(stream, "reason", f.reason)
            docs.append(
                UpdateOne(
                    {"_id": stream, "version": f.version, "deleted": False},
                    {"$set": {"status": "failed", "reason": reason, "updated_at": f.at}},
                )
            )
        elif env.type == DOCUMENT_DELETED.name:
            g = DOCUMENT_DELETED.parse(env.payload)
            stream = document_stream(t, g.document_id)
            chunks.append(DeleteMany({"tenant_id": t, "document_id": g.document_id}))
            gone = {"status": "deleted", "deleted": True, "active_version": None, "hashes": [], "updated_at": g.at}
            docs.append(UpdateOne({"_id": stream}, {"$set": gone, "$unset": {"name": "", "reason": ""}}))

    async def _record(self, d: Doc) -> DocumentRecord:
        tc = await self._cipher.for_tenant(d["tenant_id"], reading=(d,))  # whichever key wrote it
        name = tc.decrypt(d["_id"], "name", d["name"]) if d.get("name") else ""
        reason = tc.decrypt(d["_id"], "reason", d["reason"]) if d.get("reason") else None
        updated: datetime | None = d.get("updated_at")
        state = DocumentState(
            tenant_id=d["tenant_id"],
            document_id=d["document_id"],
            book_id=d["lorebook_id"],
            owner_user_id=d["owner_user_id"],
            name=str(name),
            status=d["status"],
            version=int(d["version"]),
            active_version=d.get("active_version"),
            pages=int(d.get("pages", 0)),
            chunks=int(d.get("chunks", 0)),
            tokens=int(d.get("tokens", 0)),
            progress=DocumentProgress.model_validate(d.get("progress") or {}),
            reason=reason,
            updated_at=updated,
        )
        return DocumentRecord(state, str(d.get("object_name", "")), frozenset(d.get("hashes", ())))

    async def processing(self) -> list[DocumentRecord]:
        """Every tenant's imports still under way (or cut short by a restart: the lore service resumes them)."""
        return await readable(self._docs.find({"status": "processing", "deleted": False}), self._record)

    async def get(self, tenant_id: str, document_id: str) -> DocumentRecord | None:
        d = await self._docs.find_one({"_id": document_stream(tenant_id, document_id), "tenant_id": tenant_id})
        return await readable_one(d, self._record)

    async def list(
        self, tenant_id: str, *, owner_user_id: str | None = None, lorebook_ids: Sequence[str] | None = None
    ) -> list[DocumentRecord]:
        """The tenant's documents (not deleted), by name order of their ids."""
        query: Doc = {"tenant_id": tenant_id, "deleted": False}
        if owner_user_id is not None:
            query["owner_user_id"] = owner_user_id
        if lorebook_ids is not None:
            query["lorebook_id"] = {"$in": list(lorebook_ids)}
        return await readable(self._docs.find(query).sort("_id", ASCENDING), self._record)

    async def chunks_by_hash(
        self, tenant_id: str, document_id: str, version: int, hashes: Sequence[str]
    ) -> dict[str, ChunkView]:
        """The version's chunks with these hashes (the first by index when a text repeats)."""
        query = {"tenant_id": tenant_id, "document_id": document_id, "version": version, "hash": {"$in": list(hashes)}}
        out: dict[str, ChunkView] = {}
        async for d in self._chunks.find(query).sort("index", ASCENDING):
            if d["hash"] in out:
                continue
            tc = await self._cipher.for_tenant(tenant_id, reading=(d,))
            with contextlib.suppress(KeyErased):  # an erased uploader's leftover (mnemo/shared/readmodels/erased.py)
                out[d["hash"]] = ChunkView(
                    document_id,
                    version,
                    int(d["index"]),
                    str(tc.decrypt(d["_id"], "text", d["text"])),
                    str(tc.decrypt(d["_id"], "heading", d["heading"])),
                    d.get("page"),
                    d["hash"],
                    d.get("last_page"),
                )
        return out
