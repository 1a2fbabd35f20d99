"""The summaries read model on SecantusDB: status follows summary.retired whatever the delivery order,
audience filtering, tenant scoping and encryption at rest."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import SummaryCreated, SummaryRetired, summary_stream
from mnemo.shared.readmodels.summaries import SummariesReadModel
from tests.envelopes import numbered

pytestmark = pytest.mark.integration
T0 = datetime(2026, 3, 1, tzinfo=UTC)


def created(tenant: str, sid: str, audience: list[str], first: int = 0) -> EventEnvelope:
    payload = SummaryCreated(
        summary_id=sid,
        user_id="u1",
        conversation_id="c1",
        summary_type="short_term",
        text=f"Secret text of {sid}.",
        importance=5,
        participants=audience,
        start_at=T0,
        end_at=T0 + timedelta(minutes=5),
        message_ids=["m1"],
        first_index=first,
        last_index=first + 4,
        method="llm:x",
        prompt_version="summarize.v1",
        emotional_context="Tense, then relieved.",
        audience=audience,
    )
    return envelope(tenant, f"c-{sid}", "summary.created", payload.model_dump(mode="json"))


def retired(tenant: str, sid: str, by: str | None) -> EventEnvelope:
    payload = SummaryRetired(
        summary_id=sid, user_id="u1", conversation_id="c1", reason="stale", replaced_by=by, retired_at=T0
    )
    return envelope(tenant, f"r-{sid}", "summary.retired", payload.model_dump(mode="json"))


def envelope(tenant: str, event_id: str, type_: str, payload: dict[str, Any]) -> EventEnvelope:
    return numbered(tenant, summary_stream(tenant, "u1", "c1"), 1, type_, payload, T0, event_id=event_id)


@pytest.fixture
def model(mongo_db: Any) -> SummariesReadModel:
    return SummariesReadModel(mongo_db, FieldCipher(os.urandom(32), InMemoryKeyStore()))


async def test_a_retirement_wins_over_a_creation_delivered_after_it(model, mongo_db):
    await model.apply([retired("t1", "s1", "s2")])
    assert await model.by_ids("t1", ["s1"]) == [], "a retirement stub is not a summary"
    assert await model.live_summaries("t1", "u1", "c1") == []
    await model.apply([created("t1", "s1", ["bard"]), created("t1", "s2", ["bard"], first=5)])
    await model.apply([created("t1", "s1", ["bard"])])  # redelivered again
    [s1] = await model.by_ids("t1", ["s1"])
    assert (s1.status, s1.replaced_by, s1.active) == ("stale", "s2", False)
    assert [v.summary_id for v in await model.live_summaries("t1", "u1", "c1")] == ["s2"]
    assert await model.inactive("t1", ["s1", "s2"]) == {"s1"}
    assert await model.inactive("t2", ["s1"]) == set(), "tenant scoped"


async def test_audience_filter_fields_and_encryption(model, mongo_db):
    await model.apply(
        [
            created("t1", "a", ["bard", "rook"]),
            created("t1", "b", ["bard"], first=5),
            created("t1", "c", ["*"], first=10),
            created("t2", "d", ["rook"]),
        ]
    )
    rook = await model.live_summaries("t1", "u1", "c1", audience_member="rook")
    assert [v.summary_id for v in rook] == ["a", "c"]
    assert all(v.visible_to("rook") for v in rook)
    [b] = await model.by_ids("t1", ["b"], user_id="u1", conversation_id="c1")
    assert not b.visible_to("rook")
    assert (b.audience, b.prompt_version, b.emotional_context) == (("bard",), "summarize.v1", "Tense, then relieved.")
    raw = await mongo_db["summaries"].find_one({"_id": "b"})
    assert raw["text"].startswith("enc1:")
    assert raw["emotional_context"].startswith("enc1:")
    assert [v.summary_id for v in await model.live_summaries("t2", "u1", "c1")] == ["d"]
