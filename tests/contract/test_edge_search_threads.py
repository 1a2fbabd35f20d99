"""The Qdrant Edge adapter's search pool size (``vectors.search_threads``) reaches the shard, on create and on
every later open, and searches answer the same whatever the size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo.shared.settings import Settings
from mnemo.shared.vectors.edge import SEARCH_THREADS, EdgeVectorIndex
from mnemo.shared.vectors.factory import build_vector_index
from mnemo.shared.vectors.port import VectorFilter, VectorQuery
from tests.contract.test_vector_index_contract import DIM, point, unit


def persisted_threads(shard_dir: Path) -> object:
    """The count the engine keeps in the shard's config (it resolves an unspecified one from there)."""
    return json.loads((shard_dir / "edge_config.json").read_text()).get("max_search_threads")


async def test_the_pool_size_is_passed_on_create_and_on_each_reopen(tmp_path: Path) -> None:
    points = [point(unit(1, i / 10), tenant_id="t") for i in range(20)]
    query = VectorQuery.dense(unit(1, 0.45), VectorFilter.where(tenant_id="t"), 5)
    answers = []
    for threads in (3, SEARCH_THREADS):
        index = EdgeVectorIndex(tmp_path, "pool", search_threads=threads)
        await index.ensure_collection(DIM)
        try:
            if not answers:
                await index.upsert(points)
            assert persisted_threads(tmp_path / "pool") == threads
            answers.append([h.id for h in await index.search(query)])
        finally:
            await index.close()
    assert answers[0] == answers[1]
    assert len(answers[0]) == 5


async def test_the_setting_reaches_the_shard_the_factory_opens(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, vectors={"search_threads": 2})  # type: ignore[arg-type]
    index = build_vector_index(settings)
    await index.ensure_collection(DIM)
    try:
        assert persisted_threads(tmp_path / "qdrant-edge" / settings.vector_collection) == 2
    finally:
        await index.close()


def test_a_pool_without_threads_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        EdgeVectorIndex(tmp_path, "none", search_threads=0)
