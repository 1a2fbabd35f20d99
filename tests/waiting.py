"""Bounded polling for tests against real servers (no timed assertions: only a limit on how long to wait)."""

from __future__ import annotations

import asyncio
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any


async def wait_until(condition: Callable[[], Any], what: str, timeout: float = 60.0, interval: float = 0.05) -> None:
    """Poll ``condition`` (sync or async) every ``interval`` seconds until truthy; fail saying ``what`` never
    happened."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for: {what}")
        await asyncio.sleep(interval)


async def wait_for_stack(condition: Callable[[], Any], what: str, timeout: float = 180.0) -> None:
    """``wait_until`` for end-to-end tests: the stack runs in another process and answers over NATS, so its
    work (the bundled model included) is polled twice a second for up to three minutes."""
    await wait_until(condition, what, timeout=timeout, interval=0.5)


async def request_reply(nc: Any, subject: str, data: bytes, timeout: float = 20.0, **kwargs: Any) -> Any:
    """``nc.request``, asked again while the server answers "no responders" (for up to ``timeout``).

    Right after a subscriber starts, a client that already published to the subject while no one listened
    (a previous broker of the same test) is now and then told "no responders" although the server has
    confirmed the new subscription (``mnemo.shared.broker.start_broker`` flushes): seen about once in ten restarts
    on a loaded machine, never with a fresh client. A platform retries the same way; a test must not flake.
    """
    from nats.errors import NoRespondersError

    deadline = time.monotonic() + timeout
    while True:
        try:
            return await nc.request(subject, data, timeout=timeout, **kwargs)
        except NoRespondersError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.05)


def http_get(url: str) -> tuple[int, str]:
    """The status and body of a GET (an error status too, with its body), as a probe or scraper reads it."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
