"""An in-process event store with the same semantics as :class:`mnemo.shared.eventlog.mongo.MongoEventStore`.

It keeps the *encoded* (encrypted) documents, so tests that use it still exercise the codec: encryption,
associated-data binding and upcasting on read. Appends are atomic per event and ordered per append (an
append that hits a taken slot keeps the events before it, exactly like the MongoDB adapter), and the
critical section has no ``await`` in it, so concurrent tasks interleave only between appends. The outbox
has the MongoDB adapter's observable semantics, watermark and margin included, with a set of published ids.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta

from mnemo.shared.eventlog.codec import EventCodec, StoredDoc, envelope_of, utc_ms
from mnemo.shared.eventlog.outbox import InFlight
from mnemo.shared.eventlog.port import OUTBOX_MARGIN_S, Append, AppendResult, ConcurrencyError
from mnemo.shared.events.envelope import EventEnvelope, NewEvent, utcnow


class InMemoryEventStore:
    def __init__(self, codec: EventCodec, *, margin_s: float = OUTBOX_MARGIN_S) -> None:
        self.codec = codec
        self.docs: dict[str, StoredDoc] = {}  # event id -> stored document
        self._streams: dict[str, dict[int, str]] = {}  # stream id -> version -> event id
        self.published: set[str] = set()  # confirmed by mark_published (unknown ids included, harmlessly)
        self.watermark: datetime | None = None  # the outbox watermark (see shared.eventlog.port)
        self.margin = timedelta(seconds=margin_s)
        self.in_flight = InFlight()  # appended here, publish neither confirmed nor reported failed

    # --- test hooks (the MongoDB suite does the same with raw collection writes) -----------------------
    def insert_raw(self, doc: StoredDoc) -> None:
        """Store an already encoded document as is (e.g. an old schema version written by older code)."""
        eid = doc["event_id"]
        self.docs[eid] = dict(doc)
        self._streams.setdefault(doc["stream_id"], {})[int(doc["version"])] = eid

    # --- writes ---------------------------------------------------------------------------------------
    async def _encode(self, append: Append) -> list[tuple[EventEnvelope, StoredDoc]]:
        recorded_at = utcnow()
        out = []
        for i, ev in enumerate(append.events):
            et = self.codec.event_type(ev.type, ev.event_id)
            env = envelope_of(ev, append.stream_id, append.expected_version + 1 + i, recorded_at, et.schema_version)
            out.append((env, await self.codec.encode(env)))
        return out

    def _commit(self, append: Append, encoded: list[tuple[EventEnvelope, StoredDoc]]) -> AppendResult:
        """No awaits: atomic with respect to other tasks."""
        sid = append.stream_id
        slots = self._streams.setdefault(sid, {})
        result = AppendResult(sid, version=append.expected_version)
        next_version = append.expected_version + 1
        for env, doc in encoded:
            existing = self.docs.get(env.event_id)
            if existing is not None:
                result.duplicates.append(env.event_id)
                if (existing["stream_id"], existing["version"]) == (sid, next_version):
                    result.version = next_version
                    next_version += 1
                continue
            if next_version in slots:
                raise ConcurrencyError(sid, append.expected_version, max(slots))
            self.docs[env.event_id] = {**doc, "version": next_version}
            self.in_flight.add([env.event_id])
            slots[next_version] = env.event_id
            result.committed.append(self.codec.readable(env.model_copy(update={"version": next_version})))
            result.stored.append(self.docs[env.event_id])
            result.version = next_version
            next_version += 1
        return result

    async def append(self, stream_id: str, expected_version: int, events: Sequence[NewEvent]) -> AppendResult:
        append = Append(stream_id, expected_version, events)
        return self._commit(append, await self._encode(append))

    async def append_batch(self, appends: Sequence[Append]) -> list[AppendResult | ConcurrencyError]:
        encoded = [await self._encode(a) for a in appends]
        out: list[AppendResult | ConcurrencyError] = []
        for a, enc in zip(appends, encoded, strict=True):
            try:
                out.append(self._commit(a, enc))
            except ConcurrencyError as exc:
                out.append(exc)
        return out

    # --- reads ----------------------------------------------------------------------------------------
    async def _decode(self, event_ids: Sequence[str]) -> list[EventEnvelope]:
        return await self.codec.decode_all(self.docs[e] for e in event_ids)

    async def stream_version(self, stream_id: str) -> int:
        return max(self._streams.get(stream_id) or [0])

    async def stream_versions(self, stream_ids: Sequence[str]) -> dict[str, int]:
        return {s: await self.stream_version(s) for s in stream_ids}

    def _ordered_ids(self, stream_id: str) -> list[str]:
        slots = self._streams.get(stream_id, {})
        return [slots[v] for v in sorted(slots)]

    async def read_stream(
        self, stream_id: str, after_version: int = 0, limit: int | None = None
    ) -> list[EventEnvelope]:
        slots = self._streams.get(stream_id, {})
        ids = [slots[v] for v in sorted(slots) if v > after_version]
        return await self._decode(ids if limit is None else ids[:limit])

    async def read_stream_backwards(self, stream_id: str, limit: int) -> list[EventEnvelope]:
        return await self._decode(self._ordered_ids(stream_id)[::-1][:limit])

    async def get_events(self, event_ids: Sequence[str]) -> list[EventEnvelope]:
        return await self._decode([e for e in dict.fromkeys(event_ids) if e in self.docs])

    async def read_all(self, batch_size: int = 1000) -> AsyncIterator[EventEnvelope]:
        """Streams in id order, each in version order (the MongoDB adapter's order)."""
        for sid in sorted(self._streams):
            for env in await self.codec.decode_all(self.docs[eid] for eid in self._ordered_ids(sid)):
                yield env

    # --- outbox ---------------------------------------------------------------------------------------
    async def unpublished(self, min_age_s: float, limit: int, *, grace_s: float = 0.0) -> list[EventEnvelope]:
        """One writer only: with ``grace_s``, its own appends still in flight are left out (holding the
        watermark) for up to ``grace_s`` after they were recorded."""
        now = utcnow()
        cutoff = utc_ms(now - timedelta(seconds=min_age_s))
        recent = utc_ms(now - timedelta(seconds=grace_s))
        if grace_s > 0:
            self.in_flight.prune(grace_s)
        start = datetime(1970, 1, 1, tzinfo=UTC) if self.watermark is None else self.watermark - self.margin
        waiting: list[tuple[datetime, str, int, str]] = []  # oldest first, each stream in version order
        held: list[datetime] = []
        scanned = False  # anything recorded in the range (the MongoDB adapter's intents)
        for eid, d in self.docs.items():
            recorded = utc_ms(d["recorded_at"])
            scanned = scanned or start <= recorded <= cutoff
            if start <= recorded <= cutoff and eid not in self.published:
                if grace_s > 0 and recorded > recent and eid in self.in_flight:
                    held.append(recorded)
                else:
                    waiting.append((recorded, d["stream_id"], int(d["version"]), eid))
        waiting.sort()
        settled_until = min([*held, *(w[0] for w in waiting[:1])], default=cutoff)
        if scanned and (self.watermark is None or settled_until > self.watermark):  # an idle round moves nothing
            self.watermark = settled_until
        return await self._decode([w[-1] for w in waiting[:limit]])

    async def mark_published(self, event_ids: Sequence[str]) -> None:
        self.published.update(event_ids)
        self.in_flight.done(event_ids)

    async def publish_failed(self, event_ids: Sequence[str]) -> None:
        self.in_flight.done(event_ids)
