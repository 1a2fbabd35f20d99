"""Summarizer handlers: thin glue between the log consumer, the pure domain and the stores.

Contract: consumes every relayed log event on ``mnemo.log.>`` (stream ``MNEMO_LOG``, durable
``mnemo_summarizer_main``, explicit acks via :mod:`shared.delivery`: ack once the effect is durable, nak with
backoff on failure, dead-letter invalid payloads).

- ``message.recorded`` whose index closes a range (``domain.due_range``) → load the range from the log
  (``ranges.py``), embed its sentences, append ``summary.created`` (``short_term``, ``extractive``) to
  ``summaries/<tenant>/<user>/<conversation>`` and publish it. Idempotency key: the event id is
  ``domain.summary_id`` over the range, so a redelivery appends nothing (the log reports a duplicate) and an
  already written summary is not even recomputed.
- ``summary.created`` → the ``summaries`` read model (idempotent upsert keyed by summary id).
"""

from __future__ import annotations

import logging

from pydantic import ValidationError

from services.summarizer import llm_summary, ranges
from services.summarizer.domain import (
    RangeMessage,
    SummarizerSettings,
    SummaryRange,
    compose_summary,
    due_range,
    sentences_of,
    summary_id,
)
from shared.delivery import Item, Rejection
from shared.embedders.port import Embedder
from shared.eventlog.port import ConcurrencyError, EventStore
from shared.events.envelope import EventEnvelope, NewEvent
from shared.events.recorded import (
    MESSAGE_RECORDED,
    SUMMARY_CREATED,
    MessageRecorded,
    SummaryCreated,
    conversation_stream,
    summary_stream,
)
from shared.llm.port import ChatModel, LLMError
from shared.readmodels.summaries import SummariesReadModel
from shared.runtime import CommittedPublisher

log = logging.getLogger(__name__)

MAX_CONFLICT_RETRIES = 5
MAX_WINDOW_GROWTH = 6  # the window doubles up to this many times before reading from the stream's start


class Summarizer:
    def __init__(
        self,
        store: EventStore,
        publisher: CommittedPublisher,
        embedder: Embedder,
        summaries: SummariesReadModel,
        settings: SummarizerSettings,
        chat_model: ChatModel | None = None,
    ) -> None:
        self._store = store
        self._publisher = publisher
        self._embedder = embedder
        self._summaries = summaries
        self._settings = settings
        self._chat_model = chat_model

    async def on_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        rejections: list[Rejection] = []
        created: list[EventEnvelope] = []
        for item in items:
            env = item.value
            try:
                if env.type == MESSAGE_RECORDED.name:
                    msg = MessageRecorded.model_validate(env.payload)
                    await self.on_message_recorded(env, msg, traceparent=item.traceparent)
                elif env.type == SUMMARY_CREATED.name:
                    SummaryCreated.model_validate(env.payload)
                    created.append(env)
            except ValidationError as exc:
                rejections.append(Rejection(item.msg, f"invalid {env.type} payload: {exc}"))
        await self._summaries.apply(created)
        return rejections

    async def on_message_recorded(
        self, env: EventEnvelope, msg: MessageRecorded, *, traceparent: str | None = None
    ) -> None:
        """Summarize the range ``msg`` closes, if any; the summary continues the trace ``traceparent``."""
        rng = due_range(msg.index, self._settings)
        if rng is None:
            return
        sid = summary_id(env.tenant_id, msg.user_id, msg.conversation_id, rng, "short_term")
        if await self._store.get_events([sid]):
            return  # already summarized (redelivery); the relay publishes it if that was not confirmed
        messages = await self._load_range(env, msg, rng)
        payload = await self._write_summary(sid, msg, rng, messages)
        if payload is None:
            log.info("range %s-%s of %s has no text; no summary", rng.first_index, rng.last_index, env.stream_id)
            return
        event = NewEvent(
            event_id=sid,
            type=SUMMARY_CREATED.name,
            tenant_id=env.tenant_id,
            occurred_at=payload.end_at,
            causation_id=env.event_id,
            correlation_id=env.correlation_id or env.event_id,
            traceparent=traceparent,
            payload=payload.model_dump(mode="json"),
        )
        await self._append(summary_stream(env.tenant_id, msg.user_id, msg.conversation_id), event)

    async def _write_summary(
        self, sid: str, msg: MessageRecorded, rng: SummaryRange, messages: list[RangeMessage]
    ) -> SummaryCreated | None:
        """LLM summary when a model is configured and answers; the extractive one otherwise."""
        if self._chat_model is not None and llm_summary.transcript(messages):
            try:
                completion = await llm_summary.summarize(self._chat_model, messages)
            except LLMError as exc:
                log.warning("LLM summary failed, falling back to extractive: %s", exc)
            else:
                return llm_summary.summary_from_completion(
                    summary_id=sid,
                    user_id=msg.user_id,
                    conversation_id=msg.conversation_id,
                    rng=rng,
                    messages=messages,
                    completion=completion,
                )
        sentences = sentences_of(messages, self._settings.max_sentences)
        if not sentences:
            return None
        vectors = await self._embedder.embed([s.text for s in sentences])
        return compose_summary(
            summary_id=sid,
            user_id=msg.user_id,
            conversation_id=msg.conversation_id,
            rng=rng,
            messages=messages,
            sentences=sentences,
            vectors=vectors,
            settings=self._settings,
        )

    async def _load_range(self, env: EventEnvelope, msg: MessageRecorded, rng: SummaryRange) -> list[RangeMessage]:
        stream = conversation_stream(env.tenant_id, msg.user_id, msg.conversation_id)
        factor = 2
        for _ in range(MAX_WINDOW_GROWTH):
            after = ranges.window_start(env.version, rng, factor)
            events = await self._store.read_stream(stream, after_version=after, limit=env.version - after)
            messages, reached = ranges.fold_range(events, rng)
            if reached or after == 0:
                return messages
            factor *= 2
        events = await self._store.read_stream(stream, after_version=0, limit=env.version)
        return ranges.fold_range(events, rng)[0]

    async def _append(self, stream: str, event: NewEvent) -> None:
        for _ in range(MAX_CONFLICT_RETRIES):
            version = await self._store.stream_version(stream)
            try:
                result = await self._store.append(stream, version, [event])
            except ConcurrencyError:
                continue  # another replica wrote to this stream meanwhile; re-read and retry
            if result.committed:
                await self._publisher.publish_committed(result.committed)
            return
        raise ConcurrencyError(stream, -1)
