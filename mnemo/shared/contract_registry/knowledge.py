"""Knowledge by hand: list, add, edit and retract a character's facts, and a fact's audit trail."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import MEMORY_ERRORS, Operation, rpc
from mnemo_client.wire import knowledge_contract as kc

_TU = {"tenant_id": "t1", "user_id": "u1"}
_FACT = {
    "fact_id": "...",
    "character_id": "maren",
    "character_kind": "bot",
    "text": "Ilya's compass points to what its holder has lost.",
    "fact_type": "semantic",
    "tags": ["compass"],
    "confidence": 1.0,
    "scope": "player:u1",
    "status": "active",
    "conversation_id": "",
    "message_ids": [],
    "method": "manual:u1",
    "learned_at": "2026-11-01T18:30:00Z",
    "revises": None,
}
_CHANGED = {"fact_id": "...", "previous_fact_id": None, "changed": True, "fact": _FACT}

OPERATIONS: tuple[Operation, ...] = (
    # --- knowledge by hand -----------------------------------------------------------------------------------
    rpc(
        "knowledge.fact.list",
        subjects.KNOWLEDGE_FACT_LIST,
        kc.FactListRequest,
        kc.FactListReply,
        "memory-extractor",
        "What a character knows from this user's conversations, newest first, with scope and provenance.",
        {**_TU, "character_id": "maren", "include_inactive": False, "limit": 50, "offset": 0},
        {"facts": [_FACT], "total": 1, "offset": 0, "limit": 50},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "knowledge.fact.add",
        subjects.KNOWLEDGE_FACT_ADD,
        kc.FactAddRequest,
        kc.FactChangeReply,
        "memory-extractor",
        "Add a fact a character knows, by hand (idempotent); it reaches that character's context only.",
        {**_TU, "character_id": "maren", "text": "Ilya's compass points to what its holder has lost."},
        _CHANGED,
        errors=MEMORY_ERRORS,
        note="`scope`: the user's own by default, or `campaign:<id>`, `character:<id>`",
    ),
    rpc(
        "knowledge.fact.edit",
        subjects.KNOWLEDGE_FACT_EDIT,
        kc.FactEditRequest,
        kc.FactChangeReply,
        "memory-extractor",
        "A new version of a current fact; the old one is retired as edited and stays in the log.",
        {**_TU, "fact_id": "...", "text": "Ilya's silver compass points to what its holder has lost."},
        {**_CHANGED, "previous_fact_id": "..."},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "knowledge.fact.retract",
        subjects.KNOWLEDGE_FACT_RETRACT,
        kc.FactRetractRequest,
        kc.FactChangeReply,
        "memory-extractor",
        "The character no longer knows this fact (retired as retracted; retracting again changes nothing).",
        {**_TU, "fact_id": "..."},
        {**_CHANGED, "fact": {**_FACT, "status": "retired"}},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "knowledge.fact.history",
        subjects.KNOWLEDGE_FACT_HISTORY,
        kc.FactHistoryRequest,
        kc.FactHistoryReply,
        "memory-extractor",
        "A fact's audit trail from the log: learned, edited, consolidated, promoted, retired; every version.",
        {**_TU, "fact_id": "..."},
        {
            "fact_id": "...",
            "entries": [
                {
                    "at": "2026-11-01T18:30:00Z",
                    "event": "knowledge.fact_learned",
                    "fact_id": "...",
                    "by": "u1",
                    "summary": "added by hand",
                    "text": "Ilya's compass points to what its holder has lost.",
                    "scope": "player:u1",
                }
            ],
        },
        errors=MEMORY_ERRORS,
    ),
)
