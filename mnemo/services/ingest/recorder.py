"""Records a batch of inbound commands in the log in two stages: decide and append, then project and publish.

The service layer between the consumer and the pure decisions (the conversation and profile aggregates'
deciders, run per stream by ``domain.py``). Per batch it costs a fixed number of round trips whatever the
batch size: message statuses (plus the states of conversations it has not cached), one ``append_batch`` for every stream, the read-model writes, the publish.

- ``begin`` (stage 1): load, decide, append; one batch at a time, in the order batches are begun (the
  consumer begins them in JetStream delivery order), so a conversation's message indexes follow the stream.
- the ``finish`` it returns (stage 2): project, then publish; one batch at a time, in begin order, while the
  next batch's ``begin`` runs (``mnemo.shared.delivery.Staged``).

Ack policy: streams that keep losing optimistic-concurrency races (``max_attempts``) fail the batch with
``ConflictsExhausted`` (it is redelivered) after what did commit is projected and published. Idempotency
key: the event id, deterministic per platform fact; a redelivered command already in the log is reported
by the store as a duplicate (no version slot taken), so it is recorded once. Publishing is best effort: the
relay republishes anything not confirmed. Events carry their command's ``traceparent`` (its consumer span).

Why a cache: the next batch is decided before this one is projected, so decisions cannot come from the read
model alone (see :class:`Recorder`). Saving is ``EventSaver.append_many`` (stage 1: one ``append_batch`` per
attempt, only the streams that lost are caught up and decided again) and ``EventSaver.publish`` (stage 2).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mnemo.services.ingest.cache import DEFAULT_CACHE_SIZE, ConversationCache
from mnemo.services.ingest.domain import InboundCommand, decide_stream, stream_of
from mnemo.services.ingest.statuses import StatusRead, StatusReads, merge_known, message_keys
from mnemo.shared.aggregates.conversation import Branches, KnownMessage, Timeline, fold, fold_tail, needs_timeline
from mnemo.shared.eventlog.port import Append, EventStore
from mnemo.shared.eventlog.save import EventSaver, Saved
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels import ConversationState
from mnemo.shared.readmodels.ports import ConversationReadModel
from mnemo_client.wire.contract import BotUpserted, ConversationForked, PersonaUpserted

Finish = Callable[[], Awaitable[list[str | None]]]


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
    known: dict[str, KnownMessage] = field(default_factory=dict)
    tail: list[EventEnvelope] = field(default_factory=list)  # log events folded in by a catch-up
    committed: list[EventEnvelope] = field(default_factory=list)  # what this batch appended
    log_version: int = 0  # the stream's version after this batch's append
    saw_duplicates: bool = False  # the log already held some decided events: the projection lags
    branch: Branches | None = None  # for swipes and forks (``needs_timeline``), read from the log


@dataclass
class _Decided:
    """A batch between its two stages."""

    reasons: list[str | None]
    settled: list[StreamContext]
    saved: Saved  # what the batch committed, projected and published by stage 2


class Recorder:
    """Decides against a bounded in-process cache (``ConversationCache``) that keeps, per conversation:

    - ``state``: the conversation as the log holds it after this process's last append (committed events
      folded in right after the append commits); None when unknown (the read model is then asked);
    - ``pending``: message statuses this process appended (or learned from the log) that the read model may
      not have yet; merged over the read model's statuses, and dropped once projected;
    - ``projected``: what the read model holds, as far as this process knows (a lower bound).

    Conversation state is trusted optimistically: the append's expected version is the cached (or projected)
    one, so the hot path never asks the log for stream versions. A stale state (a crash between append and
    projection, another replica's appends) makes the append conflict; the stream is then caught up by folding
    the log tail it lacks and re-decided (``_decide_and_append``)."""

    def __init__(
        self,
        store: EventStore,
        read_models: ConversationReadModel,
        saver: EventSaver,
        *,
        max_attempts: int = 5,
        cache_size: int = DEFAULT_CACHE_SIZE,
    ) -> None:
        self._store = store
        self._read_models = read_models
        self._saver = saver
        self._max_attempts = max_attempts
        self._cache_size = cache_size
        self._cache = ConversationCache(cache_size)
        self._statuses = StatusReads(read_models)  # message statuses read ahead of their round (``statuses.py``)
        self._deciding = asyncio.Lock()  # stage 1, one batch at a time
        self._finishing = asyncio.Lock()  # stage 2, one batch at a time

    def forget(self) -> None:
        """Drop the cache (another replica may have appended to its conversations): the read model is asked again."""
        self._cache = ConversationCache(self._cache_size)
        self._statuses.forget()

    def prefetch(self, commands: Sequence[InboundCommand]) -> StatusRead | None:
        """Start reading the statuses of ``commands``' messages in conversations whose cached state is trusted, for
        the ``begin`` that will get them (``prefetched``); None when there are none."""
        keys = message_keys(commands)
        trusted = {}
        for sid in set(keys.values()):
            if (entry := self._cache.get(sid)) is not None and entry.state is not None:
                trusted[sid] = entry
        wanted = {key: sid for key, sid in keys.items() if sid in trusted}
        return self._statuses.start(wanted, trusted) if wanted else None

    async def record(
        self, commands: Sequence[InboundCommand], traceparents: Sequence[str | None] | None = None
    ) -> list[str | None]:
        """Record ``commands``; the refusal reason per command (None: recorded or already recorded).

        ``traceparents`` (one per command) are stamped on the events each command yields."""
        finish = await self.begin(commands, traceparents)
        return await finish()

    async def begin(
        self,
        commands: Sequence[InboundCommand],
        traceparents: Sequence[str | None] | None = None,
        prefetched: Sequence[StatusRead] = (),
    ) -> Finish:
        """Stage 1: decide and append ``commands`` (after every batch begun earlier); the stage-2 call.

        Stage 2 projects, then publishes, and returns the refusal reason per command. Callers run the
        stage 2 of their batches in the order they began them (``BatchConsumer`` does); the projection
        stays correct in any order (it re-reads what the read model lacks), only publish order follows.
        ``prefetched``: status reads ``prefetch`` started for these commands."""
        try:
            return await self._begin(commands, traceparents, prefetched)
        finally:
            self._statuses.done(prefetched)

    async def _begin(
        self,
        commands: Sequence[InboundCommand],
        traceparents: Sequence[str | None] | None,
        prefetched: Sequence[StatusRead],
    ) -> Finish:
        if cut := _fork_cut(commands):  # a fork reads its parent from the log: record what precedes it first
            # (rare: the statuses are read again, not taken from ``prefetched``)
            traces = list(traceparents) if traceparents is not None else [None] * len(commands)
            head = await self.record(commands[:cut], traces[:cut])
            rest = await self.begin(commands[cut:], traces[cut:])

            async def both() -> list[str | None]:
                return head + await rest()

            return both
        async with self._deciding:
            decided, unsettled = await self._decide_and_append(commands, traceparents, prefetched)

        async def finish() -> list[str | None]:
            async with self._finishing:
                await self._finish(decided)
            return decided.reasons

        if unsettled:
            await finish()
            raise ConflictsExhausted(f"{len(unsettled)} stream(s) still conflicting, e.g. {unsettled[0]!r}")
        return finish

    # --- stage 1 --------------------------------------------------------------------------------------
    async def _decide_and_append(
        self,
        commands: Sequence[InboundCommand],
        traceparents: Sequence[str | None] | None,
        prefetched: Sequence[StatusRead] = (),
    ) -> tuple[_Decided, list[str]]:
        """Load, decide and append in one ``append_batch``; a stream that lost its race is caught up from the
        log and re-decided, at most ``max_attempts`` times. Returns the batch and the still unsettled streams
        (the caller projects and publishes what settled, then fails the batch; on redelivery its committed
        part dedupes by event id)."""
        reasons: list[str | None] = [None] * len(commands)
        traces = list(traceparents) if traceparents is not None else [None] * len(commands)
        contexts = await self._load(commands, prefetched)
        conversations = [c.stream_id for c in contexts.values() if c.state is not None]

        async def decide(only: Sequence[str] | None) -> list[Append]:
            pending = contexts.values() if only is None else [contexts[sid] for sid in only]
            return self._decide(pending, commands, traces, reasons)

        async def catch_up(lost: Sequence[str]) -> None:
            await self._catch_up([contexts[sid] for sid in lost], await self._store.stream_versions(lost))

        saved = Saved()
        try:
            saved = await self._saver.append_many(decide, on_conflict=catch_up, max_attempts=self._max_attempts)
            unsettled = set(saved.unsettled)
            settled = [c for c in contexts.values() if c.stream_id not in unsettled]
            for ctx in settled:
                if (result := saved.results.get(ctx.stream_id)) is not None:
                    ctx.committed = list(result.committed)
                    ctx.log_version = result.version
                    ctx.saw_duplicates = bool(result.duplicates)
            await self._remember(settled)
        except BaseException:
            for sid in conversations:  # what was committed is unknown: ask the read model (and the log) again
                self._cache.entry(sid).state = None
            await self._saver.abandon(saved)  # no stage 2 for what did commit: the relay's recovery takes it
            raise
        for sid in saved.unsettled:
            if sid in conversations:
                entry = self._cache.entry(sid)
                entry.state = None
                entry.remember(contexts[sid].tail)
        return _Decided(reasons, settled, saved), list(saved.unsettled)

    async def _load(
        self, commands: Sequence[InboundCommand], prefetched: Sequence[StatusRead] = ()
    ) -> dict[str, StreamContext]:
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
        keys = message_keys(commands)
        profiles = [sid for sid in contexts if sid not in set(conversations)]
        entries = {sid: self._cache.entry(sid) for sid in conversations}
        uncached = [sid for sid, e in entries.items() if e.state is None]
        reads: list[StatusRead] = []  # where the statuses came from: open until merged
        try:
            versions, states, statuses = await asyncio.gather(
                self._store.stream_versions(profiles) if profiles else _no_versions(),
                self._read_models.conversation_states(uncached) if uncached else _no_states(),
                self._statuses.read(keys, entries, prefetched, reads),
            )
            for key, status in statuses.items():
                contexts[keys[key]].known[key.message_id] = KnownMessage(status.index, status.deleted)
            for sid, entry in entries.items():
                ctx = contexts[sid]
                if sid in states:
                    ctx.state = states[sid]
                    if entry.projected is None or entry.projected.version < ctx.state.version:
                        entry.projected = ctx.state
                else:
                    ctx.state = entry.state
                assert ctx.state is not None
                ctx.version = ctx.state.version
                # Newer than the statuses read: what projections dropped from the cache since the reads were
                # issued, then what the cache still holds (``statuses.py``).
                merge_known(ctx.known, [*(r.pruned[sid] for r in reads if sid in r.pruned), entry.pending])
        finally:
            self._statuses.done(reads)
        await self._catch_up([contexts[sid] for sid in profiles], versions)
        await self._load_branches([contexts[sid] for sid in conversations], commands)
        return contexts

    async def _load_branches(self, contexts: Sequence[StreamContext], commands: Sequence[InboundCommand]) -> None:
        """The timelines of the conversations whose commands swipe, fork, edit or delete, and of forked
        parents: read whole from the log (rare commands; new messages never pay for it)."""
        wanted = [c for c in contexts if any(needs_timeline(commands[p]) for p in c.positions)]
        parents = [
            conversation_stream(cmd.tenant_id, cmd.user_id, cmd.parent_conversation_id)
            for c in wanted
            for cmd in (commands[p] for p in c.positions)
            if isinstance(cmd, ConversationForked)
        ]
        streams = list(dict.fromkeys([c.stream_id for c in wanted] + parents))
        read = await asyncio.gather(*(self._store.read_stream(sid) for sid in streams))
        timelines = {sid: Timeline().fold(events) for sid, events in zip(streams, read, strict=True)}
        parent_lines = {sid: timelines[sid] for sid in parents}  # by stream id: it starts with tenant and user
        for ctx in wanted:
            ctx.branch = Branches(timelines[ctx.stream_id], parent_lines)

    async def _catch_up(self, contexts: Sequence[StreamContext], versions: dict[str, int]) -> None:
        """Bring each context to the log's ``versions``: profiles by number, conversations by folding the tail
        once into their state, message statuses and (for swipes and forks) timeline."""
        behind = []
        for ctx in contexts:
            if ctx.state is None:
                ctx.version = versions.get(ctx.stream_id, 0)
            elif versions.get(ctx.stream_id, 0) > ctx.version:
                behind.append(ctx)
        tails = await asyncio.gather(*(self._store.read_stream(c.stream_id, after_version=c.version) for c in behind))
        for ctx, tail in zip(behind, tails, strict=True):
            assert ctx.state is not None
            ctx.state, known = fold_tail(ctx.state, tail, ctx.branch.timeline if ctx.branch is not None else None)
            ctx.version = ctx.state.version
            ctx.known.update(known)
            ctx.tail.extend(tail)

    @staticmethod
    def _decide(
        contexts: Iterable[StreamContext],
        commands: Sequence[InboundCommand],
        traces: Sequence[str | None],
        reasons: list[str | None],
    ) -> list[Append]:
        """Decide every context's commands at its version: the appends of one attempt (streams with events)."""
        appends: list[Append] = []
        for ctx in contexts:
            ctx.log_version = ctx.version
            decisions = decide_stream([commands[p] for p in ctx.positions], ctx.state, ctx.known, ctx.branch)
            events = []
            for position, decision in zip(ctx.positions, decisions, strict=True):
                reasons[position] = decision.rejection
                tp = traces[position]
                events += [e.model_copy(update={"traceparent": tp}) if tp else e for e in decision.events]
            if events:
                appends.append(Append(ctx.stream_id, ctx.version, events))
        return appends

    async def _remember(self, settled: Iterable[StreamContext]) -> None:
        """Fold what the settled conversations committed into the cache, before the next batch is decided.

        An append that met duplicates committed past events this process never saw: the cache then
        re-reads the log past the version the decisions were based on."""
        conversations = [c for c in settled if c.state is not None]
        lagging = [c for c in conversations if c.saw_duplicates]
        tails = await asyncio.gather(*(self._store.read_stream(c.stream_id, after_version=c.version) for c in lagging))
        reread = {c.stream_id: tail for c, tail in zip(lagging, tails, strict=True)}
        for ctx in conversations:
            assert ctx.state is not None
            events = reread.get(ctx.stream_id, ctx.committed)
            state = fold(ctx.state, events)
            entry = self._cache.entry(ctx.stream_id)
            entry.remember([*ctx.tail, *events])
            # A state that does not match the log's version is not trusted: the read model is asked next time.
            entry.state = state if state.version == ctx.log_version else None

    # --- stage 2 --------------------------------------------------------------------------------------
    async def _finish(self, decided: _Decided) -> None:
        conversations = [c.stream_id for c in decided.settled if c.state is not None]

        async def project(committed: Sequence[EventEnvelope]) -> None:
            await self._project(decided.settled, committed)

        try:  # a failed projection hands what committed to the relay's recovery (the saver does)
            await self._saver.publish(decided.saved, project=project)
        except BaseException:
            for sid in conversations:  # unknown what reached the read model: ask it next time
                self._cache.entry(sid).projected = None
            raise

    async def _project(self, settled: Sequence[StreamContext], committed: Sequence[EventEnvelope]) -> None:
        """Project the new events, plus the log tail the read model lacks, folding from what it holds.

        A conversation whose read model is behind the version its commands were decided on (a failed
        projection, a catch-up, duplicates: events it never saw) gets its whole log tail past the
        projection re-read, so the fold stays gapless."""
        conversations = [c for c in settled if c.state is not None]
        projected: dict[str, ConversationState] = {}
        for ctx in conversations:
            entry = self._cache.get(ctx.stream_id)
            if entry is not None and entry.projected is not None:
                projected[ctx.stream_id] = entry.projected
        unknown = [c.stream_id for c in conversations if c.stream_id not in projected]
        if unknown:
            projected.update(await self._read_models.conversation_states(unknown))
        lagging = [c for c in conversations if c.saw_duplicates or c.tail or projected[c.stream_id].version < c.version]
        tails = await asyncio.gather(
            *(self._store.read_stream(c.stream_id, after_version=projected[c.stream_id].version) for c in lagging)
        )
        after = await self._read_models.apply(
            [*(e for tail in tails for e in tail), *committed], known_states=projected
        )
        for sid, state in after.items():
            if (entry := self._cache.get(sid)) is not None:
                self._statuses.pruned(sid, entry.projected_to(state))


def _fork_cut(commands: Sequence[InboundCommand]) -> int:
    """The position of the first fork whose parent has commands earlier in the batch (0: none)."""
    for position, cmd in enumerate(commands):
        if isinstance(cmd, ConversationForked):
            parent = conversation_stream(cmd.tenant_id, cmd.user_id, cmd.parent_conversation_id)
            if any(stream_of(c) == parent for c in commands[:position]):
                return position
    return 0


async def _no_states() -> dict[str, ConversationState]:
    return {}
