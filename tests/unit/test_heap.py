"""``start_heap_frozen``: the start's objects are out of the collector's way while the block runs, and back in
its care after it (a test process starts many services)."""

from __future__ import annotations

import gc

import pytest

from mnemo.shared.heap import start_heap_frozen


def test_the_heap_is_frozen_while_serving_and_unfrozen_after() -> None:
    with start_heap_frozen():
        assert gc.get_freeze_count() > 1000, "the start's objects are in the permanent generation"
        started_garbage: list[object] = []
        started_garbage.append(started_garbage)  # a cycle made while serving is collected as usual
        del started_garbage
        assert gc.collect() >= 1
    assert gc.get_freeze_count() == 0


def test_a_failing_block_unfreezes_too() -> None:
    with pytest.raises(RuntimeError), start_heap_frozen():
        raise RuntimeError("the service stopped")
    assert gc.get_freeze_count() == 0
