"""Bounded polling for tests against real servers (no timed assertions: only a limit on how long to wait)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any


async def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` (sync or async) until truthy; fail saying ``what`` never happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(0.05)
