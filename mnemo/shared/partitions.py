"""Ingest partitions: how NATS maps keyed chat events onto them, and how far each one's durable has come.

The MNEMO_CHAT stream carries a subject transform (NATS's deterministic subject-token partitioning): an event on
``mnemo.chat.<entity>.<fact>.v2.<tenant>.<key>`` is stored as
``mnemo.ingest.<count>.<partition>.<entity>.<fact>.v2.<tenant>.<key>``, the partition being NATS's
``partition(count, tenant, key)``: FNV-1a (32 bits) of the two tokens joined, modulo ``count``
(:func:`partition_of` computes the same, checked against a real server by the tests). Every event of one
conversation therefore lands in one partition, in publish order, whoever published it.

The transform's ``count`` is the current *generation*. Changing it (``mnemo ingest-partitions --set N``) starts
a new generation of partition subjects and durables; ingest finishes the older generation's partitions before it
begins the new ones, so no conversation is ever recorded from two partitions at once (docs/scaling.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nats.js import JetStreamContext
from nats.js.api import ConsumerInfo, SubjectTransform
from nats.js.errors import NotFoundError

from mnemo.shared import subjects

_FNV_OFFSET, _FNV_PRIME = 0x811C9DC5, 0x01000193
_DURABLE = re.compile(r"^mnemo_ingest_p(\d+)_of_(\d+)$")
_DEST = re.compile(r"^mnemo\.ingest\.(\d+)\.")


def partition_of(tenant_token: str, key_token: str, count: int) -> int:
    """The partition NATS maps the keyed subject with these (escaped) tokens to."""
    h = _FNV_OFFSET
    for byte in (tenant_token + key_token).encode():
        h = ((h ^ byte) * _FNV_PRIME) & 0xFFFFFFFF
    return h % count


def transform(count: int) -> SubjectTransform:
    """The MNEMO_CHAT stream's subject transform for ``count`` partitions."""
    if count < 1:
        raise ValueError(f"partitions must be at least 1, not {count}")
    dest = (
        f"{subjects.INGEST_PARTITIONS_PREFIX}.{count}.{{{{partition({count},3,4)}}}}"
        ".{{wildcard(1)}}.{{wildcard(2)}}.v2.{{wildcard(3)}}.{{wildcard(4)}}"
    )
    return SubjectTransform(src=subjects.CHAT_KEYED, dest=dest)


def count_of(current: SubjectTransform | None) -> int | None:
    """The partition count of a stream's transform (None: the stream has none, or another one)."""
    if current is None or current.src != subjects.CHAT_KEYED or not current.dest:
        return None
    match = _DEST.match(current.dest)
    return int(match.group(1)) if match else None


def parse_durable(name: str) -> tuple[int, int] | None:
    """(count, partition) of a partition durable's name, None for any other consumer."""
    match = _DURABLE.match(name)
    return (int(match.group(2)), int(match.group(1))) if match else None


async def current_count(js: JetStreamContext) -> int | None:
    """The partition count MNEMO_CHAT maps keyed events into now (None: no stream, or no transform yet)."""
    try:
        config = (await js.stream_info(subjects.CHAT_STREAM)).config
    except NotFoundError:
        return None
    return count_of(config.subject_transform)


@dataclass(frozen=True)
class Progress:
    """One ingest durable's backlog."""

    durable: str
    pending: int  # stored, not delivered yet
    ack_pending: int  # delivered, not acknowledged yet
    ack_floor: int  # every message of its filter up to this stream sequence is acknowledged

    @property
    def backlog(self) -> int:
        return self.pending + self.ack_pending


def _progress(info: ConsumerInfo) -> Progress:
    floor = info.ack_floor.stream_seq if info.ack_floor and info.ack_floor.stream_seq else 0
    return Progress(info.name, info.num_pending or 0, info.num_ack_pending or 0, floor)


async def ingest_progress(js: JetStreamContext) -> list[Progress]:
    """Every ingest durable on MNEMO_CHAT (the v1 router's first, then the partitions by generation and number)."""
    infos = [i for i in await js.consumers_info(subjects.CHAT_STREAM) if i.name.startswith("mnemo_ingest_")]

    def order(info: ConsumerInfo) -> tuple[int, int, int]:
        parsed = parse_durable(info.name)
        return (0, 0, 0) if parsed is None else (1, *parsed)

    return [_progress(i) for i in sorted(infos, key=order)]


async def ingest_drained(js: JetStreamContext) -> bool:
    """Ingest has recorded everything MNEMO_CHAT holds: the v1 router's durable and every partition durable of
    the current generation exist and hold nothing unacknowledged. The router is read first: it acknowledges a v1
    event only once its keyed copy is stored, so that copy is then counted in its partition's backlog."""
    count = await current_count(js)
    if count is None:
        return False
    try:
        router = _progress(await js.consumer_info(subjects.CHAT_STREAM, subjects.INGEST_V1_DURABLE))
    except NotFoundError:
        return False
    if router.backlog:
        return False
    progress = await ingest_progress(js)
    names = {p.durable for p in progress}
    if any(subjects.partition_durable(count, k) not in names for k in range(count)):
        return False
    return all(p.backlog == 0 for p in progress)


async def set_count(js: JetStreamContext, count: int) -> int | None:
    """Map keyed events into ``count`` partitions from now on (the MNEMO_CHAT stream's transform); the count it
    replaces. What the older partitions hold is recorded first: ingest begins the new partitions once every older
    one is drained (its durables deleted), so no conversation is ever recorded from two partitions."""
    config = (await js.stream_info(subjects.CHAT_STREAM)).config
    before = count_of(config.subject_transform)
    if before != count:
        await js.update_stream(config.evolve(subject_transform=transform(count)))
    return before


@dataclass(frozen=True)
class Generation:
    """The partitions of one count still on the stream: their durables and what those hold."""

    count: int
    current: bool
    durables: list[Progress]

    @property
    def backlog(self) -> int:
        return sum(p.backlog for p in self.durables)


async def generations(js: JetStreamContext) -> list[Generation]:
    """The current partition count's generation and every older one whose durables remain, oldest first."""
    current = await current_count(js)
    by_count: dict[int, list[Progress]] = {}
    for progress in await ingest_progress(js):
        parsed = parse_durable(progress.durable)
        if parsed is not None:
            by_count.setdefault(parsed[0], []).append(progress)
    if current is not None:
        by_count.setdefault(current, [])
    return [Generation(c, c == current, by_count[c]) for c in sorted(by_count, key=lambda c: (c == current, c))]
