"""Records a batch of inbound commands in the log: load, decide, append once, retry conflicts, project, publish.

The service layer between the consumer and the pure decisions in ``domain.py``. Per batch it costs a fixed
number of round trips whatever the batch size: conversation states and message statuses (concurrently),
one ``append_batch`` for every stream, the read-model writes, the publish.

- Conversation state comes from the read model and is trusted optimistically: the append's expected
  version is the projected one, so the hot path never asks the log for stream versions. A projection that
  lags (a crash between append and projection, another replica's appends) makes the append conflict; the
  stream is then caught up by folding the log tail it lacks and re-decided, and the tail is projected with
  the new events. A redelivered message the lagging projection does not know is still recorded once: its
  event id is already in the log, which the store reports as a duplicate (it takes no version slot).
- A stream that lost an optimistic-concurrency race is caught up from the log and re-decided, at most
  ``max_attempts`` times; streams that did commit are projected and published even if another one gives
  up (the whole batch is then naked and redelivered, and its committed part dedupes by event id).
- Publishing is best effort here: the relay republishes anything whose publish is not confirmed.
- Each command's events carry the command's ``traceparent`` (its consumer span), so the relay publishes
  them in the trace the platform message started.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from services.ingest.domain import InboundCommand, KnownMessage, decide_stream, known_from_events, stream_of
from shared.eventlog.port import Append, ConcurrencyError, EventStore
from shared.events.contract import BotUpserted, PersonaUpserted
from shared.events.envelope import EventEnvelope
from shared.readmodels import ConversationState, MessageKey, ReadModels, fold
from shared.runtime import CommittedPublisher

log = logging.getLogger(__name__)


async def _no_versions() -> dict[str, int]:
    return {}


class ConflictsExhausted(RuntimeError):
    """Streams kept losing optimistic-concurrency races; the batch is retried later."""


@dataclass
class StreamContext:
    """What is known about one stream while its commands are decided."""

    stream_id: str
    positions: list[int]  # the commands of this stream, as indexes into the batch
    version: int = 0  # the log version the decisions are based on (the append's expected version)
    state: ConversationState | None = None  # conversations only, caught up to ``version``
    projected: ConversationState | None = None  # conversations only, as the read model holds it
    known: dict[str, KnownMessage] = field(default_factory=dict)
    tail: list[EventEnvelope] = field(default_factory=list)  # log events the read models may lack
    saw_duplicates: bool = False  # the log already held some decided events: the projection lags


class Recorder:
    def __init__(
        self, store: EventStore, read_models: ReadModels, publisher: CommittedPublisher, *, max_attempts: int = 5
    ) -> None:
        self._store = store
        self._read_models = read_models
        self._publisher = publisher
        self._max_attempts = max_attempts

    async def record(
        self, commands: Sequence[InboundCommand], traceparents: Sequence[str | None] | None = None
    ) -> list[str | None]:
        """Record ``commands``; the refusal reason per command (None: recorded or already recorded).

        ``traceparents`` (one per command) are stamped on the events each command yields."""
        reasons: list[str | None] = [None] * len(commands)
        traces = list(traceparents) if traceparents is not None else [None] * len(commands)
        contexts = await self._load(commands)
        committed: list[EventEnvelope] = []
        settled: dict[str, StreamContext] = {}
        pending = list(contexts.values())
        for attempt in range(1, self._max_attempts + 1):
            lost = await self._append(pending, commands, traces, reasons, committed)
            lost_ids = {c.stream_id for c in lost}
            settled.update({c.stream_id: c for c in pending if c.stream_id not in lost_ids})
            if not lost:
                break
            log.info("attempt %d: %d stream(s) lost a concurrency race; catching up", attempt, len(lost))
            await self._catch_up(lost, await self._store.stream_versions([c.stream_id for c in lost]))
            pending = lost
        await self._project(settled.values(), committed)
        if committed:
            await self._publisher.publish_committed(committed)
        unsettled = [c.stream_id for c in contexts.values() if c.stream_id not in settled]
        if unsettled:
            raise ConflictsExhausted(f"{len(unsettled)} stream(s) still conflicting, e.g. {unsettled[0]!r}")
        return reasons

    async def _load(self, commands: Sequence[InboundCommand]) -> dict[str, StreamContext]:
        contexts: dict[str, StreamContext] = {}
        for position, cmd in enumerate(commands):
            sid = stream_of(cmd)
            contexts.setdefault(sid, StreamContext(sid, []))
            contexts[sid].positions.append(position)
        conversations = [
            sid
            for sid, c in contexts.items()
            if not isinstance(commands[c.positions[0]], BotUpserted | PersonaUpserted)
        ]
        keys = {
            MessageKey(cmd.tenant_id, cmd.user_id, cmd.conversation_id, cmd.message_id): sid
            for sid in conversations
            for cmd in (commands[p] for p in contexts[sid].positions)
            if not isinstance(cmd, BotUpserted | PersonaUpserted)
        }
        profiles = [sid for sid in contexts if sid not in set(conversations)]
        versions, states, statuses = await asyncio.gather(
            self._store.stream_versions(profiles) if profiles else _no_versions(),
            self._read_models.conversation_states(conversations),
            self._read_models.message_status(keys),
        )
        for sid in conversations:
            contexts[sid].state = contexts[sid].projected = states[sid]
            contexts[sid].version = states[sid].version
        for key, status in statuses.items():
            contexts[keys[key]].known[key.message_id] = KnownMessage(status.index, status.deleted)
        await self._catch_up([contexts[sid] for sid in profiles], versions)
        return contexts

    async def _catch_up(self, contexts: Sequence[StreamContext], versions: dict[str, int]) -> None:
        """Bring each context to the log's ``versions``: profiles by number, conversations by folding the tail."""
        behind = []
        for ctx in contexts:
            if ctx.state is None:
                ctx.version = versions.get(ctx.stream_id, 0)
            elif versions.get(ctx.stream_id, 0) > ctx.version:
                behind.append(ctx)
        tails = await asyncio.gather(*(self._store.read_stream(c.stream_id, after_version=c.version) for c in behind))
        for ctx, tail in zip(behind, tails, strict=True):
            assert ctx.state is not None
            ctx.state = fold(ctx.state, tail)
            ctx.version = ctx.state.version
            ctx.known.update(known_from_events(tail))
            ctx.tail.extend(tail)

    async def _append(
        self,
        contexts: Sequence[StreamContext],
        commands: Sequence[InboundCommand],
        traces: Sequence[str | None],
        reasons: list[str | None],
        committed: list[EventEnvelope],
    ) -> list[StreamContext]:
        """Decide and append every context's commands in one ``append_batch``; the contexts that lost a race."""
        appends: list[tuple[StreamContext, Append]] = []
        for ctx in contexts:
            decisions = decide_stream([commands[p] for p in ctx.positions], ctx.state, ctx.known)
            events = []
            for position, decision in zip(ctx.positions, decisions, strict=True):
                reasons[position] = decision.rejection
                tp = traces[position]
                events += [e.model_copy(update={"traceparent": tp}) if tp else e for e in decision.events]
            if events:
                appends.append((ctx, Append(ctx.stream_id, ctx.version, events)))
        if not appends:
            return []
        results = await self._store.append_batch([a for _, a in appends])
        lost = []
        for (ctx, _), result in zip(appends, results, strict=True):
            if isinstance(result, ConcurrencyError):
                lost.append(ctx)
            else:
                committed.extend(result.committed)
                ctx.saw_duplicates = bool(result.duplicates)
        return lost

    async def _project(self, contexts: Iterable[StreamContext], committed: list[EventEnvelope]) -> None:
        """Project the caught-up tails and the new events, folding from the states the read model holds.

        A conversation whose append met duplicates had a projection behind the log (the duplicates are
        events it never saw): its whole tail past the projection is re-read, so the fold stays gapless.
        """
        settled = list(contexts)
        lagging = [c for c in settled if c.saw_duplicates and c.projected is not None]
        tails = await asyncio.gather(
            *(self._store.read_stream(c.stream_id, after_version=c.projected.version) for c in lagging if c.projected)
        )
        for ctx, tail in zip(lagging, tails, strict=True):
            ctx.tail = tail
        projected = {c.stream_id: c.projected for c in settled if c.projected is not None}
        await self._read_models.apply([*(e for c in settled for e in c.tail), *committed], known_states=projected)
