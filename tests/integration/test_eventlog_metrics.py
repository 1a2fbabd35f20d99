"""The event log's metrics on SecantusDB: appends that held, events written (duplicates not counted) and
optimistic-concurrency conflicts (``mnemo_eventlog_append_conflicts_total``), single and batched appends."""

from __future__ import annotations

from typing import Any

import pytest

from mnemo.shared.eventlog.mongo import MongoEventStore
from mnemo.shared.eventlog.port import Append, ConcurrencyError
from mnemo.shared.metrics import REGISTRY
from tests.contract.test_eventlog_contract import codec, message, stream

pytestmark = pytest.mark.integration


def counts() -> tuple[float, float, float]:
    return tuple(  # type: ignore[return-value]
        REGISTRY.get_sample_value(f"mnemo_eventlog_{name}_total") or 0.0
        for name in ("appends", "appended_events", "append_conflicts")
    )


def delta(before: tuple[float, float, float]) -> tuple[float, ...]:
    return tuple(now - then for now, then in zip(counts(), before, strict=True))


async def test_appends_events_and_conflicts_are_counted(mongo_db: Any) -> None:
    store = MongoEventStore(mongo_db, codec())
    await store.ensure_indexes()
    before = counts()
    first = message(0, conv="m1")
    await store.append(stream("m1"), 0, [first, message(1, conv="m1")])
    assert delta(before) == (1, 2, 0)
    with pytest.raises(ConcurrencyError):
        await store.append(stream("m1"), 0, [message(2, conv="m1")])  # someone else took version 1
    assert delta(before) == (1, 2, 1)
    results = await store.append_batch(
        [
            Append(stream("m2"), 0, [message(0, conv="m2")]),
            Append(stream("m1"), 1, [message(3, conv="m1")]),  # version 2 is taken: a conflict
            Append(stream("m1-again"), 0, []),
        ]
    )
    assert isinstance(results[1], ConcurrencyError)
    assert delta(before) == (3, 3, 2)
    await store.append(stream("m1"), 2, [message(1, conv="m1", event_id=first.event_id)])  # a duplicate
    assert delta(before) == (4, 3, 2)
