"""The stream-order gate (mnemo/shared/delivery/order.py) on a fake ack floor and a fake stream."""

from __future__ import annotations

import asyncio

from mnemo.shared.delivery.order import OrderGate


class Stream:
    """The sequences holding a message of the consumer's filter (every one, unless ``held`` says which), and
    how often it was asked."""

    def __init__(self, held: set[int] | None = None, gaps: set[int] | None = None) -> None:
        self.held = held
        self.gaps = gaps or set()
        self.asked: list[int] = []

    async def __call__(self, seq: int) -> int | None:
        self.asked.append(seq)
        for s in range(seq, seq + 100_000):
            if s not in self.gaps and (self.held is None or s in self.held):
                return s
        return None


class Floor:
    def __init__(self, value: int = 0) -> None:
        self.value = value
        self.asked = 0

    async def __call__(self) -> int:
        self.asked += 1
        return self.value


async def test_consecutive_batches_pass_without_asking_the_server() -> None:
    floor, stream = Floor(), Stream()
    gate = OrderGate(floor, stream, wait_s=1)
    assert await gate.admit(range(1, 65)) == set(range(1, 65))
    assert await gate.admit(range(65, 129)) == set(range(65, 129))
    assert floor.asked == 0
    assert stream.asked == []


async def test_a_batch_after_a_gap_waits_until_the_gap_is_acked() -> None:
    floor = Floor(64)
    gate = OrderGate(floor, Stream(), wait_s=5, poll_s=0.01)
    waiting = asyncio.create_task(gate.admit(range(129, 193)))  # 65-128 are out (a dead replica's)
    await asyncio.sleep(0.05)
    assert not waiting.done()
    floor.value = 128
    assert await asyncio.wait_for(waiting, 2) == set(range(129, 193))


async def test_a_batch_with_nothing_to_begin_gives_up_after_wait_s() -> None:
    gate = OrderGate(Floor(0), Stream(), wait_s=0.05, poll_s=0.01)
    assert await gate.admit(range(50, 60)) == set()  # 1-49 are out: the caller hands it back


async def test_the_part_before_a_message_still_out_begins_at_once() -> None:
    floor = Floor(10)
    gate = OrderGate(floor, Stream(), wait_s=5, poll_s=0.01)
    # 11-14 redelivered together with 20-22 handed back earlier; 15-19 are still out.
    assert await asyncio.wait_for(gate.admit([11, 12, 13, 14, 20, 21, 22]), 1) == {11, 12, 13, 14}


async def test_what_this_replica_began_itself_does_not_block_it() -> None:
    floor = Floor(0)
    gate = OrderGate(floor, Stream(), wait_s=0.1, poll_s=0.01)
    assert await gate.admit([1, 2, 3]) == {1, 2, 3}  # begun here, not acked yet
    assert await gate.admit([5, 6]) == set()  # 4 is out and never acked
    floor.value = 1  # only 1 acked: 2 and 3 are still this replica's own, 4 is not
    assert await gate.admit([5, 6]) == set()
    floor.value = 4
    assert await gate.admit([5, 6]) == {5, 6}
    assert await gate.admit([8]) == set()  # 7 is out
    assert await gate.admit([7]) == {7}


async def test_an_abandoned_batch_blocks_later_ones_until_it_is_acked() -> None:
    floor = Floor(0)
    gate = OrderGate(floor, Stream(), wait_s=0.1, poll_s=0.01)
    assert await gate.admit(range(1, 11)) == set(range(1, 11))
    gate.abandon(range(1, 11))  # naked after all: later messages must wait for its redelivery
    assert await gate.admit(range(11, 21)) == set()
    assert await gate.admit(range(1, 11)) == set(range(1, 11))


async def test_messages_begun_anyway_let_what_follows_run_on() -> None:
    gate = OrderGate(Floor(0), Stream(), wait_s=0.05, poll_s=0.01)
    assert await gate.admit(range(50, 60)) == set()
    gate.begin_anyway(range(50, 60))  # no delivery left to hand them back with
    assert await gate.admit(range(60, 70)) == set(range(60, 70))


async def test_sequences_the_stream_does_not_hold_do_not_block() -> None:
    stream = Stream(gaps={4, 5})  # deleted, or lost by a server killed mid-write: nothing will deliver them
    gate = OrderGate(Floor(3), stream, wait_s=0.05, poll_s=0.01)
    assert await gate.admit([6, 7]) == {6, 7}
    assert stream.asked == [4]  # one look: the first message at or after 4 is 6
    assert await gate.admit([9]) == set()  # 8 exists and is out: it blocks
    assert await gate.admit([8]) == {8}


async def test_a_partition_skips_the_other_partitions_messages() -> None:
    # The partition's messages are every fourth sequence of the stream; the others belong to other partitions.
    mine = set(range(3, 400, 4))
    gate = OrderGate(Floor(0), Stream(held=mine), wait_s=0.05, poll_s=0.01)
    first = sorted(mine)[:10]
    assert await gate.admit(first) == set(first)
    assert await gate.admit(sorted(mine)[11:20]) == set()  # the 11th is still out (a dead holder's)
    assert await gate.admit(sorted(mine)[10:11]) == {sorted(mine)[10]}


async def test_first_deliveries_following_on_pass_without_asking_the_server() -> None:
    floor, stream = Floor(0), Stream(held=set(range(1, 1000, 3)))
    gate = OrderGate(floor, stream, wait_s=0.05, poll_s=0.01)
    assert await gate.admit([1, 4, 7], [(1, 1), (2, 1), (3, 1)]) == {1, 4, 7}  # the first batch looks
    asked = (floor.asked, len(stream.asked))
    assert await gate.admit([10, 13, 16], [(4, 1), (5, 1), (6, 1)]) == {10, 13, 16}
    assert (floor.asked, len(stream.asked)) == asked
    # Consumer sequence 7 went elsewhere (a pull of a replica that stopped): the gate looks again.
    assert await gate.admit([22], [(8, 1)]) == set()
    # A redelivery never takes the fast path either.
    assert await gate.admit([19, 22], [(9, 2), (10, 2)]) == {19, 22}


async def test_first_deliveries_following_on_wait_for_a_message_handed_back_before() -> None:
    # Issue 25 (make chaos): 1's completion failed (the database went down) and 1 was naked; 2 arrived, waited for
    # it and was handed back (naked for ack_wait); 1 came back and began alone. 3, a first delivery following on
    # from 1's redelivery, must still wait for 2: following on says nothing about what was handed back before.
    floor, stream = Floor(0), Stream()
    gate = OrderGate(floor, stream, wait_s=0.05, poll_s=0.01)
    assert await gate.admit([1], [(1, 1)]) == {1}
    gate.abandon([1])
    assert await gate.admit([2], [(2, 1)]) == set()  # 1 is out: the caller hands 2 back
    assert await gate.admit([1], [(3, 2)]) == {1}
    assert await gate.admit([3], [(4, 1)]) == set()  # 2 is out
    assert await gate.admit([2], [(5, 2)]) == {2}
    asked = (floor.asked, len(stream.asked))
    assert await gate.admit([3], [(6, 1)]) == {3}  # nothing handed back is out: the fast path again
    assert (floor.asked, len(stream.asked)) == asked


async def test_first_deliveries_following_on_wait_for_a_message_abandoned_before() -> None:
    # The same with a message handed back behind one that failed alone (BatchConsumer._hand_back): 1 failed
    # again, 2 was handed back after it; 1 came back and began alone, and 3 follows on from it.
    gate = OrderGate(Floor(0), Stream(), wait_s=0.05, poll_s=0.01)
    assert await gate.admit([1, 2], [(1, 1), (2, 1)]) == {1, 2}
    gate.abandon([1])
    gate.abandon([2])
    assert await gate.admit([1], [(3, 2)]) == {1}
    assert await gate.admit([3], [(4, 1)]) == set()  # 2 is out


async def test_a_message_handed_back_and_acked_elsewhere_no_longer_holds_the_fast_path() -> None:
    floor, stream = Floor(0), Stream()
    gate = OrderGate(floor, stream, wait_s=0.05, poll_s=0.01)
    assert await gate.admit([1], [(1, 1)]) == {1}
    assert await gate.admit([3], [(3, 1)]) == set()  # 2 is out (delivered to a pull that went away): 3 handed back
    floor.value = 3  # 2 and 3 acked meanwhile (dead-lettered, or a previous holder's)
    assert await gate.admit([4], [(4, 1)]) == {4}  # looks once, and forgets what the floor passed
    asked = (floor.asked, len(stream.asked))
    assert await gate.admit([5], [(5, 1)]) == {5}
    assert (floor.asked, len(stream.asked)) == asked
