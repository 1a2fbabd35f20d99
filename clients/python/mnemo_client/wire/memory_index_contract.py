"""Public wire contract v1 of a memory's index status: its tokens and whether it has vectors (request-reply,
answered by the context-assembler, which reads the vector index and counts tokens as contexts do).

The listing (``memory.list``) and the memory API's search are answered from MongoDB; whether the embedding
service has indexed an item is only known beside the vector index, so the workbench asks for a page's status
with one call. Points are counted in the tenant only; summaries and legacy lore in the user's own too (facts
and remembered memories may be shared with the user from another's scope, so the id decides). Nothing but
counts is returned: no payload, no text. A missing item is ``pending`` while the embedding service still has
events of the log to embed (its point is likely not written yet), else not embedded (look in the dead letters).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from mnemo_client.wire.contract import Id, _Wire
from mnemo_client.wire.memory_contract import _Owned

MAX_STATUS_ITEMS = 200
MAX_STATUS_TEXT = 100_000

#: ``memory`` a summary, ``legacy_lore`` a legacy lore entry, ``knowledge`` a fact (``memory.list``'s sources);
#: ``remembered`` a memory of the memory API (``memory.remember``).
IndexSource = Literal["memory", "legacy_lore", "knowledge", "remembered"]
IndexState = Literal["indexed", "missing"]


class IndexStatusQuery(_Wire):
    source: IndexSource = Field(..., description="`memory`, `legacy_lore`, `knowledge` or `remembered`")
    id: Id = Field(..., description="summary id, legacy id, fact id or memory id")
    text: str = Field(
        "", max_length=MAX_STATUS_TEXT, description="its text, to count its tokens (none: `tokens` is null)"
    )


class MemoryIndexStatusRequest(_Owned):
    """`mnemo.rpc.memory.index_status.v1` request: the items of a page whose index status to read."""

    items: list[IndexStatusQuery] = Field(..., min_length=1, max_length=MAX_STATUS_ITEMS)


class IndexStatus(_Wire):
    source: IndexSource
    id: str
    tokens: int | None = Field(
        None, description="tokens its text takes in a context (the context-assembler's tokenizer); null: no text"
    )
    vectors: int = Field(..., description="its points in the vector index (one per chunk)")
    status: IndexState = Field(
        ...,
        description="`indexed` (it has vectors) or `missing` (none: an item written a moment ago is indexed "
        "within seconds; one that stays missing was not embedded, see the dead letters)",
    )
    pending: bool = Field(
        False,
        description="`missing` while the embedding service still has events to embed (`embedding_backlog` > 0): "
        "its point is likely not written yet; false when indexed, or missing with nothing left to embed",
    )


class MemoryIndexStatusReply(_Wire):
    """`mnemo.rpc.memory.index_status.v1` reply: one status per item asked, in the order asked."""

    items: list[IndexStatus]
    embedding_backlog: int | None = Field(
        None,
        description="events of the log the embedding service has not yet embedded (pending and unacknowledged); "
        "null when it could not be read (no embedding consumer, or no right to read it)",
    )
