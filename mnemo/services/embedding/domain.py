"""What the embedding service does with a batch of log events (pure, no I/O): one :class:`Plan`.

Each handled event class maps, in :data:`HANDLERS`, to the source that plans its points: ``messages``,
``summaries``, ``legacy_memories``, ``lore_entries``, ``facts``, ``documents`` or ``memories`` (one module each,
with its rules). The sources run in a fixed order, so deletions keep that order; deletions run before upserts.

Idempotency key: point ids are deterministic (``mnemo.shared.vectors.points.point_id``: kind, tenant, user,
conversation, source id, chunk), so a redelivered event overwrites the same points; each source also keeps a
late redelivery from bringing back text that was since edited, retired or deleted.

Payloads carry ids and filter fields only, never text: the text stays encrypted in MongoDB.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from mnemo.services.embedding.documents import DocState, plan_documents
from mnemo.services.embedding.facts import FactState, plan_facts
from mnemo.services.embedding.legacy_memories import plan_legacy
from mnemo.services.embedding.lore_entries import plan_lore
from mnemo.services.embedding.memories import plan_memories
from mnemo.services.embedding.messages import plan_messages
from mnemo.services.embedding.plan import Chunker, Plan
from mnemo.services.embedding.summaries import plan_summaries
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    DocumentAccepted,
    DocumentChunked,
    DocumentCompleted,
    DocumentDeleted,
    DocumentFailed,
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    FactUnpromoted,
    LegacyLoreCreated,
    LegacyLoreDeleted,
    LorebookCreated,
    LorebookDeleted,
    LorebookEntryCreated,
    LorebookEntryDeleted,
    LorebookEntryUpdated,
    LorebookImported,
    MemoryForgotten,
    MemoryRemembered,
    MemoryUpdated,
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
    SummaryCreated,
    SummaryRetired,
)
from mnemo.shared.readmodels import MessageKey, MessageStatus
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.subscriptions import Delivered, EventHandlers


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
    memories: Mapping[tuple[str, str], MemoryView] | None = None  # None: remembered memories are not indexed


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


def _memories(events: Sequence[EventEnvelope], plan: Plan, reads: BatchReads) -> None:
    if reads.memories is not None:
        plan_memories(events, plan, model=reads.model, chunker=reads.chunker, states=reads.memories)


#: The order the sources plan in (and so the order of the deletions).
SOURCES: tuple[Source, ...] = (_messages, _summaries, _legacy, _lore, _facts, _documents, _memories)


class BookTouched(BaseModel):
    """What a whole-book lorebook event tells the embedding service: which book (its points are planned from
    the book's current state in the lore read model, so the book itself is never decrypted here)."""

    lorebook_id: str


class EntryTouched(BaseModel):
    """What an entry's lorebook event tells it: which entry of which book (read from the book's state too)."""

    lorebook_id: str
    uid: int


class DocumentTouched(BaseModel):
    """What a document event whose text it does not embed tells it: which document."""

    document_id: str


class MemoryTouched(BaseModel):
    """What a memory event tells it: which memory (its points are planned from the memories read model's
    current version, so no memory's text is decrypted here)."""

    memory_id: str


#: A batch's handled events, per source that plans them (log order within each).
BySource = dict[Source, list[EventEnvelope]]


def _to(source: Source) -> Callable[[BySource, Delivered[BaseModel]], None]:
    def add(batch: BySource, event: Delivered[BaseModel]) -> None:
        batch.setdefault(source, []).append(event.envelope)

    return add


#: The embedding service's events, each to the source that plans its points: its durable filters these alone,
#: and of a lorebook or a document event only the fields named here are decrypted (``mnemo.shared.subscriptions``).
HANDLERS: EventHandlers[BySource] = (
    EventHandlers[BySource]()
    .on(MessageRecorded, _to(_messages))
    .on(MessageEditRecorded, _to(_messages))
    .on(MessageDeletionRecorded, _to(_messages))
    .on(SummaryCreated, _to(_summaries))
    .on(SummaryRetired, _to(_summaries))
    .on(LegacyLoreCreated, _to(_legacy))
    .on(LegacyLoreDeleted, _to(_legacy))
    .on_view(LorebookImported, BookTouched, _to(_lore))
    .on_view(LorebookCreated, BookTouched, _to(_lore))
    .on_view(LorebookEntryCreated, EntryTouched, _to(_lore))
    .on_view(LorebookEntryUpdated, EntryTouched, _to(_lore))
    .on(LorebookEntryDeleted, _to(_lore))
    .on(LorebookDeleted, _to(_lore))
    .on(FactLearned, _to(_facts))
    .on(FactsConsolidated, _to(_facts))
    .on(FactRetired, _to(_facts))
    .on(FactPromoted, _to(_facts))
    .on(FactUnpromoted, _to(_facts))
    .on_view(DocumentAccepted, DocumentTouched, _to(_documents))
    .on(DocumentChunked, _to(_documents))
    .on(DocumentCompleted, _to(_documents))
    .on_view(DocumentFailed, DocumentTouched, _to(_documents))
    .on(DocumentDeleted, _to(_documents))
    .on_view(MemoryRemembered, MemoryTouched, _to(_memories))
    .on_view(MemoryUpdated, MemoryTouched, _to(_memories))
    .on(MemoryForgotten, _to(_memories))
)


def by_source(envelopes: Sequence[EventEnvelope]) -> BySource:
    """``envelopes`` sorted per source as a delivered batch is (:data:`HANDLERS`); the types not handled and the
    invalid payloads are left out (``mnemo replay`` reports those, as ``EventHandlers.sort`` returns them)."""
    batch: BySource = {}
    HANDLERS.sort(batch, envelopes)
    return batch


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
    memories: Mapping[tuple[str, str], MemoryView] | None = None,
) -> Plan:
    """The deletions and points for a batch; ``statuses`` (with scenes) from the messages read model;
    ``inactive_summaries`` from the summaries read model (see ``summaries.plan_summaries``); ``facts`` from
    the knowledge read model (None: facts are not indexed; see ``facts.plan_facts``)."""
    reads = BatchReads(
        model,
        chunker,
        statuses,
        inactive_summaries or set(),
        deleted_legacy or set(),
        lore_books,
        facts,
        documents,
        memories,
    )
    return plan_sorted(by_source(envelopes), reads)


def plan_sorted(batch: BySource, reads: BatchReads) -> Plan:
    """The plan of a batch already sorted per source (each source's events valid, in log order)."""
    plan = Plan()
    for source in SOURCES:
        source(batch.get(source, []), plan, reads)
    return plan
