"""Message statuses read before their round decides (``mnemo/services/ingest/statuses.py``).

A status read holds what the read model held when it was issued; what this process appended is in the recorder's
cache until a projection covers it. A projection that lands between the read and the decision covers entries
the read did not see: these tests let one land exactly there and check that the decision still knows the
message (an edit of it is recorded, not refused as unknown), for a read begun ahead of its round and for the
round's own read. The in-memory read model stands in for the database (its adapter is checked against MongoDB
by ``tests/contract/test_readmodels_contract.py``); where a read must wait, the test holds it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable

from mnemo.services.ingest.domain import InboundCommand
from mnemo.services.ingest.handlers import decode_command
from mnemo.services.ingest.recorder import Recorder
from mnemo.services.ingest.statuses import MAX_OPEN
from mnemo.shared.readmodels import MessageKey
from mnemo.shared.readmodels.inmemory import InMemoryReadModels
from mnemo.shared.readmodels.messages import MessageStatus
from tests.components import deps
from tests.ingest.component.test_ingest import STREAM, created, edited


class HeldReads(InMemoryReadModels):
    """Read models whose status reads, once ``hold`` is set, read at once but answer only when ``release`` is."""

    def __init__(self) -> None:
        super().__init__()
        self.hold = False
        self.read = asyncio.Event()
        self.release = asyncio.Event()
        self.status_reads = 0

    async def message_status(
        self, keys: Iterable[MessageKey], *, scene: bool = False
    ) -> dict[MessageKey, MessageStatus]:
        self.status_reads += 1
        found = await super().message_status(keys, scene=scene)
        if self.hold:
            self.read.set()
            await self.release.wait()
        return found


def commands(*wire: tuple[str, dict]) -> list[InboundCommand]:
    return [decode_command(subject, json.dumps(body, default=str).encode()) for subject, body in wire]


def recorder() -> tuple[Recorder, HeldReads]:
    d = deps()
    models = HeldReads()
    return Recorder(d.store, models, d.saver), models


async def test_a_read_begun_ahead_knows_a_message_projected_after_it_was_issued() -> None:
    rec, _ = recorder()
    assert await rec.record(commands(created(0))) == [None]  # the conversation's state is now cached
    ahead = rec.prefetch(commands(edited("m1", "new words")))
    assert ahead is not None
    await ahead.task  # read while m1 is not even appended
    finish = await rec.begin(commands(created(1)))
    assert await finish() == [None]  # m1 projected: the cache forgets it, the read never saw it

    reasons = await (await rec.begin(commands(edited("m1", "new words")), prefetched=[ahead]))()

    assert reasons == [None], "the edit was refused: its message was in neither the read nor the cache"
    assert [e.type for e in await rec._store.read_stream(STREAM)][-1] == "message.edited"


async def test_a_rounds_own_read_knows_a_message_projected_while_it_was_read() -> None:
    rec, models = recorder()
    assert await rec.record(commands(created(0))) == [None]
    finish = await rec.begin(commands(created(1)))  # m1 appended, not yet projected: the cache holds it
    models.hold = True
    edit = asyncio.create_task(rec.begin(commands(edited("m1", "new words"))))
    await models.read.wait()  # the edit's round has read the statuses (no m1) and waits for the answer
    models.hold = False
    assert await finish() == [None]  # meanwhile m1 is projected and leaves the cache
    models.release.set()

    assert await (await edit)() == [None], "the edit was refused: m1 was in neither the read nor the cache"


async def test_a_read_begun_before_the_cache_was_dropped_is_read_again() -> None:
    rec, models = recorder()
    assert await rec.record(commands(created(0))) == [None]
    ahead = rec.prefetch(commands(created(1)))
    assert ahead is not None
    await ahead.task
    rec.forget()  # the partitions changed hands: another replica may have recorded m1 meanwhile
    before = models.status_reads

    assert await (await rec.begin(commands(created(1)), prefetched=[ahead]))() == [None]

    assert models.status_reads == before + 1, "the statuses read before the cache was dropped were used"


async def test_a_read_begun_ahead_stands_for_the_rounds_own() -> None:
    rec, models = recorder()
    assert await rec.record(commands(created(0))) == [None]
    ahead = rec.prefetch(commands(created(1), created(2)))
    assert ahead is not None
    await ahead.task
    before = models.status_reads

    assert await (await rec.begin(commands(created(1), created(2)), prefetched=[ahead]))() == [None, None]

    assert models.status_reads == before, "the round read the statuses again"


async def test_a_read_left_open_too_long_is_read_again() -> None:
    rec, models = recorder()
    assert await rec.record(commands(created(0))) == [None]
    oldest = rec.prefetch(commands(created(1)))
    assert oldest is not None
    for _ in range(MAX_OPEN):  # batches whose rounds never came (their consumers stopped)
        rec.prefetch(commands(created(2)))
    await asyncio.sleep(0.01)
    before = models.status_reads

    assert await (await rec.begin(commands(created(1)), prefetched=[oldest]))() == [None]

    assert models.status_reads == before + 1, "a read no projection hands its drops to any more was used"
