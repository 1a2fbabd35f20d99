"""What the embedding service does with a batch of log events (pure, no I/O): one :class:`Plan`.

Each handled event type maps, in :data:`HANDLED`, to its payload model and to the source that plans its
points: ``messages``, ``summaries``, ``legacy_memories``, ``lore_entries``, ``facts`` or ``documents`` (one module each,
with its rules). The sources run in a fixed order, so deletions keep that order; deletions run before upserts.

Idempotency key: point ids are deterministic (``mnemo.shared.vectors.points.point_id``: kind, tenant, user,
conversation, source id, chunk), so a redelivered event overwrites the same points; each source also keeps a
late redelivery from bringing back text that was since edited, retired or deleted.

Payloads carry ids and filter fields only, never text: the text stays encrypted in MongoDB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError

from mnemo.services.embedding.documents import DocState, plan_documents
from mnemo.services.embedding.facts import FactState, plan_facts
from mnemo.services.embedding.legacy_memories import plan_legacy
from mnemo.services.embedding.lore_entries import plan_lore
from mnemo.services.embedding.messages import plan_messages
from mnemo.services.embedding.plan import Chunker, Plan
from mnemo.services.embedding.summaries import plan_summaries
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    DOCUMENT_ACCEPTED,
    DOCUMENT_CHUNKED,
    DOCUMENT_COMPLETED,
    DOCUMENT_DELETED,
    DOCUMENT_FAILED,
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    LEGACY_LORE_CREATED,
    LEGACY_LORE_DELETED,
    LOREBOOK_CREATED,
    LOREBOOK_DELETED,
    LOREBOOK_ENTRY_CREATED,
    LOREBOOK_ENTRY_DELETED,
    LOREBOOK_ENTRY_UPDATED,
    LOREBOOK_IMPORTED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    FactLearned,
    FactRetired,
    FactsConsolidated,
    FactScopeChanged,
    LegacyLoreCreated,
    LegacyLoreDeleted,
    LorebookCreated,
    LorebookDeleted,
    LorebookEntryDeleted,
    LorebookEntryWritten,
    LorebookImported,
    MessageDeleted,
    MessageEdited,
    MessageRecorded,
    SummaryCreated,
    SummaryRetired,
)
from mnemo.shared.events.recorded.documents import (
    DocumentAccepted,
    DocumentChunked,
    DocumentCompleted,
    DocumentDeleted,
    DocumentFailed,
)
from mnemo.shared.lore.history import BookState
from mnemo.shared.readmodels import MessageKey, MessageStatus


@dataclass(frozen=True)
class BatchReads:
    """What the sources need besides the events: the model id, the chunker and the read models' views."""

    model: str
    chunker: Chunker
    statuses: Mapping[MessageKey, MessageStatus]  # with scenes, from the messages read model
    inactive_summaries: set[str]
    deleted_legacy: set[str]
    lore_books: Mapping[tuple[str, str], BookState | None] | None  # None: lore is not indexed
    facts: Mapping[tuple[str, str], FactState] | None  # None: facts are not indexed
    documents: Mapping[tuple[str, str], DocState] | None = None  # None: documents are not indexed


#: One source's planning: its events of the batch (log order) into the plan.
Source = Callable[[Sequence[EventEnvelope], Plan, BatchReads], None]


def _messages(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    plan_messages(events, plan, statuses=reads.statuses, model=reads.model, chunker=reads.chunker)


def _summaries(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    plan_summaries(events, plan, model=reads.model, inactive=reads.inactive_summaries)


def _legacy(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    plan_legacy(events, plan, model=reads.model, chunker=reads.chunker, deleted=reads.deleted_legacy)


def _lore(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    if reads.lore_books is not None:
        plan_lore(events, plan, model=reads.model, books=reads.lore_books)


def _facts(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    if reads.facts is not None:
        plan_facts(events, plan, model=reads.model, chunker=reads.chunker, states=reads.facts)


def _documents(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    if reads.documents is not None:
        plan_documents(events, plan, model=reads.model, states=reads.documents)


#: The order the sources plan in (and so the order of the deletions).
SOURCES: tuple[Source, ...] = (_messages, _summaries, _legacy, _lore, _facts, _documents)


@dataclass(frozen=True)
class Handled:
    """A handled event type: the model its payload must parse as, and the source that plans it."""

    payload: type[BaseModel]
    source: Source


HANDLED: dict[str, Handled] = {
    MESSAGE_RECORDED.name: Handled(MessageRecorded, _messages),
    MESSAGE_EDITED.name: Handled(MessageEdited, _messages),
    MESSAGE_DELETED.name: Handled(MessageDeleted, _messages),
    SUMMARY_CREATED.name: Handled(SummaryCreated, _summaries),
    SUMMARY_RETIRED.name: Handled(SummaryRetired, _summaries),
    LEGACY_LORE_CREATED.name: Handled(LegacyLoreCreated, _legacy),
    LEGACY_LORE_DELETED.name: Handled(LegacyLoreDeleted, _legacy),
    LOREBOOK_IMPORTED.name: Handled(LorebookImported, _lore),
    LOREBOOK_CREATED.name: Handled(LorebookCreated, _lore),
    LOREBOOK_ENTRY_CREATED.name: Handled(LorebookEntryWritten, _lore),
    LOREBOOK_ENTRY_UPDATED.name: Handled(LorebookEntryWritten, _lore),
    LOREBOOK_ENTRY_DELETED.name: Handled(LorebookEntryDeleted, _lore),
    LOREBOOK_DELETED.name: Handled(LorebookDeleted, _lore),
    FACT_LEARNED.name: Handled(FactLearned, _facts),
    FACTS_CONSOLIDATED.name: Handled(FactsConsolidated, _facts),
    FACT_RETIRED.name: Handled(FactRetired, _facts),
    FACT_PROMOTED.name: Handled(FactScopeChanged, _facts),
    FACT_UNPROMOTED.name: Handled(FactScopeChanged, _facts),
    DOCUMENT_ACCEPTED.name: Handled(DocumentAccepted, _documents),
    DOCUMENT_CHUNKED.name: Handled(DocumentChunked, _documents),
    DOCUMENT_COMPLETED.name: Handled(DocumentCompleted, _documents),
    DOCUMENT_FAILED.name: Handled(DocumentFailed, _documents),
    DOCUMENT_DELETED.name: Handled(DocumentDeleted, _documents),
}
#: The payload model of each handled event type (an event of another type is not the service's).
PAYLOAD_MODELS: dict[str, type[BaseModel]] = {name: handled.payload for name, handled in HANDLED.items()}


def payload_error(envelope: EventEnvelope) -> str | None:
    """Why a handled event's payload can never be processed (None when it is fine or not handled)."""
    model = PAYLOAD_MODELS.get(envelope.type)
    if model is None:
        return None
    try:
        model.model_validate(envelope.payload)
    except ValidationError as exc:
        return f"{envelope.type} payload invalid: {exc}"
    return None


def plan_batch(
    envelopes: Sequence[EventEnvelope],
    statuses: Mapping[MessageKey, MessageStatus],
    *,
    model: str,
    chunker: Chunker,
    inactive_summaries: set[str] | None = None,
    deleted_legacy: set[str] | None = None,
    lore_books: Mapping[tuple[str, str], BookState | None] | None = None,
    facts: Mapping[tuple[str, str], FactState] | None = None,
    documents: Mapping[tuple[str, str], DocState] | None = None,
) -> Plan:
    """The deletions and points for a batch; ``statuses`` (with scenes) from the messages read model;
    ``inactive_summaries`` from the summaries read model (see ``summaries.plan_summaries``); ``facts`` from
    the knowledge read model (None: facts are not indexed; see ``facts.plan_facts``)."""
    reads = BatchReads(
        model, chunker, statuses, inactive_summaries or set(), deleted_legacy or set(), lore_books, facts, documents
    )
    by_source: dict[Source, list[EventEnvelope]] = {source: [] for source in SOURCES}
    for env in envelopes:
        if (handled := HANDLED.get(env.type)) is not None:
            by_source[handled.source].append(env)
    plan = Plan()
    for source, events in by_source.items():
        source(events, plan, reads)
    return plan
