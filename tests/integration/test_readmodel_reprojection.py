"""A replica that lost an append race projects what the winning replica already projected: a batch of
mostly duplicate message inserts, with edits among them, must apply in one go (it once overflowed the
recursion that resumed an ordered bulk write after each duplicate, and the batch fell back to one message
at a time: two ingest replicas ran at 0.03 of one, ``make bench-scale``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from tests.envelopes import message_recorded, recorded

pytestmark = pytest.mark.integration

T0 = datetime(2026, 11, 1, tzinfo=UTC)


async def test_a_batch_of_mostly_duplicates_applies_with_its_edits(mongo_db, cipher, tenant):
    models = ReadModels(mongo_db, cipher)
    await ensure_indexes(mongo_db)
    messages = [message_recorded(tenant, "u1", "c1", i, f"line {i}", created_at=T0) for i in range(1_500)]
    change = {"user_id": "u1", "conversation_id": "c1", "message_id": "m3", "content": "line 3, edited",
              "edited_at": T0, "tokens": 4}  # fmt: skip
    edit = recorded(tenant, conversation_stream(tenant, "u1", "c1"), 1_501, "message.edited", change, T0)
    await models.apply(messages[:1_200])  # what the winning replica projected

    after = await models.apply([*messages, edit])  # the losing replica's catch-up: 1,200 duplicates first

    state = after[conversation_stream(tenant, "u1", "c1")]
    assert state.message_count == 1_500
    edited = await models.message_range(tenant, "u1", "c1", 3, 4)
    assert [m.content for m in edited] == ["line 3, edited"]
    assert [m.content for m in await models.message_range(tenant, "u1", "c1", 1_499, 1_500)] == ["line 1499"]
