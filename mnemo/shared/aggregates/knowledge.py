"""The knowledge aggregate: a character's stream (``knowledge/<tenant>/<character>``), what it witnessed and
learned and the scopes of its facts; pure (no I/O).

- its fold table, ``fact_folds``: each fact event to its step of a fold. The knowledge read model, its
  in-memory fake and the fact vectors all fold by it, so a new fact event is given a step in each of them
  or fails to build, never missed by one.
- its decider of witnessing: a character only knows what it was present for. When a message is recorded,
  every bot in its ``bot_ids`` and the user's active persona witnessed it; each (character, message) pair
  becomes one ``knowledge.witnessed`` event in the character's stream. The event id is deterministic over
  (tenant, character kind, character, user, conversation, message), so a redelivered or replayed
  ``message.recorded`` appends nothing the second time.

The facts a character learns and their changes by hand are decided by the memory-extractor on the knowledge
read model's view of a fact (``learning.py``, ``manual.py``, ``promotion.py``). ``EVENTS`` names the stream's
payload classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    MESSAGES_WITNESSED,
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    FactUnpromoted,
    MessageRecorded,
    MessagesWitnessed,
    knowledge_stream,
    new_event,
)

#: The payload classes of a character's knowledge stream.
EVENTS = (MessagesWitnessed, FactLearned, FactsConsolidated, FactRetired, FactPromoted, FactUnpromoted)


Step = TypeVar("Step")


def fact_folds(*, learned: Step, consolidated: Step, retired: Step, scope_changed: Step) -> dict[str, Step]:
    """The fact events of a knowledge stream, each to its step of a fold (a promotion and its undoing are one
    step: a scope change). The knowledge read model, its in-memory fake and the fact vectors all fold by this
    one table, so a new fact event is given a step in each of them or fails to build, never missed by one."""
    return {
        FACT_LEARNED.name: learned,
        FACTS_CONSOLIDATED.name: consolidated,
        FACT_RETIRED.name: retired,
        FACT_PROMOTED.name: scope_changed,
        FACT_UNPROMOTED.name: scope_changed,
    }


#: The types of every fact event (``fact_folds``'s keys): what the knowledge read model projects.
FACT_EVENTS = frozenset(fact_folds(learned=0, consolidated=0, retired=0, scope_changed=0))


@dataclass(frozen=True)
class Witnessing:
    """One character witnessing one message, ready to append."""

    stream_id: str
    event: NewEvent


def witness_event_id(tenant_id: str, kind: str, character_id: str, msg: MessageRecorded) -> str:
    return deterministic_id(
        MESSAGES_WITNESSED.name, tenant_id, kind, character_id, msg.user_id, msg.conversation_id, msg.message_id
    )


def witnesses_of(
    tenant_id: str, msg: MessageRecorded, *, causation_id: str | None = None, traceparent: str | None = None
) -> list[Witnessing]:
    """One event per bot present (without repeats) and one for the persona, if any; each continues the
    trace ``traceparent`` of the message it witnesses."""
    characters: list[tuple[str, str]] = [("bot", b) for b in dict.fromkeys(msg.bot_ids)]
    if msg.persona_id:
        characters.append(("persona", msg.persona_id))
    out: list[Witnessing] = []
    for kind, character_id in characters:
        payload = MessagesWitnessed(
            character_id=character_id,
            character_kind="bot" if kind == "bot" else "persona",
            user_id=msg.user_id,
            conversation_id=msg.conversation_id,
            message_ids=[msg.message_id],
            first_index=msg.index,
            last_index=msg.index,
        )
        event = new_event(
            payload,
            event_id=witness_event_id(tenant_id, kind, character_id, msg),
            tenant_id=tenant_id,
            occurred_at=msg.created_at,
            causation_id=causation_id,
            correlation_id=causation_id,
            traceparent=traceparent,
        )
        out.append(Witnessing(knowledge_stream(tenant_id, character_id), event))
    return out
