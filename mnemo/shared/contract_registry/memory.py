"""Memories (list, convert to lore, edit, delete) and knowledge (promote, unpromote)."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import MEMORY_ERRORS, Operation, rpc
from mnemo_client.wire import memory_contract as mc
from mnemo_client.wire import memory_index_contract as mic

_TU = {"tenant_id": "t1", "user_id": "u1"}

OPERATIONS: tuple[Operation, ...] = (
    # --- memories and knowledge -----------------------------------------------------------------------------
    rpc(
        "memory.convert_to_lore",
        subjects.MEMORY_CONVERT_TO_LORE,
        mc.MemoryConvertToLoreRequest,
        mc.MemoryConvertToLoreReply,
        "memory",
        "Keep a memory (a summary) as a `legacy_memory` lore entry for some bots and personas.",
        {
            **_TU,
            "memory_id": "<summary id>",
            "applies_to_bots": ["maren"],
            "applies_to_personas": ["persona-1"],
            "title": "The compass",
            "tags": ["compass", "harbour"],
            "importance": 7,
        },
        {
            "legacy_id": "...",
            "memory_id": "...",
            "applies_to_bots": ["maren"],
            "applies_to_personas": ["persona-1"],
            "created": True,
        },
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "memory.delete",
        subjects.MEMORY_DELETE,
        mc.MemoryDeleteRequest,
        mc.MemoryDeleteReply,
        "memory",
        "Delete a memory, its legacy lore and their vectors; deleting again is harmless.",
        {**_TU, "memory_id": "<summary id>"},
        {"memory_id": "...", "deleted": True, "legacy_ids": ["..."]},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "memory.edit",
        subjects.MEMORY_EDIT,
        mc.MemoryEditRequest,
        mc.MemoryEditReply,
        "memory",
        "Edit a memory's (a summary's) text: a new version with a new id, the edited one kept in the log.",
        {**_TU, "memory_id": "<summary id>", "text": "Maren gave the brass compass back at the harbour."},
        {"memory_id": "...", "previous_id": "<summary id>", "changed": True},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "memory.list",
        subjects.MEMORY_LIST,
        mc.MemoryListRequest,
        mc.MemoryListReply,
        "memory",
        "One page of the user's memories, legacy lore and knowledge, newest first.",
        {**_TU, "source": "all", "type": None, "bot_id": "maren", "converted_to_lore": None, "limit": 50, "offset": 0},
        {
            "items": [
                {
                    "source": "memory",
                    "id": "...",
                    "type": "short_term",
                    "text": "...",
                    "participants": ["maren", "persona-1"],
                    "importance": 6,
                    "converted_to_lore": True,
                    "legacy_id": "...",
                    "status": "active",
                    "method": "extractive",
                }
            ],
            "total": 31,
            "offset": 0,
            "limit": 50,
        },
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "memory.index_status",
        subjects.MEMORY_INDEX_STATUS,
        mic.MemoryIndexStatusRequest,
        mic.MemoryIndexStatusReply,
        "context-assembler",
        "Tokens and vector status (indexed or missing, and how many points) of listed items.",
        {**_TU, "items": [{"source": "memory", "id": "<summary id>", "text": "Maren gave the compass back."}]},
        {"items": [{"source": "memory", "id": "...", "tokens": 8, "vectors": 1, "status": "indexed"}]},
        errors=("bad_request", "rate_limited", "unavailable", "internal"),
    ),
    rpc(
        "memory.promote",
        subjects.MEMORY_PROMOTE,
        mc.MemoryPromoteRequest,
        mc.MemoryScopeReply,
        "memory-extractor",
        "Share one of the user's own `player:<user>` facts with a campaign (knowledge promotion).",
        {**_TU, "fact_id": "...", "campaign_id": "kestrel"},
        {"fact_id": "...", "scope": "campaign:kestrel", "previous_scope": "player:u1", "changed": True},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "memory.unpromote",
        subjects.MEMORY_UNPROMOTE,
        mc.MemoryUnpromoteRequest,
        mc.MemoryScopeReply,
        "memory-extractor",
        "Undo a promotion: the fact returns to `player:<user>`.",
        {**_TU, "fact_id": "..."},
        {"fact_id": "...", "scope": "player:u1", "previous_scope": "campaign:kestrel", "changed": True},
        errors=MEMORY_ERRORS,
    ),
)
