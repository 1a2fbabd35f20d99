"""The event log's outbox on MongoDB: intents, receipts, the watermark, and who is still publishing what.

Insert-only (on SecantusDB an update or delete costs ~0.35 ms *per document*, an insert of 256 documents
~8 ms): ``relay_intents`` written before the events (``intend``), ``relay_receipts`` (``mark_published``) and
one ``relay_state`` watermark, read by ``unpublished``. Intents and receipts expire after :data:`OUTBOX_TTL`
(a TTL index), so the watermark must not lag that long (it lags only while a publish keeps failing).

**Still publishing.** Every process runs the relay's recovery loop over the whole outbox. Under load an
appender's own fast path (append, project, publish, receipt) can take longer than the loop's ``min_age_s``:
every recovery loop then published the same events again beside it (deduplicated by JetStream, but each
encrypted, sent and stored once more: 42 % of a loaded ingest replica's CPU in py-spy, 2026-11-27, once per
replica with several). So a recovery round (``grace_s`` > 0) leaves out, for up to ``grace_s`` after their
intent, events this process's own fast path still has in flight (:class:`InFlight`), and events whose writer's
relay loop is alive (its heartbeat in ``relay_state`` younger than twice ``min_age_s``: the loop beats at
least every half ``min_age_s``): that writer publishes them itself, or recovers them itself if its publish
fails. A writer that died stops beating, and its events are recovered as before. Events left out still hold
the watermark, so nothing is skipped for good.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from pymongo import ASCENDING, IndexModel, WriteConcern
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared.eventlog.codec import EventCodec, StoredDoc, utc_ms
from mnemo.shared.events.envelope import EventEnvelope, utcnow

OUTBOX_TTL = timedelta(days=2)  # intents and receipts; the watermark must never lag longer than this
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_WATERMARK = "watermark"
_IDS_PER_DOC = 10_000  # event ids per intent or receipt document (keeps documents far below 16 MB)
_WRITER = "writer:"  # the ``relay_state`` heartbeat of one writer: ``writer:<id>``, its time in ``beat``
_BEAT_TTL = timedelta(days=1)  # a dead writer's heartbeat (the watermark has no ``beat``: the TTL spares it)


class InFlight:
    """Event ids this process is appending and whose fast-path publish has not been attempted yet (in memory):
    added with the intent, before the insert; an append keeps only what it committed (``MongoEventStore``)."""

    def __init__(self) -> None:
        self._since: dict[str, float] = {}  # event id -> monotonic time of its intent

    def add(self, event_ids: Sequence[str]) -> None:
        now = time.monotonic()
        for eid in event_ids:
            self._since.setdefault(eid, now)

    def done(self, event_ids: Sequence[str]) -> None:
        """Published, or the publish failed (the recovery loop may take those at once)."""
        for eid in event_ids:
            self._since.pop(eid, None)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self._since

    def prune(self, older_than_s: float) -> None:
        """Forget ids whose fast path never came and that nobody reported. A safety net: a failed append, a
        lost race, a duplicate and a failed projection or publish each release their ids at once."""
        limit = time.monotonic() - older_than_s
        for eid in [e for e, t in self._since.items() if t < limit]:
            del self._since[eid]


class MongoOutbox:
    def __init__(self, db: AsyncDatabase[Any], concern: WriteConcern, margin: timedelta) -> None:
        self.intents: AsyncCollection[Any] = db.get_collection("relay_intents", write_concern=concern)
        self.receipts: AsyncCollection[Any] = db.get_collection("relay_receipts", write_concern=concern)
        self.relay_state: AsyncCollection[Any] = db.get_collection("relay_state", write_concern=concern)
        self.margin = margin
        self.writer = uuid.uuid4().hex  # this store instance (process), named in its intents
        self.in_flight = InFlight()
        self._intended_at = float("-inf")  # monotonic time of this writer's last intent
        # The watermark as this store last read or raised it (None: not read yet). Read from the database once:
        # another process only ever raises it (``$max``), so this value is at most the stored one and a round
        # from it scans a superset of what a fresh read would scan.
        self._watermark: datetime | None = None
        self._watermark_read = False

    async def ensure_indexes(self) -> None:
        ttl = int(OUTBOX_TTL.total_seconds())
        for outbox in (self.intents, self.receipts):
            await outbox.create_indexes([IndexModel([("at", ASCENDING)], name="at_ttl", expireAfterSeconds=ttl)])
        await self.relay_state.create_indexes(
            [IndexModel([("beat", ASCENDING)], name="beat_ttl", expireAfterSeconds=int(_BEAT_TTL.total_seconds()))]
        )

    async def intend(self, event_ids: list[str], at: datetime) -> None:
        self.in_flight.add(event_ids)
        self._intended_at = time.monotonic()
        await _insert_id_lists(self.intents, event_ids, at, self.writer)

    async def mark_published(self, event_ids: Sequence[str]) -> None:
        """One receipt document (an insert, never an update); unknown ids are harmless."""
        ids = list(dict.fromkeys(event_ids))
        self.in_flight.done(ids)
        if ids:
            await _insert_id_lists(self.receipts, ids, utc_ms(utcnow()))

    async def unpublished(
        self, events: AsyncCollection[Any], codec: EventCodec, min_age_s: float, limit: int, grace_s: float = 0.0
    ) -> list[EventEnvelope]:
        """Intents in ``[watermark - margin, now - min_age_s]`` minus the receipts since ``watermark - margin``
        (and, with ``grace_s``, minus those still being published: see the module); those ids are looked up in
        the log (usually none). Committed ones are returned oldest first; ids never committed (a conflict, a crash
        before the insert) are settled. When the range held intents, the watermark (only raised, with ``$max``)
        then rises to ``now - min_age_s``, or to the intent of the oldest event still missing or still being
        published; an idle round (no intent in the range) costs one read of the intents and writes nothing. The
        watermark is read from the database at the first round only (see ``__init__``). Intents rather than a
        range scan of events on ``recorded_at``: a document read costs ~40 us on SecantusDB, so re-reading seconds
        of events every round would cost about what the updates it replaces did; an intent covers a batch."""
        now = utcnow()
        cutoff = utc_ms(now - timedelta(seconds=min_age_s))
        if grace_s > 0:
            if time.monotonic() - self._intended_at < grace_s:  # others ask only about this writer's young intents
                await self.relay_state.update_one(
                    {"_id": _WRITER + self.writer}, {"$set": {"beat": utc_ms(now)}}, upsert=True
                )
            self.in_flight.prune(grace_s)
        watermark = await self._read_watermark()
        start = _EPOCH if watermark is None else watermark - self.margin
        intended: dict[str, datetime] = {}  # event id -> its intent's at, oldest first
        writer: dict[str, str | None] = {}  # event id -> the store instance that intended it
        scanned = 0  # intent documents in the range
        cursor = self.intents.find({"at": {"$gte": start, "$lte": cutoff}}, {"event_ids": 1, "at": 1, "by": 1})
        async for doc in cursor.sort([("at", ASCENDING)]):
            scanned += 1
            at = utc_ms(doc["at"])
            for eid in doc["event_ids"]:
                if eid not in intended:
                    intended[eid], writer[eid] = at, doc.get("by")
        if intended:
            async for doc in self.receipts.find({"at": {"$gte": start}}, {"event_ids": 1}):
                for eid in doc["event_ids"]:
                    intended.pop(eid, None)
        held = await self._still_publishing(intended, writer, now, min_age_s, grace_s) if grace_s > 0 else set()
        missing = [eid for eid in intended if eid not in held]
        found: list[StoredDoc] = []
        step = max(limit, 256)
        for i in range(0, len(missing), step):  # intent order: stop once the oldest ``limit`` are in hand
            found += [d async for d in events.find({"_id": {"$in": missing[i : i + step]}})]
            if len(found) >= limit:
                break
        found.sort(key=lambda d: (intended[d["_id"]], utc_ms(d["recorded_at"]), d["stream_id"], d["version"]))
        settled_until = min([intended[e] for e in held] + [intended[d["_id"]] for d in found], default=cutoff)
        # Raised only past intents it scanned: a range that held none is as cheap to scan again next round (the
        # ``at`` index) as a raised one, so an idle round costs one read instead of three round trips (in every
        # process, every 2.5 s), and an intent that turns up late is still within reach.
        if scanned and (watermark is None or settled_until > watermark):
            await self.relay_state.update_one({"_id": _WATERMARK}, {"$max": {"at": settled_until}}, upsert=True)
            self._watermark = settled_until
        return await codec.decode_all(found[:limit])

    async def _read_watermark(self) -> datetime | None:
        """The watermark this round scans from: the stored one at the first round, then this store's own."""
        if not self._watermark_read:
            state = await self.relay_state.find_one({"_id": _WATERMARK})
            stored = utc_ms(state["at"]) if state else None
            if stored is not None and (self._watermark is None or stored > self._watermark):
                self._watermark = stored
            self._watermark_read = True
        return self._watermark

    async def _still_publishing(
        self,
        intended: dict[str, datetime],
        writer: dict[str, str | None],
        now: datetime,
        min_age_s: float,
        grace_s: float,
    ) -> set[str]:
        """The intended ids, less than ``grace_s`` old, that this process's fast path still has in flight or
        whose writer's relay loop beat less than twice ``min_age_s`` ago."""
        recent = utc_ms(now - timedelta(seconds=grace_s))
        young = [eid for eid, at in intended.items() if at > recent]
        own = {eid for eid in young if eid in self.in_flight}
        others = {w for eid in young if (w := writer.get(eid)) is not None and w != self.writer}
        live: set[str] = set()
        if others:
            beat_since = utc_ms(now - timedelta(seconds=2 * min_age_s))
            query = {"_id": {"$in": [_WRITER + w for w in sorted(others)]}, "beat": {"$gte": beat_since}}
            live = {doc["_id"].removeprefix(_WRITER) async for doc in self.relay_state.find(query, {"_id": 1})}
        return own | {eid for eid in young if writer.get(eid) in live}


async def _insert_id_lists(
    collection: AsyncCollection[Any], ids: list[str], at: datetime, writer: str | None = None
) -> None:
    extra = {"by": writer} if writer is not None else {}
    docs = [
        {"_id": uuid.uuid4().hex, "event_ids": ids[i : i + _IDS_PER_DOC], "at": at, **extra}
        for i in range(0, len(ids), _IDS_PER_DOC)
    ]
    if len(docs) == 1:
        await collection.insert_one(docs[0])
    else:
        await collection.insert_many(docs)
