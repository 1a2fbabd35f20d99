"""The progress callback handed to LLM calls touches every unsettled message of the batch."""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.services.memory_extractor.handlers import progress_of
from mnemo.shared.delivery import Item


@dataclass
class Msg:
    is_acked: bool
    touched: int = 0
    fail: bool = False

    async def in_progress(self) -> None:
        self.touched += 1
        if self.fail:
            raise ConnectionError("gone")


async def test_progress_touches_unsettled_messages_and_survives_failures():
    pending, settled, broken = Msg(False), Msg(True), Msg(False, fail=True)
    beat = progress_of([Item(None, m) for m in (broken, pending, settled)])  # type: ignore[arg-type]
    await beat()
    await beat()
    assert (pending.touched, settled.touched, broken.touched) == (2, 0, 2)
