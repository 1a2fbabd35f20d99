"""A service process tries its start again while NATS, JetStream or MongoDB do not answer yet, for a while.

On CI a fourth ingest replica started beside three others met a 5 s JetStream API timeout in its start and
exited (bench-scale, 2026-11-27); ``start_with_retries`` is what keeps such a replica alive.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import nats.errors
import pytest

from mnemo.shared import bootstrap
from mnemo.shared.probes import Probes
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import VectorIndexUnavailable


class FlakyStart:
    """Stands in for ``bootstrap.running``: its first ``failures`` starts raise ``error``."""

    def __init__(self, failures: int, error: BaseException) -> None:
        self.failures, self.error = failures, error
        self.tries = 0
        self.entered = 0

    @contextlib.asynccontextmanager
    async def __call__(self, *_: Any) -> AsyncIterator[str]:
        self.tries += 1
        if self.tries <= self.failures:
            raise self.error
        self.entered += 1
        yield "running"


SERVICE = SimpleNamespace(name="ingest")


async def no_sleep(_: float) -> None:
    return None


async def start(
    monkeypatch: pytest.MonkeyPatch, flaky: FlakyStart, timeout_s: float = 60.0, clock: Any = lambda: 0.0
) -> object:
    monkeypatch.setattr(bootstrap, "running", flaky)
    settings = Settings(start_timeout_seconds=timeout_s)
    async with contextlib.AsyncExitStack() as stack:
        return await bootstrap.start_with_retries(
            stack,
            SERVICE,  # type: ignore[arg-type]
            settings,
            Probes(),
            clock=clock,
            sleep=no_sleep,
        )


async def test_a_jetstream_timeout_at_start_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = FlakyStart(failures=2, error=nats.errors.TimeoutError())
    assert await start(monkeypatch, flaky) == "running"
    assert (flaky.tries, flaky.entered) == (3, 1)


async def test_a_timeout_an_adapter_wrapped_in_its_own_error_is_tried_again(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        raise nats.errors.TimeoutError()
    except nats.errors.TimeoutError as timeout:
        try:
            raise VectorIndexUnavailable("cannot declare MNEMO_POINTS: nats: timeout") from timeout
        except VectorIndexUnavailable as wrapped:
            error = wrapped
    flaky = FlakyStart(failures=2, error=error)
    assert await start(monkeypatch, flaky) == "running"
    assert (flaky.tries, flaky.entered) == (3, 1)


async def test_an_error_that_does_not_heal_stops_the_start_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = FlakyStart(failures=5, error=ValueError("a bad setting"))
    with pytest.raises(ValueError, match="a bad setting"):
        await start(monkeypatch, flaky)
    assert flaky.tries == 1


async def test_the_start_gives_up_after_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    flaky = FlakyStart(failures=1_000, error=nats.errors.NoRespondersError())
    clock = iter(range(0, 10_000, 5))  # every look at the clock: 5 s later
    with pytest.raises(nats.errors.NoRespondersError):
        await start(monkeypatch, flaky, timeout_s=30.0, clock=lambda: float(next(clock)))
    assert 1 < flaky.tries < 10
