"""The messages read model: one document per message, its user text encrypted, kept current by the log.

Document id: ``message_doc_id(tenant, user, conversation, message_id)``, also the AES-GCM associated data
of its encrypted fields (``author_name``, ``content``), so a ciphertext moved to another message does not
decrypt. Each document remembers the log ``version`` of the last event applied to it:

- ``message.recorded`` inserts the document; if it exists (a replay or redelivery) the insert fails on
  ``_id`` and the repository ignores that duplicate key (an insert costs SecantusDB about half an upsert);
- ``message.edited`` / ``message.deleted`` update it only if their version is newer than the stored one,
  so events applied twice or late never roll a message back.

The functions here build the write operations and read the documents back; they do no I/O themselves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from pymongo import InsertOne, UpdateOne

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.crypto import TenantCipher
from mnemo.shared.events.envelope import EventEnvelope, stream_id
from mnemo.shared.events.recorded import (
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
)

ENCRYPTED = frozenset({"author_name", "content"})


class MessageKey(NamedTuple):
    tenant_id: str
    user_id: str
    conversation_id: str
    message_id: str


def message_doc_id(tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> str:
    return stream_id("message", tenant_id, user_id, conversation_id, message_id)


@dataclass(frozen=True)
class MessageStatus:
    """A message's position and state without decrypting anything (what ingest decides with).

    The scene fields (who was present, who wrote it, when) are filled only when asked for
    (``ReadModels.message_status(..., scene=True)``): the embedding service keeps them on an edited
    message's new vectors.
    """

    index: int
    deleted: bool
    version: int
    role: str | None = None
    author_id: str | None = None
    bot_ids: tuple[str, ...] = ()
    persona_id: str | None = None
    created_at: datetime | None = None

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> MessageStatus:
        created = doc.get("created_at")
        return cls(
            index=int(doc["index"]),
            deleted=bool(doc.get("deleted")),
            version=int(doc["version"]),
            role=doc.get("role"),
            author_id=doc.get("author_id"),
            bot_ids=tuple(doc.get("bot_ids") or ()),
            persona_id=doc.get("persona_id"),
            created_at=as_utc(created) if isinstance(created, datetime) else None,
        )


@dataclass(frozen=True)
class MessageView:
    """A message as callers (context assembly, summarizer) see it: decrypted, timestamps in UTC."""

    tenant_id: str
    user_id: str
    conversation_id: str
    message_id: str
    index: int
    role: str
    author_id: str | None
    author_name: str
    content: str
    created_at: datetime
    bot_ids: list[str]
    persona_id: str | None
    tokens: int
    deleted: bool
    edited_at: datetime | None
    deleted_at: datetime | None


def _key_of(envelope: EventEnvelope, user_id: str, conversation_id: str, message_id: str) -> str:
    return message_doc_id(envelope.tenant_id, user_id, conversation_id, message_id)


def _recorded_write(envelope: EventEnvelope, cipher: TenantCipher) -> InsertOne[dict[str, Any]]:
    msg = MESSAGE_RECORDED.parse(envelope.payload)
    doc_id = _key_of(envelope, msg.user_id, msg.conversation_id, msg.message_id)
    doc = {
        "tenant_id": envelope.tenant_id,
        "user_id": msg.user_id,
        "conversation_id": msg.conversation_id,
        "message_id": msg.message_id,
        "index": msg.index,
        "role": msg.role,
        "author_id": msg.author_id,
        "author_name": msg.author_name,
        "content": msg.content,
        "created_at": as_utc(msg.created_at),
        "bot_ids": list(msg.bot_ids),
        "persona_id": msg.persona_id,
        "tokens": msg.tokens,
        "deleted": False,
        "edited_at": None,
        "deleted_at": None,
        "version": envelope.version,
    }
    return InsertOne({"_id": doc_id, **cipher.encrypt_fields(doc_id, doc, ENCRYPTED)})


def _edited_write(envelope: EventEnvelope, cipher: TenantCipher) -> UpdateOne:
    edit = MESSAGE_EDITED.parse(envelope.payload)
    doc_id = _key_of(envelope, edit.user_id, edit.conversation_id, edit.message_id)
    change = {"content": edit.content, "tokens": edit.tokens, "edited_at": as_utc(edit.edited_at)}
    change["version"] = envelope.version
    return UpdateOne(
        {"_id": doc_id, "version": {"$lt": envelope.version}},
        {"$set": cipher.encrypt_fields(doc_id, change, ENCRYPTED)},
    )


def _deleted_write(envelope: EventEnvelope, cipher: TenantCipher) -> UpdateOne:
    gone = MESSAGE_DELETED.parse(envelope.payload)
    doc_id = _key_of(envelope, gone.user_id, gone.conversation_id, gone.message_id)
    return UpdateOne(
        {"_id": doc_id, "version": {"$lt": envelope.version}},
        {"$set": {"deleted": True, "deleted_at": as_utc(gone.deleted_at), "version": envelope.version}},
    )


MessageWrite = Callable[[EventEnvelope, TenantCipher], "InsertOne[dict[str, Any]] | UpdateOne"]
# Event type -> the write that applies it to its message's document.
MESSAGE_WRITES: dict[str, MessageWrite] = {
    MESSAGE_RECORDED.name: _recorded_write,
    MESSAGE_EDITED.name: _edited_write,
    MESSAGE_DELETED.name: _deleted_write,
}
MESSAGE_EVENT_TYPES = frozenset(MESSAGE_WRITES)


def message_write(envelope: EventEnvelope, cipher: TenantCipher) -> InsertOne[dict[str, Any]] | UpdateOne | None:
    """The write that applies one message event to its document (None for other event types)."""
    write = MESSAGE_WRITES.get(envelope.type)
    return write(envelope, cipher) if write is not None else None


def _maybe_utc(value: Any) -> datetime | None:
    return as_utc(value) if isinstance(value, datetime) else None


def message_view(doc: dict[str, Any], cipher: TenantCipher) -> MessageView:
    plain = cipher.decrypt_fields(doc["_id"], doc, ENCRYPTED)
    return MessageView(
        tenant_id=plain["tenant_id"],
        user_id=plain["user_id"],
        conversation_id=plain["conversation_id"],
        message_id=plain["message_id"],
        index=int(plain["index"]),
        role=plain["role"],
        author_id=plain.get("author_id"),
        author_name=plain.get("author_name") or "",
        content=plain.get("content") or "",
        created_at=as_utc(plain["created_at"]),
        bot_ids=list(plain.get("bot_ids") or []),
        persona_id=plain.get("persona_id"),
        tokens=int(plain.get("tokens", 0)),
        deleted=bool(plain.get("deleted", False)),
        edited_at=_maybe_utc(plain.get("edited_at")),
        deleted_at=_maybe_utc(plain.get("deleted_at")),
    )
