"""Conversation reads: the tenant's conversations and one conversation's timeline (the workbench's first view)."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import MEMORY_ERRORS, Operation, rpc
from mnemo_client.wire import conversation_contract as cc

_LISTED = {
    "user_id": "u1",
    "conversation_id": "c1",
    "messages": 12,
    "first_message_at": "2026-11-01T18:00:00Z",
    "last_message_at": "2026-11-01T18:22:00Z",
    "bots": [{"id": "maren", "name": "Captain Maren Voss"}],
    "personas": [{"id": "persona-1", "name": "Ilya Sarn"}],
    "forked_from": None,
}

OPERATIONS: tuple[Operation, ...] = (
    # --- conversations --------------------------------------------------------------------------------------
    rpc(
        "conversation.list",
        subjects.CONVERSATION_LIST,
        cc.ConversationListRequest,
        cc.ConversationListReply,
        "memory",
        "The tenant's conversations (or one user's), latest message first, with their bots and personas.",
        {"tenant_id": "t1", "user_id": None, "limit": 50, "offset": 0},
        {"conversations": [_LISTED], "total": 1, "offset": 0, "limit": 50},
        errors=MEMORY_ERRORS,
    ),
    rpc(
        "conversation.timeline",
        subjects.CONVERSATION_TIMELINE,
        cc.ConversationTimelineRequest,
        cc.ConversationTimelineReply,
        "memory",
        "One conversation's messages with who was present, summaries as spans, facts learned, swipes and forks.",
        {"tenant_id": "t1", "user_id": "u1", "conversation_id": "c1", "from_index": 0, "limit": 200},
        {
            "conversation": _LISTED,
            "messages": [
                {
                    "message_id": "m1",
                    "index": 0,
                    "role": "user",
                    "author_id": "persona-1",
                    "author_name": "Ilya",
                    "content": "I brought my grandmother's compass.",
                    "created_at": "2026-11-01T18:00:00Z",
                    "tokens": 9,
                    "present": ["maren"],
                    "persona_id": "persona-1",
                    "persona_switch": True,
                    "alternatives": [],
                    "facts": [
                        {
                            "fact_id": "...",
                            "character_id": "maren",
                            "text": "Ilya has her grandmother's compass.",
                            "fact_type": "semantic",
                            "scope": "player:u1",
                            "status": "active",
                            "method": "pattern",
                        }
                    ],
                }
            ],
            "summaries": [],
            "forks": [],
            "next_index": None,
        },
        errors=MEMORY_ERRORS,
    ),
)
