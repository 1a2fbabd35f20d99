"""A batch consumer's metrics (``mnemo.shared.metrics``), label children bound once per consumer: counting a
batch costs a few calls on them, nothing per message but a look at its (memoized) delivery count."""

from __future__ import annotations

import time
from collections.abc import Sequence

from nats.aio.msg import Msg

from mnemo.shared.metrics import BATCH_SECONDS, BATCH_SIZE, FAILED, HANDLED, HANDLER_SECONDS, REDELIVERED


class DeliveryMeter:
    def __init__(self, service: str) -> None:
        self._handled = HANDLED.labels(service=service)
        self._failed = FAILED.labels(service=service)
        self._redelivered = REDELIVERED.labels(service=service)
        self._handler_seconds = HANDLER_SECONDS.labels(service=service)
        self._batch_seconds = BATCH_SECONDS.labels(service=service)
        self._batch_size = BATCH_SIZE.labels(service=service)

    def received(self, msgs: Sequence[Msg]) -> float:
        """A fetched batch: its size and redeliveries counted; returns its start (``time.perf_counter``)."""
        self._batch_size.observe(len(msgs))
        again = sum(1 for m in msgs if m.metadata.num_delivered > 1)
        if again:
            self._redelivered.inc(again)
        return time.perf_counter()

    def handler(self, seconds: float) -> None:
        self._handler_seconds.observe(seconds)

    def handled(self, count: int) -> None:
        if count:
            self._handled.inc(count)

    def failed(self) -> None:
        self._failed.inc()

    def settled(self, started: float) -> None:
        """The batch's last message is settled (acked, naked or dead-lettered)."""
        self._batch_seconds.observe(time.perf_counter() - started)
