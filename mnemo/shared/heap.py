"""The start's heap kept out of the cyclic garbage collector's way while a service serves.

A service's start allocates most of what its process will ever hold: imported modules, the models' Python side,
compiled tables. Each full (generation 2) collection walks all of it, with the event loop stopped. In
``make bench-context`` (2026-11-28 21:20-21:37 UTC, all services in one process, 300 requests a run) one such
collection stopped a request for 123-168 ms, the run's longest request (150-197 ms); with the heap frozen once
the start is over, that collection took 11-16 ms and the longest request 34-63 ms (p95 unchanged: ten
interleaved pairs, docs/benchmarks.md). ``gc.freeze`` is the standard library's tool for this (it moves every
tracked object to a permanent generation the collector skips); reference counting still frees those objects
when they die.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def start_heap_frozen() -> Iterator[None]:
    """Collect once, freeze what is left while the block runs, unfreeze after it: a process that starts
    services again and again (the tests) does not keep every earlier start's objects out of the collector."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
