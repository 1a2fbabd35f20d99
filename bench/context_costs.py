"""What the measured context requests cost besides their wall time (``make bench-context``): CPU per request and
the garbage collector's pauses while they ran.

Why: the VM is shared, and a wall-time ratio moves with the other engineers' load (a p95 within 3x of its floor
at load 0.5 can be 10x at load 20). CPU per request moves much less, so an A/B of a change to the hot path can
be read from it when the machine is busy:

- ``loop_cpu_ms``: the event-loop thread's CPU (``time.thread_time``) per request: the services and the
  benchmark's own client run on it (parsing, gathering, assembling, serialising, NATS), so this is the Python
  work a request costs.
- ``process_cpu_ms``: the whole process's CPU (``time.process_time``) per request: the loop plus the worker
  threads (the query embedding's onnxruntime threads, the lore scans' thread pool). Not the children
  (nats-server, SecantusDB).
- ``gc``: per generation, the collections that ran during the requests, their total and longest pause in ms
  (``gc.callbacks``): a collection stops the loop, so a long one lands in p95/p99.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RequestCosts:
    """Filled by :func:`measured`; read once the block is left."""

    requests: int = 0
    loop_cpu_s: float = 0.0
    process_cpu_s: float = 0.0
    pauses: dict[int, list[float]] = field(default_factory=dict)  # generation -> pause ms

    def as_json(self) -> dict[str, Any]:
        n = max(self.requests, 1)
        return {
            "loop_cpu_ms": round(self.loop_cpu_s * 1000 / n, 2),
            "process_cpu_ms": round(self.process_cpu_s * 1000 / n, 2),
            "gc": {
                f"gen{g}": {"count": len(p), "total_ms": round(sum(p), 2), "max_ms": round(max(p), 2)}
                for g, p in sorted(self.pauses.items())
            },
        }

    def summary(self) -> str:
        data = self.as_json()
        pauses = ", ".join(
            f"{g}: {v['count']} x, {v['total_ms']} ms in all, longest {v['max_ms']} ms" for g, v in data["gc"].items()
        )
        return (
            f"CPU per request: event loop {data['loop_cpu_ms']} ms, whole process {data['process_cpu_ms']} ms;"
            f" garbage collections during the requests: {pauses or 'none'}"
        )


@contextmanager
def measured(requests: int) -> Iterator[RequestCosts]:
    """The CPU and the collections of the ``requests`` the block sends (run it on the event-loop thread)."""
    costs = RequestCosts(requests=requests)
    started: list[float] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            costs.pauses.setdefault(int(info["generation"]), []).append((time.perf_counter() - started.pop()) * 1000)

    gc.callbacks.append(on_gc)
    loop0, process0 = time.thread_time(), time.process_time()
    try:
        yield costs
    finally:
        costs.loop_cpu_s = time.thread_time() - loop0
        costs.process_cpu_s = time.process_time() - process0
        gc.callbacks.remove(on_gc)
