"""`mnemo replay` rebuilds the facts' points from the log: current facts indexed with their latest scope,
retired and folded facts not at all."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.runtime.replay import replay
from mnemo.shared.bootstrap import open_core
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import (
    FactLearned,
    FactPromoted,
    FactRetired,
    FactsConsolidated,
    RecordedPayload,
    knowledge_stream,
    new_event,
    player_scope,
)
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import Match, VectorFilter

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)
FACTS = VectorFilter.where(tenant_id="t-facts", kind="fact")


def fact(fid: str, text: str) -> FactLearned:
    return FactLearned(
        fact_id=fid, character_id="bard", character_kind="bot", user_id="u1", conversation_id="c1", text=text,
        subject=f"s:{fid}", fact_type="semantic", confidence=0.9, learned_at=T0, scope=player_scope("u1"),
        message_ids=[f"m-{fid}"], method="pattern",
    )  # fmt: skip


def event(payload: RecordedPayload) -> NewEvent:
    return new_event(payload, tenant_id="t-facts")


async def test_replay_rebuilds_the_current_facts_points(core_settings: Settings) -> None:
    retired = FactRetired(
        fact_id="f-gone", character_id="bard", user_id="u1", reason="deleted", message_id="m-f-gone", retired_at=T0
    )
    merged = FactsConsolidated(**fact("f-merged", "Ana knows the harbour well.").model_dump(), consolidates=["a", "b"])
    promoted = FactPromoted(
        fact_id="f-shared", character_id="bard", owner_user_id="u1", by_user_id="u1",
        from_scope=player_scope("u1"), to_scope="campaign:k", at=T0,
    )  # fmt: skip
    core = await open_core(core_settings)
    try:
        await core.store.append(
            knowledge_stream("t-facts", "bard"),
            0,
            [
                event(fact("f-gone", "Ana lost her red scarf.")),
                event(fact("a", "Ana sails.")),
                event(fact("b", "Ana fishes.")),
                event(fact("f-shared", "The lighthouse key hides under the blue stone.")),
                event(retired),
                event(merged),
                event(promoted),
            ],
        )
    finally:
        await core.close()

    assert await replay(core_settings, embedded=False) == 7
    core = await open_core(core_settings, vectors=True)
    try:
        assert core.vectors is not None
        points = await core.vectors.count(FACTS)
        assert points == 2, "only the consolidated fact and the promoted one are current"
        assert await core.vectors.count(FACTS.and_(Match("fact_id", ("f-merged",)))) == 1
        assert (
            await core.vectors.count(FACTS.and_(Match("scope", ("campaign:k",)), Match("fact_id", ("f-shared",)))) == 1
        )
    finally:
        await core.close()
