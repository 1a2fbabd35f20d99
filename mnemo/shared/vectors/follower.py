"""A replica's own Qdrant Edge shard, fed from the points stream (``MNEMO_VECTORS__MODE=stream``).

See ``mnemo/shared/vectors/stream.py`` for the stream. :class:`PointsFollower` owns a shard under ``root`` (the
process's ``data_dir / "points-replica"``) and an ordered consumer (ephemeral, no durable state on the
server) that applies the stream in order, in batches: consecutive upserts become one upsert, a deletion
or a tombstone is applied where it stands. After each batch the last applied stream sequence is written to
``root / "applied.json"`` (atomically), with the stream's creation time:

- a restart resumes after that sequence (re-applying a suffix already applied is harmless: the same
  writes in the same order leave the same points);
- a lost directory (no state file, or no shard) replays the stream from its start: a re-read, no
  re-embedding;
- a stream that is not the one followed (another creation time, or a last sequence below the applied one),
  found at start or after ``idle_check_s`` without messages, wipes the shard and replays.

A ``reset`` message (``mnemo replay``) wipes the shard (closed, deleted, created again) before what follows.

Read-your-writes (what :meth:`caught_up` gives the context-assembler): the writer publishes a batch's points
and awaits the PubAcks before the embedding service acks the log events, so a request that starts after
an event's embedding was acked finds its points at or below the stream's last sequence at that moment;
:meth:`caught_up` reads that sequence (one JetStream API call) and waits until this shard has applied it.
Process crash safety comes from the shard's WAL being written before the state file; the shard is not
flushed per batch, so after a power loss delete the directory to replay.

One follower per shard directory: Qdrant Edge locks it (two replicas on one machine need two data dirs).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import ConsumerConfig, DeliverPolicy

from mnemo.shared import subjects
from mnemo.shared.settings import StreamsSettings
from mnemo.shared.streams import ensure_points_stream
from mnemo.shared.tasks import stopped
from mnemo.shared.vectors.edge import SEARCH_THREADS, EdgeVectorIndex
from mnemo.shared.vectors.guarded import ForwardedReads, ForwardedWrites
from mnemo.shared.vectors.port import VectorIndex, VectorPoint
from mnemo.shared.vectors.stream import DELETE, RESET, TOMBSTONE, UPSERT, Op, StreamPointWriter, decode

log = logging.getLogger(__name__)

STATE_FILE = "applied.json"


class StreamReplaced(Exception):
    """The points stream followed was replaced by another of the same name (the shard was wiped)."""


class PointsFollower:
    """Keeps ``index`` (an Edge shard at ``root / collection``) in line with the points stream."""

    def __init__(
        self,
        nc: NatsClient,
        root: Path,
        collection: str,
        dimensions: int,
        *,
        streams: StreamsSettings | None = None,
        batch: int = 256,
        retry_s: float = 1.0,
        idle_check_s: float = 5.0,
        search_threads: int = SEARCH_THREADS,
    ) -> None:
        self._nc = nc
        self._js = nc.jetstream()
        self._root = Path(root)
        self._collection = collection
        self._dimensions = dimensions
        self._streams = streams
        self._batch = batch
        self._retry_s = retry_s
        self._idle_check_s = idle_check_s  # when idle this long, check the stream is still the one followed
        self.index = EdgeVectorIndex(self._root, collection, search_threads=search_threads)
        self._applied = 0
        self._stream_created: str | None = None
        self._changed = asyncio.Condition()
        self._task: asyncio.Task[None] | None = None
        self._next_lookup: asyncio.Future[int] | None = None  # the stream lookup the next callers share
        self._lookups: asyncio.Task[None] | None = None

    @property
    def applied(self) -> int:
        """The last stream sequence this shard has applied (0: none)."""
        return self._applied

    @property
    def shard_dir(self) -> Path:
        return self._root / self._collection

    async def start(self) -> None:
        """Open the shard, decide where to resume, and start following. Idempotent."""
        if self._task is not None:
            return
        await ensure_points_stream(self._js, self._streams)
        info = await self._js.stream_info(subjects.POINTS_STREAM)
        created = info.created.isoformat() if info.created is not None else None
        state = self._read_state() or {}
        had_shard = self.shard_dir.is_dir() and any(self.shard_dir.iterdir())
        await self.index.ensure_collection(self._dimensions)
        applied = int(state.get("applied", 0)) if had_shard else 0
        if applied and (state.get("stream_created") != created or applied > info.state.last_seq):
            log.warning("points stream %s is not the one %s followed: rebuilding", subjects.POINTS_STREAM, self._root)
            applied = 0
        if applied == 0 and had_shard:
            await self._wipe()
        self._applied = applied
        self._stream_created = created
        log.info("points follower %s starts after stream sequence %d", self._root, applied)
        self._task = asyncio.create_task(self._run(), name=f"points-follower:{self._root}")

    async def stop(self) -> None:
        """Stop following and close the shard."""
        for task in (self._task, self._lookups):
            await stopped(task)
        self._task = self._lookups = None
        await self.index.close()

    async def wait_for(self, seq: int, within_s: float) -> bool:
        """True once this shard has applied stream sequence ``seq``; False after ``within_s`` seconds."""
        if self._applied >= seq:
            return True
        try:
            async with self._changed:
                await asyncio.wait_for(self._changed.wait_for(lambda: self._applied >= seq), within_s)
        except TimeoutError:
            return False
        return True

    async def last_sequence(self) -> int:
        """The stream's last sequence, read by a JetStream API call issued after this call began.

        Concurrent callers share lookups (group commit): at most one is in flight, and the callers that arrive
        meanwhile share the next one, so a busy replica makes about one call per round trip, not per request."""
        lookup = self._next_lookup
        if lookup is None:
            lookup = self._next_lookup = asyncio.get_running_loop().create_future()
            if self._lookups is None or self._lookups.done():
                self._lookups = asyncio.create_task(self._look_up())
        return await asyncio.shield(lookup)

    async def _look_up(self) -> None:
        while (waiting := self._next_lookup) is not None:
            self._next_lookup = None
            try:
                info = await self._js.stream_info(subjects.POINTS_STREAM)
            except Exception as exc:
                waiting.set_exception(exc)
                waiting.exception()  # retrieved here: a caller that gave up must not make it "never retrieved"
            else:
                waiting.set_result(int(info.state.last_seq))

    async def caught_up(self, within_s: float) -> bool:
        """Read-your-writes: wait up to ``within_s`` for this shard to apply every write acked before the call."""
        return await self.wait_for(await self.last_sequence(), within_s)

    # --- following -------------------------------------------------------------------------------------------
    async def _run(self) -> None:
        failures, failed_at = 0, -1
        while True:
            try:
                await self._follow()
            except asyncio.CancelledError:
                raise
            except StreamReplaced:
                continue  # follow the new stream from its start
            except Exception:
                # The same message failing again waits longer each time (up to 30 s), so a message the shard
                # refuses does not flood the log; progress since the last failure starts over at retry_s.
                failures = failures + 1 if self._applied == failed_at else 0
                failed_at = self._applied
                log.exception("points follower %s failed; resuming after sequence %d", self._root, self._applied)
                await asyncio.sleep(min(self._retry_s * 2**failures, 30.0))

    async def _follow(self) -> None:
        config = ConsumerConfig(deliver_policy=DeliverPolicy.BY_START_SEQUENCE, opt_start_seq=self._applied + 1)
        sub = await self._js.subscribe(
            subjects.POINTS_ALL, stream=subjects.POINTS_STREAM, ordered_consumer=True, config=config
        )
        try:
            while True:
                try:
                    first = await sub.next_msg(timeout=self._idle_check_s)
                except NatsTimeoutError:
                    await self._check_stream()
                    continue
                msgs = [first]
                while sub.pending_msgs > 0 and len(msgs) < self._batch:
                    try:
                        msgs.append(await sub.next_msg(timeout=0.05))
                    except NatsTimeoutError:
                        break
                await self._apply(msgs)
        finally:
            with contextlib.suppress(Exception):
                await sub.unsubscribe()

    async def _check_stream(self) -> None:
        """A stream deleted and created again under the same name (its creation time changed, or it ends below
        what was applied): wipe the shard and follow it from its start (raises to resubscribe)."""
        info = await self._js.stream_info(subjects.POINTS_STREAM)
        created = info.created.isoformat() if info.created is not None else None
        if created == self._stream_created and info.state.last_seq >= self._applied:
            return
        log.warning("points stream %s was replaced under %s: rebuilding", subjects.POINTS_STREAM, self._root)
        await self._wipe()
        self._stream_created = created
        async with self._changed:
            self._applied = 0
        raise StreamReplaced(subjects.POINTS_STREAM)

    async def _apply(self, msgs: Sequence[Msg]) -> None:
        last = self._applied
        upserts: dict[str, VectorPoint] = {}
        tombstones: list[str] = []

        async def flush() -> None:
            if upserts:
                await self.index.upsert(list(upserts.values()))
                upserts.clear()
            if tombstones:
                await self.index.delete_ids(list(tombstones))
                tombstones.clear()

        for msg in msgs:
            seq = msg.metadata.sequence.stream
            if seq <= last:
                continue  # a redelivery of the ordered consumer's reset
            op: Op = decode(msg.data)
            if op.kind == UPSERT and op.point is not None:
                if tombstones:
                    await flush()
                upserts.pop(op.point.id, None)
                upserts[op.point.id] = op.point
            elif op.kind == TOMBSTONE and op.point_id is not None:
                if upserts:
                    await flush()
                tombstones.append(op.point_id)
            elif op.kind == DELETE and op.flt is not None:
                await flush()
                await self.index.delete(op.flt)
            elif op.kind == RESET:
                upserts.clear()
                tombstones.clear()
                await self._wipe()
            last = seq
        await flush()
        await self._advance(last)

    async def _advance(self, seq: int) -> None:
        if seq == self._applied:
            return
        await asyncio.to_thread(self._write_state, seq)
        async with self._changed:
            self._applied = seq
            self._changed.notify_all()

    async def _wipe(self) -> None:
        """An empty shard: closed, its directory deleted, created again."""
        await self.index.close()
        await asyncio.to_thread(shutil.rmtree, self.shard_dir, True)
        await asyncio.to_thread((self._root / STATE_FILE).unlink, True)
        await self.index.ensure_collection(self._dimensions)

    # --- the state file --------------------------------------------------------------------------------------
    def _read_state(self) -> dict[str, Any] | None:
        try:
            data = json.loads((self._root / STATE_FILE).read_text())
        except (FileNotFoundError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def _write_state(self, seq: int) -> None:
        self._root.mkdir(parents=True, exist_ok=True)
        tmp = self._root / (STATE_FILE + ".tmp")
        tmp.write_text(json.dumps({"applied": seq, "stream_created": self._stream_created}))
        os.replace(tmp, self._root / STATE_FILE)


class FollowedIndex(ForwardedReads, ForwardedWrites):
    """``VectorIndex`` of a stream-mode reader: writes go to the points stream (so every replica's shard gets
    them, this one included), reads come from this replica's shard as the follower has brought it so far.

    Reads do not wait: a reader that needs read-your-writes calls ``follower.caught_up`` first (the
    context-assembler does, per request, see ``Gatherer``)."""

    def __init__(self, writer: StreamPointWriter, follower: PointsFollower) -> None:
        self.points_writer = writer
        self.follower = follower

    async def writer(self) -> VectorIndex:
        return self.points_writer

    async def reader(self) -> VectorIndex:
        return self.follower.index

    async def ensure_collection(self, dimensions: int) -> None:
        await self.points_writer.ensure_collection(dimensions)
        await self.follower.start()

    async def close(self) -> None:
        await self.follower.stop()
        await self.points_writer.close()
