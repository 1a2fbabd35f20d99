"""Chat events the platform publishes, the import of existing chat histories, and the context request."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import Operation, event, rpc
from mnemo_client.wire import chat_import_contract as ci
from mnemo_client.wire import contract as c

_T = {"tenant_id": "t1"}
_TU = {"tenant_id": "t1", "user_id": "u1"}
_CONV = {**_TU, "conversation_id": "c1"}

OPERATIONS: tuple[Operation, ...] = (
    # --- chat events: the platform publishes, JetStream stream MNEMO_CHAT captures them ----------------------
    event(
        "chat.message.created",
        subjects.MESSAGE_CREATED,
        c.MessageCreated,
        "A chat message was posted.",
        {
            **_CONV,
            "message_id": "m1",
            "role": "user",
            "author_id": "persona-1",
            "author_name": "Ilya",
            "content": "I brought my grandmother's compass.",
            "created_at": "2026-11-01T18:00:00Z",
            "bot_ids": ["maren"],
            "persona_id": "persona-1",
        },
        msg_id=("tenant_id", "conversation_id", "message_id"),
        key="conversation_id",
    ),
    event(
        "chat.message.edited",
        subjects.MESSAGE_EDITED,
        c.MessageEdited,
        "A message's text changed.",
        {
            **_CONV,
            "message_id": "m1",
            "content": "I brought my grandfather's compass.",
            "edited_at": "2026-11-01T18:05:00Z",
        },
        msg_id=("tenant_id", "conversation_id", "message_id", "edit_id", "edited_at"),
        key="conversation_id",
    ),
    event(
        "chat.message.deleted",
        subjects.MESSAGE_DELETED,
        c.MessageDeleted,
        "A message was removed.",
        {**_CONV, "message_id": "m1", "deleted_at": "2026-11-01T18:06:00Z"},
        msg_id=("tenant_id", "conversation_id", "message_id"),
        key="conversation_id",
    ),
    event(
        "chat.bot.upserted",
        subjects.BOT_UPSERTED,
        c.BotUpserted,
        "A character was created or changed.",
        {
            **_T,
            "bot_id": "maren",
            "name": "Captain Maren Voss",
            "system_prompt": "You are the captain of the airship Kestrel...",
            "gender": "female",
            "age": "41",
            "knowledge_sharing": "guarded",
            "updated_at": "2026-11-01T17:00:00Z",
        },
        "`gender`, `age`: optional free text; `knowledge_sharing`: optional `open`, `guarded` or `secretive`",
        msg_id=("tenant_id", "bot_id", "updated_at"),
        key="bot_id",
    ),
    event(
        "chat.persona.upserted",
        subjects.PERSONA_UPSERTED,
        c.PersonaUpserted,
        "A user's persona was created or changed.",
        {
            **_TU,
            "persona_id": "persona-1",
            "name": "Ilya Sarn",
            "description": "A young cartographer.",
            "traits": ["curious", "stubborn"],
            "instructions": "Call me Ilya, never Miss Sarn.",
            "updated_at": "2026-11-01T17:00:00Z",
        },
        "`instructions`: optional, the user's custom instructions for this persona",
        msg_id=("tenant_id", "user_id", "persona_id", "updated_at"),
        key="persona_id",
    ),
    event(
        "chat.message.swipe_selected",
        subjects.MESSAGE_SWIPE_SELECTED,
        c.MessageSwipeSelected,
        "Another alternative of a message became the current one (docs/branches.md).",
        {**_CONV, "message_id": "m2", "selected_at": "2026-11-01T18:08:00Z"},
        'the alternative to show; an alternative is a `message.created` with `"swipe_of": "<message id>"`, shown at once',
        msg_id=("tenant_id", "conversation_id", "message_id", "selected_at"),
        key="conversation_id",
    ),
    event(
        "chat.conversation.forked",
        subjects.CONVERSATION_FORKED,
        c.ConversationForked,
        "A new conversation continues another from one of its messages (docs/branches.md).",
        {
            **_TU,
            "conversation_id": "c1-branch",
            "parent_conversation_id": "c1",
            "from_message_id": "m2",
            "forked_at": "2026-11-01T19:00:00Z",
        },
        "a new conversation continuing `c1` from `m2`",
        msg_id=("tenant_id", "user_id", "conversation_id"),
        key="conversation_id",
    ),
    # --- an existing history brought in (docs/import.md) -------------------------------------------------------
    rpc(
        "chat.import",
        subjects.CHAT_IMPORT,
        ci.ChatImportRequest,
        ci.ChatImportReply,
        "memory",
        "Import one exported chat file (SillyTavern JSONL; Agnaistic, RisuAI, text-generation-webui JSON) as chat "
        "events with its own times; again records nothing twice.",
        {
            **_TU,
            "content": '{"user_name": "Mira", "character_name": "Maren", "create_date": "2024-5-12 @14h 33m 22s 123ms"}\n'
            '{"name": "Mira", "is_user": true, "send_date": "2024-5-12 @14h 33m 40s 5ms", "mes": "I brought the compass."}',
            "bot_id": "maren",
            "persona_id": "persona-1",
        },
        {
            "conversation_id": "st-3c1e...",
            "format": "sillytavern",
            "messages": 1,
            "events": 1,
            "already_stored": 0,
            "first_message_at": "2024-05-12T14:33:40.005000Z",
            "last_message_at": "2024-05-12T14:33:40.005000Z",
            "skipped": {},
            "problems": [],
            "problems_total": 0,
            "dry_run": False,
        },
        errors=("bad_request", "unavailable", "rate_limited", "internal"),
        note="`format` defaults to `auto`; a line that is not a message is listed in `problems` and the rest "
        "imported; no chat file, or a file without times and no `started_at`: `bad_request`",
    ),
    # --- context -----------------------------------------------------------------------------------------------
    rpc(
        "context.assemble",
        subjects.CONTEXT_ASSEMBLE,
        c.ContextAssembleRequest,
        c.ContextAssembleReply,
        "context-assembler",
        "The prompt context for the next bot reply, as the speaking bot may know it.",
        {
            **_CONV,
            "bot_id": "maren",
            "persona_id": "persona-1",
            "user_message": "Do you remember my compass?",
            "max_tokens": 8000,
        },
        errors=("bad_request", "not_found", "rate_limited", "internal"),
        note="the reply is shown below the table; `as_of_message_id` not in the conversation: `not_found`",
    ),
)
