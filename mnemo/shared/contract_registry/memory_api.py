"""The memory API: remember, search, update, forget and history of typed memories per ``owner_namespace``, and
the engine's twins of the writes (the right to write campaign and character namespaces, docs/memory-api.md)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import Operation, rpc
from mnemo_client.wire import memory_api_contract as ma

_ERRORS = ("bad_request", "forbidden", "not_found", "rate_limited", "internal")
_UPDATE_ERRORS = ("bad_request", "forbidden", "not_found", "conflict", "rate_limited", "internal")
_TU = {"tenant_id": "t1", "user_id": "u1"}
_ASSET = {"uri": "https://cdn.example/choir.ogg", "media_type": "audio/ogg", "title": "The choir's hymn"}
_REMEMBER = {
    **_TU,
    "owner_namespace": "player:u1",
    "type": "episodic",
    "content": "Ana hid the envoy's letter under the chapel's loose stone.",
    "tags": ["npc:choir_envoy"],
    "assets": [_ASSET],
    "metadata": {"session_id": "s-12", "mission_id": "m-3", "confidence": 0.9},
    "occurred_at": "2026-11-20T19:30:00Z",
    "idempotency_key": "session-12-event-7",
}
_REMEMBERED = {
    "memory_id": "...",
    "created": True,
    "version": 1,
    "title": "Ana hid the envoy's letter under the chapel's…",
}
_SEARCH = {**_TU, "query": "where is the envoy's letter?", "namespaces": ["player:u1", "campaign:kestrel"],
           "types": ["episodic", "semantic"], "tags": ["npc:choir_envoy"], "limit": 5,
           "recency_half_life_days": 30}  # fmt: skip
_HIT: dict[str, Any] = {
    "id": "...",
    "source": "memory",
    "namespace": "player:u1",
    "type": "episodic",
    "title": "Ana hid the envoy's letter under the chapel's…",
    "content": "Ana hid the envoy's letter under the chapel's loose stone.",
    "tags": ["npc:choir_envoy"],
    "assets": [_ASSET],
    "score": 0.71,
    "score_parts": {"dense": 0.62, "lexical": 0.5, "recency": 0.91},
    "origin": "remembered by u1",
}
_UPDATE = {**_TU, "memory_id": "...", "content": "Ana moved the letter to the bell tower.", "expected_version": 1}
_HISTORY_REPLY = {
    "memory_id": "...",
    "owner_namespace": "player:u1",
    "user_id": "u1",
    "bot_id": None,
    "forgotten": False,
    "versions": [
        {"version": 1, "change": "remembered", "by_user_id": "u1", "at": "2026-11-20T19:31:00Z", "content": "..."},
        {"version": 2, "change": "updated", "by_user_id": "u1", "at": "2026-11-21T10:02:00Z", "content": "..."},
    ],
}
_OWN_ONLY = " Writes `player:<user_id>` only; the engine's twin every namespace."


def _engine_twin(op: Operation, subject: str) -> Operation:
    """The same call on the engine's subject: every namespace, for the holders of the right."""
    verb = op.name.removeprefix("memory.")
    example = {**op.example, "owner_namespace": "campaign:kestrel"} if "owner_namespace" in op.example else op.example
    what = f"`memory.{verb}` with the engine's right: campaign and character namespaces too (docs/memory-api.md)."
    return replace(op, name=f"memory.engine.{verb}", subject=subject, description=what, example=example)


_REMEMBER_OP = rpc(
    "memory.remember",
    subjects.MEMORY_REMEMBER,
    ma.MemoryRememberRequest,
    ma.MemoryRememberReply,
    "memory",
    "Remember a typed memory (assets stored, never fetched); idempotent with `idempotency_key`." + _OWN_ONLY,
    _REMEMBER,
    _REMEMBERED,
    errors=_ERRORS,
)
_UPDATE_OP = rpc(
    "memory.update",
    subjects.MEMORY_UPDATE,
    ma.MemoryUpdateRequest,
    ma.MemoryUpdateReply,
    "memory",
    "Change a memory (a new version); `expected_version` guards against overwriting another edit.",
    _UPDATE,
    {"memory_id": "...", "version": 2, "changed": True},
    errors=_UPDATE_ERRORS,
)
_FORGET_OP = rpc(
    "memory.forget",
    subjects.MEMORY_FORGET,
    ma.MemoryForgetRequest,
    ma.MemoryForgetReply,
    "memory",
    "Forget a memory: its rows and vectors go, the log keeps that it was forgotten; again is harmless.",
    {**_TU, "memory_id": "...", "reason": "the player asked"},
    {"memory_id": "...", "forgotten": True},
    errors=_ERRORS,
)
_HISTORY_OP = rpc(
    "memory.history",
    subjects.MEMORY_HISTORY,
    ma.MemoryHistoryRequest,
    ma.MemoryHistoryReply,
    "memory",
    "Every version of a memory from the event log, who changed it and when (texts gone once forgotten).",
    {**_TU, "memory_id": "..."},
    _HISTORY_REPLY,
    errors=_ERRORS,
)

OPERATIONS: tuple[Operation, ...] = (
    _REMEMBER_OP,
    rpc(
        "memory.search",
        subjects.MEMORY_SEARCH,
        ma.MemorySearchRequest,
        ma.MemorySearchReply,
        "context-assembler",
        "Ranked memories (remembered ones, summaries, facts, legacy lore) with the parts of each score.",
        _SEARCH,
        {"results": [_HIT], "degraded": []},
        errors=("bad_request", "forbidden", "rate_limited", "internal"),
    ),
    _UPDATE_OP,
    _FORGET_OP,
    _HISTORY_OP,
    _engine_twin(_REMEMBER_OP, subjects.MEMORY_ENGINE_REMEMBER),
    _engine_twin(_UPDATE_OP, subjects.MEMORY_ENGINE_UPDATE),
    _engine_twin(_FORGET_OP, subjects.MEMORY_ENGINE_FORGET),
    _engine_twin(_HISTORY_OP, subjects.MEMORY_ENGINE_HISTORY),
)
