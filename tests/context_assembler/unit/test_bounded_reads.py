"""A context read is bounded in the caller's task (``gather/bounded.py``), and past the deadline not started."""

from __future__ import annotations

import asyncio

import pytest

from mnemo.services.context_assembler.gather.bounded import within


async def test_the_read_runs_in_the_callers_task_and_returns_its_value() -> None:
    caller = asyncio.current_task()
    seen: list[asyncio.Task[object] | None] = []

    async def read() -> str:
        seen.append(asyncio.current_task())
        await asyncio.sleep(0)
        return "bot"

    assert await within(read(), 1.0) == "bot"
    assert seen == [caller]  # no task of its own (asyncio.wait_for makes one on Python 3.11)


async def test_a_read_that_never_answers_ends_at_its_time_and_is_cancelled() -> None:
    cancelled = asyncio.Event()

    async def stalled() -> str:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return "never"

    with pytest.raises(TimeoutError):
        await within(stalled(), 0.05)
    assert cancelled.is_set()
    assert not asyncio.current_task().cancelling()  # type: ignore[union-attr]  # the caller is not left cancelled


async def test_with_no_time_left_the_read_is_not_started() -> None:
    started: list[str] = []

    async def read() -> str:
        started.append("read")
        return "bot"

    coroutine = read()
    with pytest.raises(TimeoutError):
        await within(coroutine, 0.0)
    assert started == []
    assert coroutine.cr_frame is None  # closed: no "never awaited" warning either
    future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    with pytest.raises(TimeoutError):
        await within(future, -1.0)
    assert future.cancelled()
