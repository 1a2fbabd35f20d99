"""A read bounded in time, awaited in the caller's task (``Gatherer._read``'s timeout).

A timeout block, not ``asyncio.wait_for``: on Python 3.11 ``wait_for`` wraps what it bounds in a task of its
own, one more task created, scheduled and awaited per read (a dozen per context request), and a read answered
from a cache still waits a loop turn. ``asyncio.timeout`` cancels the caller's own await instead.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


async def within(aw: Awaitable[T], seconds: float) -> T:
    """``await aw``, or ``TimeoutError`` after ``seconds``; with no time left (``seconds <= 0``) ``aw`` is not even
    started (a coroutine is closed, a future cancelled), as ``wait_for(aw, 0)`` did."""
    if seconds <= 0:
        if inspect.iscoroutine(aw):
            aw.close()
        elif isinstance(aw, asyncio.Future):
            aw.cancel()
        raise TimeoutError("no time left for the read")
    async with asyncio.timeout(seconds):
        return await aw
