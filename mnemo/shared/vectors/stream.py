"""Stream mode (``MNEMO_VECTORS__MODE=stream``): the index's writes go to a JetStream stream, replicas follow it.

Without a Qdrant server the engine is in-process (one owner per shard directory). In stream mode the
embedding service owns no shard: :class:`StreamPointWriter` publishes each write of the ``VectorIndex`` port to
``MNEMO_POINTS``, and each context-assembler replica applies it to a shard of its own (``follower.py``).
The design, and why it is exact, in ``docs/vector-stream.md``. The stream keeps ONE message per subject:

- ``mnemo.points.point.<point id>``: the point's last upsert (vectors and payload) or its tombstone;
- ``mnemo.points.deletion.<hash>``: a deletion by filter of ONE source: a filter listing several values is
  split into one filter per combination (same points, deletions commute), hashed canonically, so deleting
  the same source again replaces the earlier message;
- ``mnemo.points.reset``: ``mnemo replay``'s marker (everything older is purged; followers wipe their shard).

A follower replaying the compacted stream ends with the points one index receiving every write would hold:
a point's last message subsumes its earlier ones, and a dropped deletion is repeated by a later identical
one. Deletions are never dropped for upserts. What grows: one message per point id ever written and one
per source ever deleted by filter; ``mnemo replay`` resets the stream.

The writer publishes a call's messages in order on one connection and awaits every PubAck before returning
(the embedding batch is acked after, so an acked event's points are in the stream); a failure raises
``VectorIndexUnavailable`` and the batch's writes are published again, in order, on redelivery. Each message
has a fresh ``Nats-Msg-Id``: dedupe drops a duplicate publish, never a later write of the same content.
Wire format: JSON, vectors as base64 of little-endian float32 (sparse indices uint32).
"""

from __future__ import annotations

import array
import asyncio
import base64
import hashlib
import itertools
import json
import sys
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext
from nats.js.api import PubAck

from mnemo.shared import subjects
from mnemo.shared.jetstream import jetstream
from mnemo.shared.settings import StreamsSettings
from mnemo.shared.streams import ensure_points_stream
from mnemo.shared.vectors.guarded import ForwardedReads
from mnemo.shared.vectors.port import (
    Match,
    PayloadValue,
    Range,
    SparseVector,
    VectorFilter,
    VectorIndex,
    VectorIndexUnavailable,
    VectorPoint,
)

#: Header naming a message's operation (also in the body).
OP_HEADER = "Mnemo-Op"
UPSERT = "upsert"
TOMBSTONE = "tombstone"
DELETE = "delete"
RESET = "reset"
#: A filter is split into at most this many single-source deletions; beyond, it is kept whole (still exact,
#: only not compacted with a later deletion of one of its sources).
MAX_SPLIT = 4096


@dataclass(frozen=True)
class Op:
    """One decoded message of the points stream."""

    kind: str  # UPSERT, TOMBSTONE, DELETE or RESET
    point: VectorPoint | None = None  # UPSERT
    point_id: str | None = None  # TOMBSTONE
    flt: VectorFilter | None = None  # DELETE


# --- wire codec ---------------------------------------------------------------------------------------------
def _pack(typecode: str, values: Sequence[float] | Sequence[int]) -> str:
    arr = array.array(typecode, values)
    if sys.byteorder != "little":
        arr.byteswap()
    return base64.b64encode(arr.tobytes()).decode()


def _unpack(typecode: str, text: str) -> array.array[Any]:
    arr = array.array(typecode)
    arr.frombytes(base64.b64decode(text))
    if sys.byteorder != "little":
        arr.byteswap()
    return arr


def filter_to_json(flt: VectorFilter) -> dict[str, Any]:
    def cond(c: Match | Range) -> dict[str, Any]:
        if isinstance(c, Range):
            return {"range": c.key, "gte": c.gte, "lte": c.lte}
        return {"match": c.key, "values": list(c.values)}

    must = sorted((cond(c) for c in flt.must), key=_canonical)
    must_not = sorted((cond(c) for c in flt.must_not), key=_canonical)
    return {"must": must, "must_not": must_not}


def filter_from_json(data: dict[str, Any]) -> VectorFilter:
    def cond(c: dict[str, Any]) -> Match | Range:
        if "range" in c:
            return Range(c["range"], c.get("gte"), c.get("lte"))
        return Match(c["match"], tuple(c["values"]))

    must_not = tuple(cond(c) for c in data.get("must_not", ()))
    if not all(isinstance(c, Match) for c in must_not):
        raise ValueError("must_not holds matches only")
    return VectorFilter(tuple(cond(c) for c in data.get("must", ())), must_not)  # type: ignore[arg-type]


def _canonical(data: object) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def deletion_key(flt: VectorFilter) -> str:
    """The hash naming a deletion's subject: equal filters (in any condition order) get the same key."""
    return hashlib.sha256(_canonical(filter_to_json(flt)).encode()).hexdigest()[:40]


def split_filter(flt: VectorFilter) -> list[VectorFilter]:
    """``flt`` as deletions of one value per ``must`` match (their union is ``flt``'s points); kept whole when
    the product is larger than :data:`MAX_SPLIT`."""
    choices: list[list[Match | Range]] = []
    size = 1
    for c in flt.must:
        if isinstance(c, Match) and len(c.values) > 1:
            values = list(dict.fromkeys(c.values))
            choices.append([Match(c.key, (v,)) for v in values])
            size *= len(values)
        else:
            choices.append([c])
    if size == 1 or size > MAX_SPLIT:
        return [flt]
    return [VectorFilter(tuple(combo), flt.must_not) for combo in itertools.product(*choices)]


def encode_upsert(p: VectorPoint) -> bytes:
    # array.array converts each number itself: a copy through float() first was a third of the encoding's
    # time (py-spy on the points stream's writer).
    body: dict[str, Any] = {"op": UPSERT, "id": p.id, "vector": _pack("f", p.vector)}
    body["payload"] = dict(p.payload)
    if p.sparse:
        body["sparse"] = {"indices": _pack("I", p.sparse.indices), "values": _pack("f", p.sparse.values)}
    return json.dumps(body, separators=(",", ":")).encode()


def decode(data: bytes) -> Op:
    body = json.loads(data)
    kind = body["op"]
    if kind == UPSERT:
        sparse = None
        if (s := body.get("sparse")) is not None:
            sparse = SparseVector(list(_unpack("I", s["indices"])), list(_unpack("f", s["values"])))
        payload: dict[str, PayloadValue] = body["payload"]
        return Op(UPSERT, point=VectorPoint(body["id"], list(_unpack("f", body["vector"])), payload, sparse))
    if kind == TOMBSTONE:
        return Op(TOMBSTONE, point_id=body["id"])
    if kind == DELETE:
        return Op(DELETE, flt=filter_from_json(body["filter"]))
    if kind == RESET:
        return Op(RESET)
    raise ValueError(f"unknown points stream operation {kind!r}")


# --- the writer ---------------------------------------------------------------------------------------------
class StreamPointWriter(ForwardedReads):
    """The write side of ``VectorIndex`` on the points stream; reads are refused (a follower's shard serves them).

    ``nc`` is shared with the process (the writer does not close it).
    """

    def __init__(
        self, nc: NatsClient, *, streams: StreamsSettings | None = None, publish_timeout_s: float = 10.0
    ) -> None:
        self._js: JetStreamContext = jetstream(nc)
        self._streams = streams
        self._timeout = publish_timeout_s
        self._lock = asyncio.Lock()  # one batch of publishes at a time keeps the stream in call order

    async def ensure_collection(self, dimensions: int) -> None:
        """Declare the points stream (idempotent); the collection itself belongs to each follower's shard."""
        try:
            await ensure_points_stream(self._js, self._streams)
        except Exception as exc:
            raise VectorIndexUnavailable(f"cannot declare {subjects.POINTS_STREAM}: {exc}") from exc

    async def upsert(self, points: Sequence[VectorPoint]) -> None:
        await self._publish([(subjects.point_subject(_canonical_id(p.id)), UPSERT, encode_upsert(p)) for p in points])

    async def delete(self, flt: VectorFilter) -> None:
        if not flt.must and not flt.must_not:
            raise ValueError("delete needs at least one condition")
        messages = []
        for part in split_filter(flt):
            body = _canonical({"op": DELETE, "filter": filter_to_json(part)}).encode()
            messages.append((subjects.points_deletion_subject(deletion_key(part)), DELETE, body))
        await self._publish(messages)

    async def delete_ids(self, ids: Sequence[str]) -> None:
        messages = []
        for raw in ids:
            point_id = _canonical_id(raw)
            body = _canonical({"op": TOMBSTONE, "id": point_id}).encode()
            messages.append((subjects.point_subject(point_id), TOMBSTONE, body))
        await self._publish(messages)

    async def reset(self) -> int:
        """Write the reset marker and purge every older message (``mnemo replay``); returns its sequence.

        Followers wipe their shard when they reach the marker, and one that was behind the purge starts at
        the marker (its next message), so every follower ends on what is published after it."""
        [marker] = await self._publish([(subjects.POINTS_RESET, RESET, _canonical({"op": RESET}).encode())])
        await self._js.purge_stream(subjects.POINTS_STREAM, seq=marker)  # everything below the marker
        return marker

    async def _publish(self, messages: Sequence[tuple[str, str, bytes]]) -> list[int]:
        """Publish in order, await every PubAck; the stream sequences of the messages."""
        if not messages:
            return []
        async with self._lock:
            acks: list[asyncio.Future[PubAck]] = []
            try:
                for subject, op, body in messages:
                    headers = {"Nats-Msg-Id": uuid.uuid4().hex, OP_HEADER: op}
                    acks.append(
                        await self._js.publish_async(
                            subject, body, wait_stall=self._timeout, stream=subjects.POINTS_STREAM, headers=headers
                        )
                    )
                done = await asyncio.wait_for(asyncio.gather(*acks), self._timeout)
            except Exception as exc:
                for ack in acks:  # nobody awaits them any more
                    ack.cancel()
                raise VectorIndexUnavailable(f"publishing to {subjects.POINTS_STREAM} failed: {exc!r}") from exc
        return [ack.seq for ack in done]

    async def reader(self) -> VectorIndex:
        raise VectorIndexUnavailable("the points stream writer has no read side: read a follower's shard")

    async def close(self) -> None:
        """Nothing of its own to release (the connection is the process's)."""


def _canonical_id(point_id: str) -> str:
    """Canonical UUID text (the subject's token); rejects non-UUID ids as the other adapters do."""
    return str(uuid.UUID(point_id))
