"""`mnemo reindex --model ...` re-embeds every point from the log with another model (another size too)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.runtime.reindex import reindex, target_embedder
from mnemo.runtime.replay import replay
from mnemo.shared.analyzer import ANALYZER_VERSION
from mnemo.shared.bootstrap import open_core
from mnemo.shared.embedders.multilingual import MODEL_ID
from mnemo.shared.events.recorded import conversation_stream
from mnemo.shared.settings import EmbedderSettings, Settings
from mnemo.shared.sparse import query_vector
from mnemo.shared.vectors import points
from mnemo.shared.vectors.port import VectorFilter, VectorQuery
from tests.envelopes import message_to_append

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)
TEXTS = ["然后我们去玄天宗拜访。", "昨日、東京タワーに行きました。", "We reached the lighthouse at dusk."]


def test_target_embedder_reads_the_model_flag() -> None:
    current = EmbedderSettings()
    assert target_embedder(current, "bundled-multilingual").dimensions == 512
    assert target_embedder(current, MODEL_ID).provider == "bundled-multilingual"
    tei = target_embedder(current, "BAAI/bge-m3", "tei", 1024, "http://tei:8080")
    assert (tei.provider, tei.model, tei.dimensions, tei.base_url) == ("tei", "BAAI/bge-m3", 1024, "http://tei:8080")
    with pytest.raises(ValueError, match="no bundled model"):
        target_embedder(current, "bge-m3")


async def test_reindex_re_embeds_with_the_new_model_and_then_has_nothing_to_do(core_settings: Settings) -> None:
    core = await open_core(core_settings)
    try:
        stream = conversation_stream("t-reindex", "u1", "c1")
        await core.store.append(stream, 0, [message_to_append("t-reindex", i, t, T0) for i, t in enumerate(TEXTS)])
    finally:
        await core.close()
    await replay(core_settings, embedded=False)  # the bundled English model, 384-d

    target = target_embedder(core_settings.embedder, "bundled-multilingual")
    assert await reindex(core_settings, target, embedded=False) == 3
    moved = core_settings.model_copy(update={"embedder": target})
    core = await open_core(moved, vectors=True, embedder=True)
    try:
        assert core.vectors is not None
        tenant = VectorFilter.where(tenant_id="t-reindex")
        assert await core.vectors.count(tenant) == 3
        assert await core.vectors.count(points.made_by(MODEL_ID, ANALYZER_VERSION)) == 3
        # The new 512-d vectors answer a query (dense and the new analyzer's lexical side).
        assert core.embedder is not None
        (vector,) = await core.embedder.embed(["玄天宗"])
        hits = await core.vectors.hybrid_search(VectorQuery(vector, query_vector("玄天宗"), tenant, 3))
        assert hits[0].payload["message_id"] == "m0"
    finally:
        await core.close()
    assert await reindex(moved, target, embedded=False) == 0, "every point is already on the model"
    assert await reindex(moved, target, embedded=False, force=True) == 3
