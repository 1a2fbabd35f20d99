"""`mnemo replay` rebuilds the legacy lore read model and its vectors from the log alone: a live entry comes
back readable and indexed, a deleted one stays gone (no text, no vectors), and replaying twice changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.shared.aggregates import legacy_lore
from mnemo.shared.bootstrap import open_core
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import SummaryCreated, legacy_lore_stream
from mnemo.shared.readmodels.legacy_lore import COLLECTION, LegacyLoreReadModel
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import VectorFilter
from mnemo_client.wire.memory_contract import MemoryConvertToLoreRequest
from tests.integration.event_log import replay_twice

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)
TENANT = "t-legacy-replay"


def memory(summary_id: str) -> SummaryCreated:
    payload: dict[str, Any] = {
        "summary_id": summary_id, "user_id": "u1", "conversation_id": "c1", "summary_type": "short_term",
        "text": f"{summary_id}: the keeper hid the chart under the stairs.", "importance": 5,
        "participants": ["b1", "p1"], "start_at": T0, "end_at": T0 + timedelta(hours=1), "message_ids": ["m1"],
        "first_index": 0, "last_index": 0, "method": "extractive", "emotional_context": "wary",
    }  # fmt: skip
    return SummaryCreated.model_validate(payload)


async def test_replay_rebuilds_legacy_lore_and_its_vectors(core_settings: Settings) -> None:
    core = await open_core(core_settings)
    try:
        ids = {}
        for summary_id in ("s-kept", "s-deleted"):
            req = MemoryConvertToLoreRequest(
                tenant_id=TENANT, user_id="u1", memory_id=summary_id, applies_to_bots=["b2"]
            )
            entry = legacy_lore.legacy_entry(TENANT, req, memory(summary_id), T0)
            events: list[NewEvent] = [legacy_lore.legacy_created_event(TENANT, entry)]
            if summary_id == "s-deleted":
                events.append(legacy_lore.legacy_deleted_event(TENANT, "u1", summary_id, T0))
            await core.store.append(legacy_lore_stream(TENANT, "u1", entry.legacy_id), 0, events)
            ids[summary_id] = entry.legacy_id
    finally:
        await core.close()

    await replay_twice(core_settings, 3)

    core = await open_core(core_settings, vectors=True)
    try:
        legacy = LegacyLoreReadModel(core.db, core.cipher)
        [kept] = await legacy.by_ids(TENANT, list(ids.values()), user_id="u1")
        assert (kept.legacy_id, kept.memory_id) == (ids["s-kept"], "s-kept")
        assert kept.text == "s-kept: the keeper hid the chart under the stairs."
        assert kept.emotional_tags == ("wary",)
        gone = await core.db[COLLECTION].find_one({"_id": ids["s-deleted"]})
        assert gone is not None
        assert gone["deleted"] is True
        assert "text" not in gone
        assert core.vectors is not None
        counts = {
            s: await core.vectors.count(VectorFilter.where(tenant_id=TENANT, kind="legacy_memory", legacy_id=lid))
            for s, lid in ids.items()
        }
        assert counts == {"s-kept": 1, "s-deleted": 0}
    finally:
        await core.close()
