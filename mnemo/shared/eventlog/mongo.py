"""The event log on MongoDB (and SecantusDB): one append-only document per event, OCC by unique index.

The contract is ``mnemo.shared.eventlog.port``'s. Why this shape:

- Idempotency key: ``_id`` is the ``event_id``, so the always-present unique ``_id`` index *is* the
  idempotency index (one unique index less per insert: SecantusDB is CPU bound on index maintenance).
- Optimistic concurrency: a unique index on ``(stream_id, version)`` makes a version slot claimable once,
  without transactions or a stream-head document. Duplicate-key errors are resolved by ``_learn``.
- Acknowledged means journaled (``j=True``): both servers lose acknowledged, non-journaled writes on a
  crash, and the relay would then publish an event the log no longer has. ``j`` is added to the write concern
  the URL names (``w=majority`` on a replica set stays ``w=majority``), never put in its place.
- Events of one append are stored strictly in order, so a crash or conflict leaves a prefix that a retry of
  the same events completes, in as few round trips as possible (``append_batch``): SecantusDB charges most
  for those under load.
- The outbox is insert-only (``mnemo.shared.eventlog.outbox``: an intent written before the events, a receipt
  after their publish, one watermark); event documents are never touched after insert.
- Assumptions (:data:`mnemo.shared.eventlog.port.OUTBOX_MARGIN_S`): an append's events are visible within
  ``min_age_s + margin`` of its intent's ``at``, and clocks of appenders and relays differ by less than
  that.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any

from pymongo import ASCENDING, DESCENDING, IndexModel, WriteConcern
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.errors import BulkWriteError

from mnemo.shared.eventlog.codec import EventCodec, StoredDoc, normalized_envelope_of, utc_ms
from mnemo.shared.eventlog.outbox import MongoOutbox
from mnemo.shared.eventlog.port import OUTBOX_MARGIN_S, Append, AppendResult, ConcurrencyError
from mnemo.shared.events.envelope import EventEnvelope, NewEvent, utcnow
from mnemo.shared.metrics import APPEND_CONFLICTS, APPENDED_EVENTS, APPENDS

_DUPLICATE_KEY = 11000


class _Pending:
    """One append on its way through insert rounds: which events are stored, known duplicates, next slot."""

    def __init__(self, codec: EventCodec, append: Append, envelopes: list[EventEnvelope], docs: list[StoredDoc]):
        """``envelopes``: the append's events, ``normalize``d and numbered from its expected version."""
        self.codec = codec
        self.stream_id = append.stream_id
        self.expected = append.expected_version
        self.envelopes = envelopes
        self.docs = docs
        self.ids = [e.event_id for e in envelopes]
        self.idx = 0
        self.next_version = append.expected_version + 1
        self.known: dict[str, tuple[str, int]] = {}  # event id -> (stream, version) already in the log
        self.result = AppendResult(append.stream_id, version=append.expected_version)
        self.conflict = False

    @property
    def done(self) -> bool:
        return self.conflict or self.idx >= len(self.ids)

    def remaining_ids(self) -> list[str]:
        return self.ids[self.idx :]

    def run(self, limit: int | None = None) -> list[StoredDoc]:
        """Documents for the next consecutive events not known to be stored, numbered from ``next_version``.

        A known duplicate sitting exactly in the slot it would take (a retried append) keeps its slot; one
        stored elsewhere takes none, so versions stay gapless.
        """
        while self.idx < len(self.ids) and self.ids[self.idx] in self.known:
            eid = self.ids[self.idx]
            self.result.duplicates.append(eid)
            if self.known[eid] == (self.stream_id, self.next_version):
                self.result.version = self.next_version
                self.next_version += 1
            self.idx += 1
        out: list[StoredDoc] = []
        i = self.idx
        while i < len(self.ids) and self.ids[i] not in self.known and (limit is None or len(out) < limit):
            doc = dict(self.docs[i])
            doc.pop("event_id", None)
            out.append({"_id": self.ids[i], **doc, "version": self.next_version + len(out)})
            i += 1
        return out

    def inserted(self, docs: Sequence[StoredDoc]) -> None:
        """``docs``, the first documents of the last ``run``, are stored."""
        for doc in docs:
            env = self.envelopes[self.idx]
            if env.version != self.next_version:  # an earlier event of the append was a duplicate
                env = env.model_copy(update={"version": self.next_version})
            self.result.committed.append(self.codec.upcast(env))
            self.result.stored.append(doc)
            self.result.version = self.next_version
            self.next_version += 1
            self.idx += 1

    def failed(self) -> None:
        """The event at ``idx`` was refused; ``known`` has just been refreshed from the log."""
        if self.ids[self.idx] not in self.known:
            self.conflict = True


def _dup_errors(exc: BulkWriteError) -> list[dict[str, Any]]:
    """The write errors of ``exc`` if all are duplicate keys; anything else is re-raised."""
    errors: list[dict[str, Any]] = list(exc.details.get("writeErrors", []))
    if exc.details.get("writeConcernErrors") or not errors:
        raise exc
    if any(e.get("code") != _DUPLICATE_KEY for e in errors):
        raise exc
    return errors


def journaled_concern(db: AsyncDatabase[Any]) -> WriteConcern:
    """The database's write concern (from its URL: ``w``, ``wtimeoutMS``) with journaling required on top."""
    named = dict(db.write_concern.document)
    return WriteConcern(w=named.get("w", 1), wtimeout=named.get("wtimeout"), j=True)


class MongoEventStore:
    """:class:`mnemo.shared.eventlog.port.EventStore` on a pymongo ``AsyncDatabase`` (MongoDB or SecantusDB)."""

    def __init__(
        self,
        db: AsyncDatabase[Any],
        codec: EventCodec,
        collection: str = "events",
        *,
        margin_s: float = OUTBOX_MARGIN_S,
    ) -> None:
        self.codec = codec
        journaled = journaled_concern(db)
        self.events: AsyncCollection[Any] = db.get_collection(collection, write_concern=journaled)
        self.outbox = MongoOutbox(db, journaled, timedelta(seconds=margin_s))
        self.intents, self.receipts = self.outbox.intents, self.outbox.receipts

    async def ensure_indexes(self) -> None:
        """Idempotent; call once at startup (the ``_id`` index is the event-id uniqueness)."""
        await self.events.create_indexes(
            [IndexModel([("stream_id", ASCENDING), ("version", ASCENDING)], unique=True, name="stream_version")]
        )
        await self.outbox.ensure_indexes()

    # --- writes ---------------------------------------------------------------------------------------
    async def _pending(self, append: Append) -> _Pending:
        recorded_at = utcnow()
        envs: list[EventEnvelope] = []
        for i, ev in enumerate(append.events):
            et = self.codec.event_type(ev.type, ev.event_id)
            v = append.expected_version + 1 + i
            envs.append(normalized_envelope_of(ev, append.stream_id, v, recorded_at, et.schema_version))
        docs = [await self.codec.encode_normalized(e) for e in envs]
        return _Pending(self.codec, append, envs, docs)

    async def _intend(self, pendings: Sequence[_Pending]) -> None:
        """The outbox intent: ONE document ``{event_ids, at}`` (``at`` = the append's ``recorded_at``), journaled
        before the first event is written, so a crash anywhere after the commit leaves an intent to recover."""
        ids = [eid for p in pendings for eid in p.ids]
        if ids:
            at = min(p.envelopes[0].recorded_at for p in pendings if p.ids)
            await self.outbox.intend(ids, utc_ms(at))

    async def _learn(self, pendings: Sequence[_Pending]) -> None:
        """One query: which of the pendings' remaining event ids are already in the log, and where.

        Run after a duplicate-key refusal instead of parsing ``keyPattern``: an event found in the log is an
        idempotent duplicate, a slot taken by an event that is not ours is a conflict. Servers differ in
        which index they report first when both collide; the re-check does not care."""
        ids = [eid for p in pendings for eid in p.remaining_ids()]
        found: dict[str, tuple[str, int]] = {}
        async for d in self.events.find({"_id": {"$in": ids}}, {"stream_id": 1, "version": 1}):
            found[d["_id"]] = (d["stream_id"], d["version"])
        for p in pendings:
            p.known.update({eid: found[eid] for eid in p.remaining_ids() if eid in found})

    async def _finish_ordered(self, p: _Pending) -> None:
        """The rest of one append: one ordered insert per round, a re-check after each refusal."""
        while not p.done:
            docs = p.run()
            if not docs:
                return
            try:
                await self.events.insert_many(docs, ordered=True)
                p.inserted(docs)
            except BulkWriteError as exc:
                p.inserted(docs[: _dup_errors(exc)[0]["index"]])
                await self._learn([p])
                p.failed()

    async def _all_in_order(self, pendings: list[_Pending]) -> None:
        """Every pending event in one ordered insert; a refusal stops it there (the rest goes in waves)."""
        runs = [(p, p.run()) for p in pendings]
        docs = [d for _, run in runs for d in run]
        if not docs:
            return
        try:
            await self.events.insert_many(docs, ordered=True)
            stored = len(docs)
        except BulkWriteError as exc:
            stored = _dup_errors(exc)[0]["index"]
        for p, run in runs:
            if stored >= len(run):
                p.inserted(run)
                stored -= len(run)
                continue
            p.inserted(run[:stored])  # the refused event is this stream's next one; later streams were not tried
            await self._learn([p])
            p.failed()
            return

    async def _wave(self, live: list[_Pending]) -> None:
        """The next event of every live append in one unordered insert."""
        slots: list[tuple[_Pending, StoredDoc]] = [(p, d) for p in live for d in p.run(limit=1)]
        if not slots:
            return
        refused: set[int] = set()
        try:
            await self.events.insert_many([d for _, d in slots], ordered=False)
        except BulkWriteError as exc:
            refused = {e["index"] for e in _dup_errors(exc)}
        for i, (p, doc) in enumerate(slots):
            if i not in refused:
                p.inserted([doc])
        losers = [slots[i][0] for i in sorted(refused)]
        if losers:
            await self._learn(losers)
            for p in losers:
                p.failed()

    @contextlib.asynccontextmanager
    async def _no_fast_path_if_it_fails(self, pendings: Sequence[_Pending]) -> AsyncIterator[None]:
        """An append that raises (the server went away mid-write: some of its events may be committed) has no
        fast-path publish coming after it, so its ids leave the in-flight set at once and the recovery loop
        publishes whatever did commit after ``min_age_s``, not ``grace_s`` later (``make chaos``, 2026-11-27:
        a message committed as SecantusDB was killed reached its vector index a minute late)."""
        try:
            yield
        except BaseException:
            await self.publish_failed([eid for p in pendings for eid in p.ids])
            raise

    def _no_fast_path_for_uncommitted(self, pendings: Sequence[_Pending]) -> None:
        """Only the events an append returns as committed get a fast-path publish (its caller's): the rest of
        its intended ids leave the in-flight set at once. Those are duplicates (already in the log: a retry of
        an append that failed after its commit) and, for an append that lost its race, all of them (a
        committed prefix is not returned). Held as in flight, a duplicate whose first publish never came was
        left out of recovery for ``grace_s`` (``make chaos``, 2026-11-28 00:25 UTC: SecantusDB restarting,
        ingest's append committed but raised, its retry found the message recorded and published nothing, and
        the message reached no consumer in the minute the run had left). Another of this process's appends may
        still be publishing such a duplicate: recovery then sends it twice, which JetStream deduplicates."""
        uncommitted: list[str] = []
        for p in pendings:
            committed = set() if p.conflict else {e.event_id for e in p.result.committed}
            uncommitted += [eid for eid in p.ids if eid not in committed]
        self.outbox.in_flight.done(uncommitted)

    async def append(self, stream_id: str, expected_version: int, events: Sequence[NewEvent]) -> AppendResult:
        p = await self._pending(Append(stream_id, expected_version, events))
        async with self._no_fast_path_if_it_fails([p]):
            await self._intend([p])
            await self._finish_ordered(p)
        self._no_fast_path_for_uncommitted([p])
        if p.conflict:
            APPEND_CONFLICTS.inc()
            raise ConcurrencyError(stream_id, expected_version, await self.stream_version(stream_id))
        APPENDS.inc()
        APPENDED_EVENTS.inc(len(p.result.committed))
        return p.result

    async def append_batch(self, appends: Sequence[Append]) -> list[AppendResult | ConcurrencyError]:
        """First every stream's events in ONE ordered insert (grouped by stream, each in order): it stops at
        the first refused event, so the prefix rule holds, and without conflicts a batch costs one insert
        (timed during ``make bench-ingest``: 15 ms per insert round under load against 2 ms alone). After a
        refusal the rest goes in waves: wave ``k`` holds every stream's ``k``-th pending event in one
        unordered insert, so a conflict on one stream never blocks another more than once, and no stream's
        later event is stored after its earlier one lost its slot (one unordered insert of everything could
        do that). The last live stream finishes in one ordered insert."""
        pendings = [await self._pending(a) for a in appends]
        async with self._no_fast_path_if_it_fails(pendings):
            await self._intend(pendings)
            await self._all_in_order([p for p in pendings if not p.done])
            while live := [p for p in pendings if not p.done]:
                if len(live) == 1:
                    await self._finish_ordered(live[0])
                else:
                    await self._wave(live)
        self._no_fast_path_for_uncommitted(pendings)
        conflicted = [p.stream_id for p in pendings if p.conflict]
        versions = await self.stream_versions(conflicted) if conflicted else {}
        APPEND_CONFLICTS.inc(len(conflicted))  # metrics: one call each per batch, not per event
        APPENDS.inc(len(pendings) - len(conflicted))
        APPENDED_EVENTS.inc(sum(len(p.result.committed) for p in pendings if not p.conflict))
        return [
            ConcurrencyError(p.stream_id, p.expected, versions.get(p.stream_id, 0)) if p.conflict else p.result
            for p in pendings
        ]

    # --- reads ----------------------------------------------------------------------------------------
    async def _decode_all(self, cursor: Any) -> list[EventEnvelope]:
        return await self.codec.decode_all([d async for d in cursor])

    async def stream_version(self, stream_id: str) -> int:
        doc = await self.events.find_one(
            {"stream_id": stream_id}, {"version": 1}, sort=[("stream_id", ASCENDING), ("version", DESCENDING)]
        )
        return int(doc["version"]) if doc else 0

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        """One aggregate; ``$sort`` on the unique index then ``$last`` per stream (streams without events: 0)."""
        out = dict.fromkeys(stream_ids, 0)
        if not stream_ids:
            return out
        pipeline: list[dict[str, Any]] = [
            {"$match": {"stream_id": {"$in": list(set(stream_ids))}}},
            {"$sort": {"stream_id": 1, "version": 1}},
            {"$group": {"_id": "$stream_id", "version": {"$last": "$version"}}},
        ]
        async for row in await self.events.aggregate(pipeline):
            out[row["_id"]] = int(row["version"])
        return out

    async def read_stream(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[EventEnvelope]:
        # By version range (a stream's versions are gapless), not ``limit``: SecantusDB applies a limit after
        # reading every match (the first event of a 1,548-event stream took 650 ms, its range 2 ms; 2026-11-26).
        top = {"$lte": after_version + limit} if limit is not None else {}
        cursor = self.events.find({"stream_id": stream_id, "version": {"$gt": after_version, **top}}).sort(
            [("stream_id", ASCENDING), ("version", ASCENDING)]
        )
        return await self._decode_all(cursor)

    async def read_stream_backwards(self, stream_id: str, limit: int) -> list[EventEnvelope]:
        cursor = (
            self.events.find({"stream_id": stream_id})
            .sort([("stream_id", ASCENDING), ("version", DESCENDING)])
            .limit(limit)
        )
        return await self._decode_all(cursor)

    async def get_events(self, event_ids: Sequence[str]) -> list[EventEnvelope]:
        """The stored ones among ``event_ids``, in the order asked."""
        found = {d["_id"]: d async for d in self.events.find({"_id": {"$in": list(event_ids)}})}
        return await self.codec.decode_all(found[i] for i in dict.fromkeys(event_ids) if i in found)

    async def read_all(self, batch_size: int = 1000) -> AsyncIterator[EventEnvelope]:
        """Keyset pagination over the unique ``(stream_id, version)`` index.

        Why that order and not ``recorded_at`` or a global sequence: it is exactly "each stream in version
        order", it is total and unique (so resuming after the last key yields every event exactly once, even
        while appends go on), it needs no extra index or counter document, and clocks of different writers
        cannot reorder a stream. Replay consumers must not rely on any cross-stream order.
        """
        last: tuple[str, int] | None = None
        while True:
            query: dict[str, Any] = {}
            if last is not None:
                query = {"$or": [{"stream_id": {"$gt": last[0]}}, {"stream_id": last[0], "version": {"$gt": last[1]}}]}
            cursor = self.events.find(query).sort([("stream_id", ASCENDING), ("version", ASCENDING)]).limit(batch_size)
            docs = [d async for d in cursor]
            for env in await self.codec.decode_all(docs):
                yield env
            if len(docs) < batch_size:
                return
            last = (docs[-1]["stream_id"], int(docs[-1]["version"]))

    # --- outbox (see the module docstring and ``unpublished``) ----------------------------------------
    async def unpublished(self, min_age_s: float, limit: int, *, grace_s: float = 0.0) -> list[EventEnvelope]:
        """See ``MongoOutbox.unpublished``."""
        return await self.outbox.unpublished(self.events, self.codec, min_age_s, limit, grace_s)

    async def mark_published(self, event_ids: Sequence[str]) -> None:
        await self.outbox.mark_published(event_ids)

    async def publish_failed(self, event_ids: Sequence[str]) -> None:
        self.outbox.in_flight.done(event_ids)
