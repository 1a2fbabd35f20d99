"""``memory/<tenant>/<memory>``: memories written through the memory API (remember, update, forget).

Each event carries the memory's whole state after it (not a patch), so a version reads on its own in the
history and a projection needs only the last event. The owner (``user_id``) is the user the memory belongs to:
their data key encrypts its text, tags, assets and metadata in the log, and their erasure shreds them;
``by_user_id`` is who made the change (a game master may change a campaign memory another user wrote).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload

MemoryKind = Literal["episodic", "semantic", "declarative", "procedural"]
#: The fields holding user text (encrypted at rest in the log, the relay's messages and the read model).
MEMORY_TEXT_FIELDS = ("title", "content", "tags", "assets", "metadata")


def memory_stream(tenant_id: str, memory_id: str) -> str:
    return stream_id("memory", tenant_id, memory_id)


class MemorySnapshot(RecordedPayload):
    """What a version of a memory holds."""

    memory_id: str
    user_id: str = Field(..., description="the owner: their key encrypts it, their erasure shreds it")
    by_user_id: str = Field(..., description="who made this version")
    owner_namespace: str = Field(..., description="`player:<user>`, `campaign:<id>` or `character:<bot>`")
    memory_type: MemoryKind
    title: str
    content: str
    tags: list[str] = Field(default_factory=list)
    assets: list[dict[str, Any]] = Field(default_factory=list, description="`{uri, media_type, title}` each")
    metadata: dict[str, Any] = Field(default_factory=dict)
    bot_id: str | None = Field(None, description="the character who knows it (None: whoever sees the namespace)")
    conversation_id: str | None = None
    occurred_at: datetime


class MemoryRemembered(MemorySnapshot):
    """``memory.remembered``: a memory was written (version 1 of its stream)."""

    idempotency_key: str | None = None
    origin: Literal["api", "import"] = "api"
    remembered_at: datetime


class MemoryUpdated(MemorySnapshot):
    """``memory.updated``: a new version of the memory (namespace, owner and character never change)."""

    updated_at: datetime


class MemoryForgotten(RecordedPayload):
    """``memory.forgotten``: the memory left every projection (rows, vectors); its events stay, encrypted."""

    memory_id: str
    user_id: str
    by_user_id: str
    owner_namespace: str
    reason: str | None = None
    forgotten_at: datetime


MEMORY_REMEMBERED = REGISTRY.register(
    "memory.remembered", MemoryRemembered, encrypted=MEMORY_TEXT_FIELDS, key_owner="user_id"
)
MEMORY_UPDATED = REGISTRY.register("memory.updated", MemoryUpdated, encrypted=MEMORY_TEXT_FIELDS, key_owner="user_id")
MEMORY_FORGOTTEN = REGISTRY.register("memory.forgotten", MemoryForgotten, encrypted=("reason",), key_owner="user_id")
MEMORY_EVENTS = frozenset({MEMORY_REMEMBERED.name, MEMORY_UPDATED.name, MEMORY_FORGOTTEN.name})
