"""The stream-order gate (shared/delivery/order.py) on a fake ack floor."""

from __future__ import annotations

import asyncio

from shared.delivery.order import OrderGate


class Floor:
    def __init__(self, value: int = 0) -> None:
        self.value = value
        self.asked = 0

    async def __call__(self) -> int:
        self.asked += 1
        return self.value


async def test_consecutive_batches_pass_without_asking_the_server() -> None:
    floor = Floor()
    gate = OrderGate(floor, wait_s=1)
    assert await gate.admit(range(1, 65))
    assert await gate.admit(range(65, 129))
    assert floor.asked == 0


async def test_a_batch_after_a_gap_waits_until_the_gap_is_acked() -> None:
    floor = Floor(64)
    gate = OrderGate(floor, wait_s=5, poll_s=0.01)
    waiting = asyncio.create_task(gate.admit(range(129, 193)))  # 65-128 are held by another replica
    await asyncio.sleep(0.05)
    assert not waiting.done()
    floor.value = 128
    assert await asyncio.wait_for(waiting, 2)


async def test_what_this_replica_began_itself_does_not_block_it() -> None:
    floor = Floor(0)
    gate = OrderGate(floor, wait_s=0.1, poll_s=0.01)
    assert await gate.admit([1, 2, 3])  # begun here, not acked yet
    assert await gate.admit([5, 6]) is False  # 4 is held elsewhere and never acked
    floor.value = 4 - 3  # only 1 acked: 2 and 3 are still this replica's own, 4 is not
    assert await gate.admit([5, 6]) is False
    floor.value = 4
    assert await gate.admit([5, 6])
    assert await gate.admit([8]) is False  # 7 belongs to someone else
    assert await gate.admit([7])


async def test_an_abandoned_batch_blocks_later_ones_until_it_is_acked() -> None:
    floor = Floor(0)
    gate = OrderGate(floor, wait_s=0.1, poll_s=0.01)
    assert await gate.admit(range(1, 11))
    gate.abandon(range(1, 11))  # naked after all: later messages must wait for its redelivery
    assert await gate.admit(range(11, 21)) is False
    assert await gate.admit(range(1, 11))


async def test_a_batch_handed_back_once_begins_the_second_time_it_waits_in_vain() -> None:
    gate = OrderGate(Floor(0), wait_s=0.05, poll_s=0.01)
    assert await gate.admit(range(50, 60)) is False
    assert gate.hand_back(range(50, 60))  # first time: nak it, the earlier ones may come first
    assert await gate.admit(range(50, 60)) is False
    assert not gate.hand_back(range(50, 60))  # second time: begin it anyway
    assert await gate.admit(range(60, 70))  # and what follows it runs on from there
