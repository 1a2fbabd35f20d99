"""Public wire contract v1 of the privacy request-reply surface: erasure and export of a user's data.

Every request is answered with its reply model or with ``ErrorReply`` (``bad_request`` for invalid JSON or a
request that breaks its schema; ``internal``). Erasure is by crypto-shredding (docs/privacy.md): the user's
data keys are destroyed, so every copy of their text (log, JetStream, backups) becomes unreadable, and their
read-model rows, facts and vectors are deleted. Erasing is idempotent: a repeat erases what was written since.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mnemo_client.wire.contract import Id, _Tenanted, _Wire


class EraseUserRequest(_Tenanted):
    """`mnemo.rpc.privacy.erase_user.v1`: forget one user of a tenant (their conversations, personas, books)."""

    user_id: Id = Field(..., description="the user to erase: the owner of conversations, personas and books")


class EraseTenantRequest(_Tenanted):
    """`mnemo.rpc.privacy.erase_tenant.v1`: forget a whole tenant (every user, bot and book of it)."""

    confirm: Literal["erase"] = Field(..., description="must be `erase`: guards against a mistaken call")


class ErasureReply(_Wire):
    erasure_id: str = Field(..., description="id of the `erasure.completed` event that records this erasure")
    keys_destroyed: int = Field(..., description="data keys destroyed (crypto-shredded)")
    deleted: dict[str, int] = Field(
        ...,
        description="rows deleted per read model, `vector_filters` applied, `stream_messages` removed from JetStream",
    )


class ExportUserRequest(_Tenanted):
    """`mnemo.rpc.privacy.export_user.v1`: everything mnemo holds about a user, decrypted, as plain JSON."""

    user_id: Id = Field(...)


class ExportUserReply(_Wire):
    tenant_id: str
    user_id: str
    conversations: list[dict[str, Any]] = Field(
        ..., description="per conversation: `conversation_id`, `messages` (in order) and `summaries`"
    )
    facts: dict[str, list[dict[str, Any]]] = Field(
        ..., description="the facts characters learned in the user's conversations, per character id"
    )
    legacy_memories: list[dict[str, Any]] = Field(..., description="summaries the user turned into lore")
    lorebooks: list[dict[str, Any]] = Field(..., description="the lorebooks the user owns, entries included")
    personas: list[dict[str, Any]] = Field(..., description="the user's personas")
    documents: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the documents the user uploaded: name, status, pages, chunks (not the files' bytes)",
    )
    memories: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the memories the user owns (the memory API's, in every namespace), current versions",
    )
