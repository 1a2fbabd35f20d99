"""``ReadModels``: the MongoDB projections of the log (conversations, messages, bots, personas).

Why this shape:

- ``apply`` runs on ingest's hot path, so a batch costs a fixed number of round trips whatever its size:
  at most one lookup of the conversation states it does not already have, one ordered ``bulk_write`` of
  message writes, one for profiles, and one for conversation states, written *last*. A conversation state
  at version N therefore implies that the messages of versions up to N are applied, which is what lets
  ingest trust it and catch up only the tail from the log.
- Every write is idempotent (see ``messages.py``, ``profiles.py`` and the strict fold in
  ``conversation.py``), so a redelivered batch, two replicas applying the same events, or a replay over
  existing documents leave the same documents. Re-inserted messages and stale conditional upserts surface
  as duplicate-key errors on ``_id``, which are expected and ignored.
- Everything is rebuildable: ``catalog.drop`` then ``apply`` over ``EventStore.read_all`` in batches.
- SecantusDB answers large ``$in`` lookups slowly (roughly quadratic in the list), so id lookups go out in
  concurrent chunks, and "recent" messages are read by an index range, never by a descending sort.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pymongo import ASCENDING, DESCENDING, DeleteOne, InsertOne, ReplaceOne, UpdateOne
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from mnemo.shared.aggregates.conversation import ConversationState, by_stream, folded_states
from mnemo.shared.crypto import FieldCipher, TenantCipher
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import BOT_RECORDED, PERSONA_RECORDED, bot_stream, persona_stream
from mnemo.shared.readmodels.erased import readable_sync
from mnemo.shared.readmodels.message_reads import MessageRange, MessageReads
from mnemo.shared.readmodels.messages import (
    MESSAGE_WRITES,
    MessageKey,
    MessageStatus,
    MessageView,
    message_doc_id,
    message_view,
)
from mnemo.shared.readmodels.profiles import BotView, PersonaView, bot_view, bot_write, persona_view, persona_write

CONVERSATIONS = "rm_conversations"
MESSAGES = "rm_messages"
BOTS = "rm_bots"
PERSONAS = "rm_personas"
_DUPLICATE_KEY = 11000
_LOOKUP_CHUNK = 32
# Ingest's status lookups (``message_status`` without the scene) ask mostly about ids not recorded yet: a new
# message is looked up before it is recorded. SecantusDB answers a missing id for ~8 CPU-us in chunks of 128
# against ~16 in chunks of 32, and each chunk is one find for pymongo to run (the 316 finds of 10,000 messages were
# 9 % of ingest's CPU samples, py-spy). A found id costs more in a bigger chunk (its ``$in`` is checked again per
# document, linearly: ~110 against ~58 us), which only a redelivery pays. (Ad hoc, 20,000 rows, 2026-11-28 08:39
# UTC.) Lookups of recorded messages (the scene, the context's reads) keep chunks of 32.
_ABSENT_LOOKUP_CHUNK = 128

Doc = dict[str, Any]
WriteOp = InsertOne[Doc] | UpdateOne | ReplaceOne[Doc] | DeleteOne
# Event type -> the collection (``ops`` key in ``apply``) its write goes to and the function making the write.
_WRITES: dict[str, tuple[str, Callable[[EventEnvelope, TenantCipher], WriteOp | None]]] = {
    **{name: ("messages", write) for name, write in MESSAGE_WRITES.items()},
    BOT_RECORDED.name: ("bots", bot_write),
    PERSONA_RECORDED.name: ("personas", persona_write),
}


async def _bulk(collection: AsyncCollection[Doc], ops: Sequence[WriteOp], *, ordered: bool) -> None:
    """``bulk_write`` that tolerates duplicate keys (re-inserts, stale conditional upserts) and only those.

    An ordered batch stops at its first error, so it is resumed after each duplicate: a round trip per
    duplicate, which is why :meth:`ReadModels._write_messages` keeps the many duplicate inserts of a re-projection
    out of its ordered part."""
    rest = list(ops)
    while rest:
        try:
            await collection.bulk_write(rest, ordered=ordered)
            return
        except BulkWriteError as exc:
            errors = exc.details.get("writeErrors", [])
            if exc.details.get("writeConcernErrors") or any(e.get("code") != _DUPLICATE_KEY for e in errors):
                raise
            if not ordered or not errors:
                return
            rest = rest[errors[0]["index"] + 1 :]  # the rest of an ordered batch was not attempted: finish it


class ReadModels(MessageReads):
    def __init__(self, db: AsyncDatabase[Doc], cipher: FieldCipher) -> None:
        self._cipher = cipher
        self.conversations: AsyncCollection[Doc] = db.get_collection(CONVERSATIONS)
        self.messages: AsyncCollection[Doc] = db.get_collection(MESSAGES)
        self.bots: AsyncCollection[Doc] = db.get_collection(BOTS)
        self.personas: AsyncCollection[Doc] = db.get_collection(PERSONAS)

    # --- writes ---------------------------------------------------------------------------------------
    async def apply(
        self,
        envelopes: Iterable[EventEnvelope],
        *,
        known_states: Mapping[str, ConversationState] | None = None,
    ) -> dict[str, ConversationState]:
        """Project ``envelopes`` (any order across streams, any types; unknown ones are ignored).

        ``known_states`` are conversation states the caller already loaded (ingest does), saving a lookup.
        Returns the resulting state of every conversation touched.
        """
        streams = by_stream(envelopes)
        ops: dict[str, list[WriteOp]] = {"messages": [], "bots": [], "personas": []}
        for env in (env for events in streams.values() for env in events):
            owner = env.payload.get("user_id")  # messages and personas: the user's key; bots: the tenant's
            cipher = await self._cipher.for_tenant(env.tenant_id, owner if isinstance(owner, str) else None)
            target = _WRITES.get(env.type)
            if target is not None and (op := target[1](env, cipher)) is not None:
                ops[target[0]].append(op)
        before, after = await folded_states(streams, known_states, self.conversation_states)
        state_ops: list[WriteOp] = [
            ReplaceOne({"_id": s, "version": {"$lt": st.version}}, st.to_doc(), upsert=True)
            for s, st in after.items()
            if st.version > before[s].version
        ]
        await asyncio.gather(
            self._write_messages(ops["messages"]),
            _bulk(self.bots, ops["bots"], ordered=False),
            _bulk(self.personas, ops["personas"], ordered=False),
        )
        await _bulk(self.conversations, state_ops, ordered=False)
        return after

    async def _write_messages(self, ops: Sequence[WriteOp]) -> None:
        """Inserts first, unordered, then the updates in log order. A replica that lost an append race projects
        what the winner committed, so most of its inserts are duplicates, and each would stop an ordered batch
        (one round trip each; a 1,024-message batch once overflowed the recursion that resumed it). Splitting
        keeps the order that matters: each message's insert before its edits and deletes, which apply in log
        order and only over an older version."""
        await _bulk(self.messages, [op for op in ops if isinstance(op, InsertOne)], ordered=False)
        await _bulk(self.messages, [op for op in ops if not isinstance(op, InsertOne)], ordered=True)

    # --- conversation state ---------------------------------------------------------------------------
    async def _find_ids(
        self, collection: AsyncCollection[Doc], ids: Sequence[str], projection: Doc | None, chunk: int = _LOOKUP_CHUNK
    ) -> list[Doc]:
        chunks = [list(ids[i : i + chunk]) for i in range(0, len(ids), chunk)]
        found = await asyncio.gather(*(collection.find({"_id": {"$in": c}}, projection).to_list() for c in chunks))
        return [doc for docs in found for doc in docs]

    async def conversation_states(self, stream_ids: Sequence[str]) -> dict[str, ConversationState]:
        """The projected state of each conversation stream; an empty state for one never projected."""
        unique = list(dict.fromkeys(stream_ids))
        states = {s: ConversationState.for_stream(s) for s in unique}
        for doc in await self._find_ids(self.conversations, unique, None):
            states[doc["_id"]] = ConversationState.from_doc(doc)
        return states

    async def conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None:
        """The conversation's state, or None if nothing of it has been projected."""
        doc = await self.conversations.find_one(
            {"_id": ConversationState.initial(tenant_id, user_id, conversation_id).stream_id}
        )
        return ConversationState.from_doc(doc) if doc else None

    async def listing(
        self, tenant_id: str, user_id: str | None, *, limit: int, offset: int = 0
    ) -> tuple[list[ConversationState], int]:
        """One page of the tenant's (one user's) conversations, latest message first, and how many there are."""
        query: Doc = {"tenant_id": tenant_id, **({"user_id": user_id} if user_id is not None else {})}
        cursor = self.conversations.find(query).sort([("last_message_at", DESCENDING), ("_id", ASCENDING)])
        docs = await cursor.skip(offset).limit(limit).to_list()
        return [ConversationState.from_doc(d) for d in docs], await self.conversations.count_documents(query)

    async def family(
        self, tenant_id: str, user_id: str, conversation_id: str, *, root: str | None = None
    ) -> frozenset[str]:
        """The fork family: the root and every conversation whose state names it as root.

        Two queries (its own state by ``_id``, then the root's forks by ``by_family_root``), not one ``$or`` of
        both: SecantusDB, the embedded default, serves an ``$or`` from no index, so every context request
        read every conversation of every tenant. ``root``: the caller read the state already
        (``ConversationState.family_root``), only the forks are read."""
        if root is None:
            own_id = ConversationState.initial(tenant_id, user_id, conversation_id).stream_id
            own = await self.conversations.find_one({"_id": own_id}, {"root_conversation_id": 1})
            root = (own or {}).get("root_conversation_id") or conversation_id
        query: Doc = {"tenant_id": tenant_id, "user_id": user_id, "root_conversation_id": root}
        forks = await self.conversations.find(query, {"conversation_id": 1}).to_list()
        return frozenset({root, conversation_id, *(d["conversation_id"] for d in forks)})

    # --- messages -------------------------------------------------------------------------------------
    async def message_status(
        self, keys: Iterable[MessageKey], *, scene: bool = False
    ) -> dict[MessageKey, MessageStatus]:
        """Index, deleted flag and version (plus the scene if asked) of the messages that exist; no decryption."""
        by_id = {message_doc_id(*k): k for k in keys}
        fields = ["index", "deleted", "version"]
        if scene:
            fields += ["role", "author_id", "bot_ids", "persona_id", "created_at"]
        chunk = _LOOKUP_CHUNK if scene else _ABSENT_LOOKUP_CHUNK
        docs = await self._find_ids(self.messages, list(by_id), dict.fromkeys(fields, 1), chunk)
        return {by_id[d["_id"]]: MessageStatus.from_doc(d) for d in docs}

    async def _views(self, tenant_id: str, docs: Iterable[Doc]) -> list[MessageView]:
        docs = list(docs)
        cipher = await self._cipher.for_tenant(tenant_id, reading=docs)
        return sorted(readable_sync(docs, lambda d: message_view(d, cipher)), key=lambda m: m.index)

    async def messages_in(self, q: MessageRange) -> list[MessageView]:
        if q.message_ids is not None:
            docs = await self._find_ids(self.messages, q.doc_ids(), None)
        else:
            docs = await self.messages.find(q.filter()).sort("index", ASCENDING).to_list()
        return await self._views(q.tenant_id, (d for d in docs if _admitted(q, d)))

    # --- profiles -------------------------------------------------------------------------------------
    async def bot(self, tenant_id: str, bot_id: str) -> BotView | None:
        doc = await self.bots.find_one({"_id": bot_stream(tenant_id, bot_id)})
        if doc is None:
            return None
        cipher = await self._cipher.for_tenant(tenant_id, reading=(doc,))
        return next(iter(readable_sync([doc], lambda d: bot_view(d, cipher))), None)

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaView | None:
        doc = await self.personas.find_one({"_id": persona_stream(tenant_id, user_id, persona_id)})
        if doc is None:
            return None
        cipher = await self._cipher.for_tenant(tenant_id, reading=(doc,))
        return next(iter(readable_sync([doc], lambda d: persona_view(d, cipher))), None)


def _admitted(q: MessageRange, doc: Doc) -> bool:
    """``q``'s rules on the stored (plain) flags, before any text is decrypted."""
    return q.admits(bool(doc.get("deleted")), doc.get("bot_ids") or ())
