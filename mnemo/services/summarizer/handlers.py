"""Summarizer handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes the log events of :data:`HANDLERS` (stream ``MNEMO_LOG``, durable ``mnemo_summarizer_main``
filtering their subjects, explicit acks via :mod:`mnemo.shared.delivery`: ack once the effect is durable, nak with
backoff on failure, dead-letter invalid payloads). Writes only to ``summaries/<tenant>/<user>/<conversation>``.

- ``message.recorded`` whose index closes a range (``domain.due_range``: count or token trigger) → read the
  range from the log (``ranges.py``), split it by presence (``domain.presence_parts``), write one summary per
  part (LLM when configured, extractive otherwise) and append them in one ``summary.created`` batch. Then
  consolidate (the summaries aggregate, ``mnemo.shared.aggregates.summaries``): while an (audience, level)
  group holds more than ``max_active`` live summaries, append a consolidated summary and a
  ``summary.retired`` (``consolidated``) per child, in one append at the stream version the decision was
  made on (a concurrent writer makes it decide again).
- ``message.edited`` / ``message.deleted`` → every live summary covering the message is recomputed over its
  messages as they now are (a deleted one is left out) and retired (``stale``, ``replaced_by`` the
  recomputation; none when no message is left), in one append.
- ``summary.created`` / ``summary.retired`` → the ``summaries`` read model.

Idempotency key: every appended event id is deterministic (range and character; children; stale summary
and the triggering event), so a redelivery appends only duplicates the log drops.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field

from mnemo.services.summarizer import consolidation, llm_summary, ranges
from mnemo.services.summarizer.domain import (
    AudiencePart,
    RangeMessage,
    SummaryRange,
    TriggerState,
    advance,
    compose_summary,
    fold_segment,
    pick_central,
    presence_parts,
    segment_start,
    sentences_of,
    summary_id,
)
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.aggregates import summaries as aggregate
from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.eventlog.save import AppendDecision, EventSaver
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import (
    MessageDeletionRecorded,
    MessageEditRecorded,
    MessageRecorded,
    SummaryCreated,
    SummaryRetired,
    conversation_stream,
    new_event,
    summary_stream,
)
from mnemo.shared.llm.port import ChatModel
from mnemo.shared.readmodels.ports import SummariesPort
from mnemo.shared.subscriptions import Delivered, EventHandlers
from mnemo.shared.tokens import estimate_tokens
from mnemo.shared.usage import acting_for

log = logging.getLogger(__name__)

MAX_WINDOW_GROWTH = 6  # the window doubles up to this many times before reading from the stream's start
MAX_TRIGGER_STATES = 50_000  # conversations whose trigger state is memoized (least recently used dropped)
MAX_FOLDS_PER_EVENT = 64  # consolidations per handled event (each removes batch-1 live summaries)


@dataclass(eq=False)
class Summarizer:
    store: EventStore
    saver: EventSaver
    embedder: Embedder
    summaries: SummariesPort
    settings: SummarizerSettings
    chat_model: ChatModel | None = None

    def __post_init__(self) -> None:
        self._per_tenant: dict[str, SummarizerSettings] = {}
        # Memo of each conversation's trigger state (a pure function of the log's recorded token counts), so
        # the next message in order decides its range without reading the log; a miss reads the segment.
        self._triggers: OrderedDict[tuple[str, str, str], TriggerState] = OrderedDict()

    def _remember(self, key: tuple[str, str, str], state: TriggerState) -> None:
        self._triggers[key] = state
        self._triggers.move_to_end(key)
        while len(self._triggers) > MAX_TRIGGER_STATES:
            self._triggers.popitem(last=False)

    def settings_for(self, tenant_id: str) -> SummarizerSettings:
        if tenant_id not in self._per_tenant:
            self._per_tenant[tenant_id] = self.settings.for_tenant(tenant_id)
        return self._per_tenant[tenant_id]

    async def on_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        batch = _SummarizerBatch(self)
        rejections = await HANDLERS.dispatch(batch, items)
        await self.summaries.apply(batch.projected)  # the batch's summary events, in one write
        return rejections

    # --- ranges -----------------------------------------------------------------------------------------
    async def on_message_recorded(
        self, env: EventEnvelope, msg: MessageRecorded, *, traceparent: str | None = None
    ) -> None:
        """Summarize the range ``msg`` closes, if any, then consolidate; continues the trace ``traceparent``."""
        settings = self.settings_for(env.tenant_id)
        stream = conversation_stream(env.tenant_id, msg.user_id, msg.conversation_id)
        key = (env.tenant_id, msg.user_id, msg.conversation_id)
        known = self._triggers.get(key)
        if (known is not None and known.index == msg.index - 1) or msg.index == segment_start(msg.index, settings):
            # The next message in order (or a segment's first): no need to re-read the segment's token counts.
            state, rng = advance(known, msg.index, msg.tokens, settings)
            events: list[EventEnvelope] | None = None
        else:
            first = segment_start(msg.index, settings)
            events = await self._read_back(env, stream, SummaryRange(first, msg.index))
            state, rng = fold_segment(msg.index, settings, ranges.recorded_tokens(events, first, msg.index))
        self._remember(key, state)
        if rng is None:
            return
        if events is None:
            events = await self._read_back(env, stream, rng)
        parts = {
            summary_id(env.tenant_id, msg.user_id, msg.conversation_id, rng, "short_term", part.character_id): part
            for part in presence_parts(ranges.fold_range(events, rng)[0])
        }
        written = {e.event_id for e in await self.store.get_events(list(parts))}  # a redelivery wrote them
        missing = {sid: part for sid, part in parts.items() if sid not in written}
        if missing:
            payloads = await self._range_summaries(msg, rng, missing, settings)
            if payloads:
                new = [self._event(env, p.summary_id, p, traceparent) for p in payloads]
                await self._append(summary_stream(env.tenant_id, msg.user_id, msg.conversation_id), new)
            else:
                log.info("range %s-%s of %s has no text; no summary", rng.first_index, rng.last_index, stream)
        await self.consolidate(env, msg.user_id, msg.conversation_id, traceparent=traceparent)

    async def _range_summaries(
        self, msg: MessageRecorded, rng: SummaryRange, parts: dict[str, AudiencePart], settings: SummarizerSettings
    ) -> list[SummaryCreated]:
        """One summary per presence part of the range (see ``domain.presence_parts``), keyed by summary id."""
        cap = settings.token_target if rng.by_tokens else settings.max_tokens
        cache: dict[str, list[float]] = {}
        out: list[SummaryCreated] = []
        for sid, part in parts.items():
            payload = await self._write_summary(
                sid, msg.user_id, msg.conversation_id, rng, list(part.messages), part.audience, cap, settings, cache
            )
            if payload is not None:
                out.append(payload)
        return out

    async def _write_summary(
        self,
        sid: str,
        user_id: str,
        conversation_id: str,
        rng: SummaryRange,
        messages: list[RangeMessage],
        audience: Sequence[str],
        cap: int,
        settings: SummarizerSettings,
        cache: dict[str, list[float]],
    ) -> SummaryCreated | None:
        """LLM summary when a model is configured and answers; the extractive one otherwise (also for a
        transcript over ``llm_max_input_tokens``). A ``cap`` above ``settings.max_tokens`` (token-triggered
        range, longer recomputation) asks the LLM for that length."""
        text = llm_summary.transcript(messages)
        if self.chat_model is not None and text and estimate_tokens(text) <= settings.llm_max_input_tokens:
            target = cap if cap > settings.max_tokens else None
            completion = await llm_summary.or_none(llm_summary.summarize(self.chat_model, messages, target), "summary")
            if completion is not None:
                return llm_summary.summary_from_completion(
                    summary_id=sid,
                    user_id=user_id,
                    conversation_id=conversation_id,
                    rng=rng,
                    messages=messages,
                    completion=completion,
                    audience=audience,
                )
        sentences = sentences_of(messages, settings.max_sentences)
        if not sentences:
            return None
        return compose_summary(
            summary_id=sid,
            user_id=user_id,
            conversation_id=conversation_id,
            rng=rng,
            messages=messages,
            sentences=sentences,
            vectors=await self._embed([s.text for s in sentences], cache),
            settings=settings,
            audience=audience,
            max_tokens=cap,
        )

    async def _embed(self, texts: list[str], cache: dict[str, list[float]]) -> list[list[float]]:
        """Vectors of ``texts``, embedding each distinct text once across a range's presence parts."""
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            cache.update(zip(missing, await self.embedder.embed(missing), strict=True))
        return [cache[t] for t in texts]

    # --- consolidation --------------------------------------------------------------------------------
    async def consolidate(
        self, env: EventEnvelope, user_id: str, conversation_id: str, *, traceparent: str | None = None
    ) -> None:
        """Fold over-full (audience, level) groups until none is left (the summaries aggregate)."""
        settings = self.settings_for(env.tenant_id)
        stream = summary_stream(env.tenant_id, user_id, conversation_id)
        for _ in range(MAX_FOLDS_PER_EVENT):
            live = aggregate.fold_live(await self.store.read_stream(stream))
            batch = aggregate.due_batch(live.summaries(), settings)
            if batch is None:
                return
            cid = aggregate.consolidation_id(env.tenant_id, user_id, conversation_id, [c.summary_id for c in batch])
            merged = await self._consolidated(cid, batch, settings)
            new = [self._event(env, cid, merged, traceparent)]
            for child in batch:
                rid, retired = aggregate.retirement(child, "consolidated", cid, merged.end_at)
                new.append(self._event(env, rid, retired, traceparent))
            await self._append_at(stream, live, new)
        log.warning("%s: consolidation did not settle in %d folds", stream, MAX_FOLDS_PER_EVENT)

    async def _consolidated(
        self, cid: str, children: list[SummaryCreated], settings: SummarizerSettings
    ) -> SummaryCreated:
        """The LLM's merge (``consolidate.v1``) when configured and answering; else an extractive one."""
        ordered = sorted(children, key=lambda c: (c.first_index, c.last_index, c.summary_id))
        if self.chat_model is not None:
            merged = await llm_summary.or_none(
                llm_summary.consolidate(self.chat_model, [c.text for c in ordered]), "consolidation"
            )
            if merged is not None:
                return aggregate.consolidated_payload(
                    summary_id=cid,
                    children=ordered,
                    text=merged.value.summary,
                    method=merged.method,
                    prompt_version=merged.prompt_version,
                    emotional_context=merged.value.emotional_context,
                )
        sentences = consolidation.child_sentences(ordered, settings.max_sentences)
        picked = pick_central(
            sentences,
            await self._embed([s.text for s in sentences], {}),
            max_tokens=settings.consolidate_max_tokens,
            duplicate_cosine=settings.duplicate_cosine,
            min_relative=settings.min_relative_centrality,
        )
        text, citations = consolidation.joined_with_citations(ordered, picked)
        if not text:  # nothing picked: the children's texts whole, written from all they cover
            text, citations = " ".join(c.text for c in ordered), []
        return aggregate.consolidated_payload(
            summary_id=cid, children=ordered, text=text, method="extractive", citations=citations
        )

    # --- edits and deletes ----------------------------------------------------------------------------
    async def on_message_changed(
        self,
        env: EventEnvelope,
        change: MessageEditRecorded | MessageDeletionRecorded,
        *,
        traceparent: str | None = None,
    ) -> None:
        """Retire every live summary covering the changed message and recompute it over the current texts."""
        settings = self.settings_for(env.tenant_id)
        stream = summary_stream(env.tenant_id, change.user_id, change.conversation_id)
        at = change.edited_at if isinstance(change, MessageEditRecorded) else change.deleted_at

        async def decide() -> AppendDecision[None]:
            live = aggregate.fold_live(await self.store.read_stream(stream))
            causes = {x.causation_id for x in live.by_id.values() if x.causation_id}
            versions = {e.event_id: e.version for e in await self.store.get_events(list(causes))}
            new: list[NewEvent] = []
            for old in aggregate.stale_by(live, change.message_id, env.version, versions):
                rid = aggregate.recompute_id(
                    env.tenant_id, change.user_id, change.conversation_id, old.summary_id, env.event_id
                )
                fresh = await self._recompute(env, old, rid, settings)
                if fresh is not None:
                    new.append(self._event(env, rid, fresh, traceparent))
                eid, retired = aggregate.retirement(old, "stale", rid if fresh else None, at)
                new.append(self._event(env, eid, retired, traceparent))
            return AppendDecision(live.version, new, None)  # nothing stale: nothing to append

        await self.saver.save_decided(stream, decide)

    async def _recompute(
        self, env: EventEnvelope, old: SummaryCreated, rid: str, settings: SummarizerSettings
    ) -> SummaryCreated | None:
        """``old`` over its messages as the log holds them at ``env`` (same range, audience and level)."""
        rng = SummaryRange(old.first_index, old.last_index)
        stream = conversation_stream(env.tenant_id, old.user_id, old.conversation_id)
        events = await self._read_back(env, stream, rng)
        keep = set(old.message_ids)
        messages = [m for m in ranges.fold_range(events, rng)[0] if m.message_id in keep]
        if old.summary_type == "short_term":
            cap = max(settings.max_tokens, min(estimate_tokens(old.text), settings.token_target))
        else:
            cap = settings.consolidate_max_tokens
        fresh = await self._write_summary(
            rid, old.user_id, old.conversation_id, rng, messages, old.audience, cap, settings, {}
        )
        if fresh is None:
            return None
        return fresh.model_copy(update={"summary_type": old.summary_type, "consolidates": list(old.consolidates)})

    # --- log access -----------------------------------------------------------------------------------
    async def _read_back(self, env: EventEnvelope, stream: str, rng: SummaryRange) -> list[EventEnvelope]:
        """The conversation stream up to ``env``'s version, reaching back to ``rng.first_index``'s recording
        (a window that doubles until it does, then the whole stream)."""
        factor = 2
        for _ in range(MAX_WINDOW_GROWTH):
            after = ranges.window_start(env.version, rng, factor)
            events = await self.store.read_stream(stream, after_version=after, limit=env.version - after)
            if after == 0 or ranges.fold_range(events, rng)[1]:
                return events
            factor *= 2
        return await self.store.read_stream(stream, after_version=0, limit=env.version)

    @staticmethod
    def _event(
        cause: EventEnvelope,
        event_id: str,
        payload: SummaryCreated | SummaryRetired,
        traceparent: str | None,
    ) -> NewEvent:
        occurred = payload.end_at if isinstance(payload, SummaryCreated) else payload.retired_at
        return new_event(
            payload,
            event_id=event_id,
            tenant_id=cause.tenant_id,
            occurred_at=occurred,
            causation_id=cause.event_id,
            correlation_id=cause.correlation_id or cause.event_id,
            traceparent=traceparent,
        )

    async def _append_at(self, stream: str, live: aggregate.LiveSet, events: list[NewEvent]) -> None:
        """Append at the version ``live`` was folded from; a lost race appends nothing (the caller's next fold
        re-reads the stream and decides again)."""
        await self.saver.save_at(stream, live.version, events)

    async def _append(self, stream: str, events: list[NewEvent]) -> None:
        # Another replica may write to this stream meanwhile: re-read its version and retry.
        await self.saver.save_at_head(stream, events)


@dataclass
class _SummarizerBatch:
    """What a batch's handlers share: the summarizer, and the summary events to project after the batch."""

    summarizer: Summarizer
    projected: list[EventEnvelope] = field(default_factory=list)


async def _recorded(batch: _SummarizerBatch, event: Delivered[MessageRecorded]) -> None:
    with acting_for(event.envelope.tenant_id):  # its LLM tokens are this tenant's usage
        await batch.summarizer.on_message_recorded(event.envelope, event.payload, traceparent=event.traceparent)


async def _changed(batch: _SummarizerBatch, event: Delivered[MessageEditRecorded | MessageDeletionRecorded]) -> None:
    with acting_for(event.envelope.tenant_id):
        await batch.summarizer.on_message_changed(event.envelope, event.payload, traceparent=event.traceparent)


def _summary(batch: _SummarizerBatch, event: Delivered[SummaryCreated | SummaryRetired]) -> None:
    batch.projected.append(event.envelope)


#: The summarizer's events: its durable filters these alone (``mnemo.shared.subscriptions``).
HANDLERS: EventHandlers[_SummarizerBatch] = (
    EventHandlers[_SummarizerBatch]()
    .on(MessageRecorded, _recorded)
    .on(MessageEditRecorded, _changed)
    .on(MessageDeletionRecorded, _changed)
    .on(SummaryCreated, _summary)
    .on(SummaryRetired, _summary)
)
