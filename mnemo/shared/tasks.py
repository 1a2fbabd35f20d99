"""Background tasks that end with what started them: cancelled, then waited for, so none outlives its owner."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import Any


async def stopped(task: asyncio.Task[Any] | None) -> None:
    """Cancel ``task`` (if any) and wait until it has ended; its cancellation is how it ends, not an error."""
    if task is None:
        return
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def retrieve_outcome(future: asyncio.Future[Any]) -> None:
    """A done-callback for a future that callers may stop awaiting (shielded, shared, or whose caller failed): it
    takes the future's exception, so an outcome nobody awaited is not logged as "never retrieved"."""
    if not future.cancelled():
        future.exception()


@contextlib.asynccontextmanager
async def in_background(work: Coroutine[Any, Any, object]) -> AsyncIterator[asyncio.Task[object]]:
    """``work`` runs as a task while the block runs, and is stopped when the block ends."""
    task = asyncio.create_task(work)
    try:
        yield task
    finally:
        await stopped(task)
