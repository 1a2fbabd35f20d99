"""Events mnemo records in its log, their payload models, and the stream each belongs to: the facade.

Stream ids (``kind/tenant/...``) always start with the tenant, and conversations and personas also with
the user, so equal ids under another tenant or user are different streams. Each stream's types live in
their own module (``conversation``, ``profiles``, ``summaries``, ``knowledge``, ``lorebooks``, ``legacy_lore``,
``lore_timed``, ``privacy``, ``documents``, ``memories``), each registered with its payload model in
:data:`REGISTRY`; this module re-exports them all so callers import from one place: each module whole (its
public names), ``__all__`` below naming what the facade offers.
"""

from __future__ import annotations

from mnemo.shared.events.recorded.base import *
from mnemo.shared.events.recorded.conversation import *
from mnemo.shared.events.recorded.documents import *
from mnemo.shared.events.recorded.knowledge import *
from mnemo.shared.events.recorded.legacy_lore import *
from mnemo.shared.events.recorded.lore_timed import *
from mnemo.shared.events.recorded.lorebooks import *
from mnemo.shared.events.recorded.memories import *
from mnemo.shared.events.recorded.privacy import *
from mnemo.shared.events.recorded.profiles import *
from mnemo.shared.events.recorded.summaries import *

__all__ = [
    "BOT_RECORDED",
    "CONVERSATION_FORKED",
    "DOCUMENT_ACCEPTED",
    "DOCUMENT_CHUNKED",
    "DOCUMENT_COMPLETED",
    "DOCUMENT_DELETED",
    "DOCUMENT_EVENTS",
    "DOCUMENT_FAILED",
    "ERASURE_COMPLETED",
    "EVERYONE",
    "FACTS_CONSOLIDATED",
    "FACT_LEARNED",
    "FACT_PROMOTED",
    "FACT_RETIRED",
    "FACT_UNPROMOTED",
    "LEGACY_LORE_CREATED",
    "LEGACY_LORE_DELETED",
    "LOREBOOK_ATTACHED",
    "LOREBOOK_CREATED",
    "LOREBOOK_DELETED",
    "LOREBOOK_DETACHED",
    "LOREBOOK_ENTRY_CREATED",
    "LOREBOOK_ENTRY_DELETED",
    "LOREBOOK_ENTRY_UPDATED",
    "LOREBOOK_IMPORTED",
    "LOREBOOK_RENAMED",
    "LORE_TIMED_STATE_RECORDED",
    "MEMORY_EVENTS",
    "MEMORY_FORGOTTEN",
    "MEMORY_REMEMBERED",
    "MEMORY_UPDATED",
    "MESSAGES_WITNESSED",
    "MESSAGE_ALTERNATIVE_DELETED",
    "MESSAGE_ALTERNATIVE_RECORDED",
    "MESSAGE_DELETED",
    "MESSAGE_EDITED",
    "MESSAGE_RECORDED",
    "PERSONA_RECORDED",
    "REGISTRY",
    "SUMMARY_CREATED",
    "SUMMARY_RETIRED",
    "BotRecorded",
    "Citation",
    "ConversationForkRecorded",
    "DocumentAccepted",
    "DocumentChunk",
    "DocumentChunked",
    "DocumentCompleted",
    "DocumentDeleted",
    "DocumentFailed",
    "ErasureCompleted",
    "FactLearned",
    "FactPromoted",
    "FactRetired",
    "FactScopeChanged",
    "FactType",
    "FactUnpromoted",
    "FactsConsolidated",
    "LegacyLoreCreated",
    "LegacyLoreDeleted",
    "LoreTimedStateRecorded",
    "LorebookAttached",
    "LorebookBinding",
    "LorebookCreated",
    "LorebookDeleted",
    "LorebookDetached",
    "LorebookEntryCreated",
    "LorebookEntryDeleted",
    "LorebookEntryUpdated",
    "LorebookEntryWritten",
    "LorebookImported",
    "LorebookRenamed",
    "MemoryForgotten",
    "MemoryRemembered",
    "MemoryUpdated",
    "MessageAlternativeDeleted",
    "MessageAlternativeRecorded",
    "MessageDeletionRecorded",
    "MessageEditRecorded",
    "MessageRecorded",
    "MessagesWitnessed",
    "PersonaRecorded",
    "RecordedPayload",
    "SummaryCreated",
    "SummaryRetired",
    "SummaryType",
    "bot_stream",
    "campaign_scope",
    "character_scope",
    "cited_ids",
    "conversation_stream",
    "created_event_id",
    "document_stream",
    "knowledge_stream",
    "legacy_lore_stream",
    "lore_timed_stream",
    "lorebook_stream",
    "memory_stream",
    "new_event",
    "persona_stream",
    "player_scope",
    "privacy_stream",
    "summary_stream",
]
