"""Periodic progress callbacks around a long await (JetStream ``in_progress`` heartbeats).

A JetStream consumer redelivers a message when it is neither acked nor touched within ``ack_wait``. An LLM
call with retries can outlast that, so ``heartbeat`` awaits ``on_progress`` every ``interval_s`` while the
body runs. A failing callback is logged and the beats go on: losing a heartbeat at worst causes a
redelivery, which handlers already tolerate, whereas aborting a nearly finished call wastes it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mnemo.shared.llm.port import ProgressCallback

log = logging.getLogger(__name__)


@asynccontextmanager
async def heartbeat(on_progress: ProgressCallback | None, interval_s: float) -> AsyncIterator[None]:
    """Run the body while awaiting ``on_progress`` every ``interval_s`` (first beat after one interval)."""
    if on_progress is None:
        yield
        return
    if interval_s <= 0:
        raise ValueError("interval_s must be positive")

    async def beat() -> None:
        while True:
            await asyncio.sleep(interval_s)
            try:
                await on_progress()
            except Exception:
                log.warning("progress callback failed; the call goes on", exc_info=True)

    task = asyncio.create_task(beat(), name="llm-heartbeat")
    try:
        yield
    finally:
        task.cancel()
        # gather (not suppress) so a cancellation of *this* task still propagates.
        await asyncio.gather(task, return_exceptions=True)
