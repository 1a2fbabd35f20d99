"""Rows whose key was erased read as absent, never as a failure (``mnemo/shared/readmodels/erased.py``).

After an erasure a projection still holding the key in its cache may write a row (the privacy service's
resweep removes it later). On SecantusDB, every read model is given rows of one tenant, then the tenant's keys
are destroyed: each read that would decrypt them answers as if they were not there, and another tenant's rows
still read. Found by the 100,000-case fuzz run (a book created while its tenant was erased: ``internal``).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pymongo import AsyncMongoClient

from mnemo.runtime.servers import ChildServer
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from mnemo.shared.readmodels.legacy_lore import LegacyLoreReadModel
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.readmodels.summaries import SummariesReadModel, SummaryPage
from tests.contract.test_readmodels_contract import (
    C,
    T,
    U,
    bot,
    fact,
    legacy,
    lore_events,
    msg,
    persona,
    summary,
)

pytestmark = pytest.mark.integration

OTHER = "t-kept"


@pytest.fixture
async def db(mongo_server: ChildServer) -> AsyncIterator[Any]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongo_server.url)
    name = f"erased_{uuid.uuid4().hex[:10]}"
    try:
        yield client[name]
    finally:
        await client.drop_database(name)
        await client.close()


async def test_every_read_model_skips_rows_whose_key_was_erased(db: Any) -> None:
    cipher = FieldCipher(os.urandom(32), InMemoryKeyStore())
    models, summaries = ReadModels(db, cipher), SummariesReadModel(db, cipher)
    knowledge, legacy_lore, lore = KnowledgeReadModel(db, cipher), LegacyLoreReadModel(db, cipher), LoreReadModel(db, cipher)  # fmt: skip
    await ensure_indexes(db)
    await models.apply([msg(0), msg(1), bot(1, "Sage"), persona(1, "Ana"), msg(0, tenant=OTHER), bot(1, "Kept", OTHER)])
    await summaries.apply([summary("s1", 0, 1)])
    await knowledge.apply([fact("f1", 1)])
    await legacy_lore.apply([legacy("l1", "s1", 1)])
    await lore.apply([*lore_events("lb1"), *lore_events("lb1", tenant=OTHER)])
    assert [m.message_id for m in await models.recent(T, U, C, 5)] == ["m0", "m1"]  # readable before

    await cipher.erase(T)

    assert await models.recent(T, U, C, 5) == []
    assert await models.by_ids(T, U, C, ["m0", "m1"]) == []
    assert await models.bot(T, "b1") is None
    assert await models.persona(T, U, "ana") is None
    assert await summaries.live_summaries(T, U, C) == []
    assert await summaries.by_ids(T, ["s1"]) == []
    assert (await summaries.listed(SummaryPage(T, U), 0, 5))[0] == []
    assert await knowledge.facts_for(T, "b1", user_id=U) == []
    assert await knowledge.by_id(T, "f1") is None
    assert await legacy_lore.by_ids(T, ["l1"], user_id=U) == []
    assert await lore.state(T, "lb1") is None
    assert await lore.books_by_ids(T, ["lb1"]) == {}
    assert await lore.list_books(T) == []
    # The other tenant reads as before.
    assert [m.message_id for m in await models.recent(OTHER, U, C, 5)] == ["m0"]
    kept = await models.bot(OTHER, "b1")
    assert kept is not None
    assert kept.name == "Kept"
    assert [b.name for b in await lore.list_books(OTHER)] == ["Port Vell"]
