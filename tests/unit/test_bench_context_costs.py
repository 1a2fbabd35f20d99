"""The CPU and garbage-collection accounting of ``make bench-context`` (bench/context_costs.py): it must count
the work done inside the block, per request, and every collection that ran there, and leave nothing behind."""

from __future__ import annotations

import gc
import time

from bench.context_costs import measured


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def test_cpu_is_counted_per_request() -> None:
    with measured(requests=4) as costs:
        _busy(0.08)
    data = costs.as_json()
    # No bound on the amount (a loaded machine gives a busy loop less CPU): it is counted, divided per request,
    # and the process's CPU includes this thread's.
    assert costs.loop_cpu_s > 0
    assert data["loop_cpu_ms"] == round(costs.loop_cpu_s * 1000 / 4, 2)
    assert costs.process_cpu_s >= costs.loop_cpu_s * 0.99


def test_collections_in_the_block_are_recorded_by_generation_and_the_hook_removed() -> None:
    hooks = list(gc.callbacks)
    with measured(requests=1) as costs:
        gc.collect(0)
        gc.collect(2)
    assert gc.callbacks == hooks
    data = costs.as_json()["gc"]
    assert data["gen0"]["count"] >= 1
    assert data["gen2"]["count"] >= 1
    assert data["gen2"]["max_ms"] <= data["gen2"]["total_ms"]
    gc.collect(2)  # after the block: not counted
    assert costs.as_json()["gc"]["gen2"]["count"] == data["gen2"]["count"]


def test_summary_names_no_collection_when_none_ran() -> None:
    with measured(requests=2) as costs:
        pass
    costs.pauses.clear()  # a collection triggered by another test's garbage is not this test's subject
    assert "none" in costs.summary()
    assert costs.as_json()["gc"] == {}
