"""One contract for every VectorIndex adapter: Qdrant Edge (the real engine, in-process) and qdrant-client
(local mode, the same client API a Qdrant server answers).

The central property: filters restrict inside the query, so a tenant never sees, nor is ranked against,
another tenant's points, even when those are closer to the query vector.
"""

from __future__ import annotations

import asyncio
import math
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from qdrant_client import AsyncQdrantClient

from mnemo.shared.sparse import document_vector, query_vector
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.port import (
    Match,
    Range,
    ScoredPoint,
    SparseVector,
    VectorFilter,
    VectorIndex,
    VectorPoint,
    VectorQuery,
)
from mnemo.shared.vectors.qdrant_server import QdrantServerIndex
from tests.vector_stream import StreamedIndex

DIM = 8
#: ``stream``: the points stream's writer and a follower's shard (``MNEMO_VECTORS__MODE=stream``), on the
#: session's nats-server; reads wait for the follower to apply every acked write (tests/vector_stream.py).
#: ``qdrant_server``: a real Qdrant server (``QDRANT_URL``, or testcontainers at the image compose pins), else
#: skipped saying what is missing.
KINDS = ["edge", "qdrant_local", "stream", "qdrant_server"]


async def make_index(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> VectorIndex:
    index: VectorIndex
    if kind == "edge":
        index = EdgeVectorIndex(tmp_path / "edge", "contract")
    elif kind == "stream":
        index = await StreamedIndex.connect(request.getfixturevalue("nats_url"), tmp_path / "replica", "contract", DIM)
    elif kind == "qdrant_server":
        client = AsyncQdrantClient(url=request.getfixturevalue("real_qdrant_url"))
        index = QdrantServerIndex(client, f"contract-{uuid.uuid4().hex}")  # a server is shared: a fresh collection
    else:
        index = QdrantServerIndex(AsyncQdrantClient(location=":memory:"), "contract")
    await index.ensure_collection(DIM)
    return index


@pytest.fixture(params=KINDS)
async def index(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorIndex]:
    idx = await make_index(request.param, tmp_path, request)
    yield idx
    await idx.close()


@pytest.fixture(params=KINDS)
def synced(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[asyncio.Runner, VectorIndex]]:
    """An index and the event loop it runs on, for Hypothesis' synchronous tests; closed afterwards."""
    with asyncio.Runner() as runner:
        idx = runner.run(make_index(request.param, tmp_path, request))
        try:
            yield runner, idx
        finally:
            runner.run(idx.close())


#: The property tests' Hypothesis settings: each example upserts and searches a real index, slower than the
#: default deadline allows.
PROPERTY = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


def assert_best_first(hits: list[ScoredPoint]) -> None:
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)


def pid() -> str:
    return str(uuid.uuid4())


def unit(*xs: float) -> list[float]:
    v = list(xs) + [0.0] * (DIM - len(xs))
    n = math.sqrt(sum(x * x for x in v))
    return [x / n for x in v]


def point(vec: list[float], **payload: object) -> VectorPoint:
    return VectorPoint(pid(), vec, payload)  # type: ignore[arg-type]


async def test_search_returns_best_first_with_cosine_scores(index: VectorIndex) -> None:
    a, b, c = point(unit(1, 0), tenant_id="t"), point(unit(1, 1), tenant_id="t"), point(unit(0, 1), tenant_id="t")
    await index.upsert([c, a, b])
    hits = await index.search(VectorQuery.dense(unit(1, 0), VectorFilter.where(tenant_id="t"), limit=10))
    assert [h.id for h in hits] == [a.id, b.id, c.id]
    assert [round(h.score, 4) for h in hits] == [1.0, round(1 / math.sqrt(2), 4), 0.0]
    assert hits[0].payload == {"tenant_id": "t"}
    # Cosine, not dot: an unnormalised query scores the same.
    scaled = await index.search(
        VectorQuery.dense([3 * x for x in unit(1, 0)], VectorFilter.where(tenant_id="t"), limit=1)
    )
    assert scaled[0].id == a.id
    assert scaled[0].score == pytest.approx(1.0, abs=1e-4)


async def test_tenant_never_sees_a_closer_point_of_another_tenant(index: VectorIndex) -> None:
    mine = point(unit(0, 1), tenant_id="A", user_id="u")
    theirs = [point(unit(1, 0), tenant_id="B", user_id="u") for _ in range(20)]
    await index.upsert([mine, *theirs])
    hits = await index.search(VectorQuery.dense(unit(1, 0), VectorFilter.where(tenant_id="A"), limit=5))
    assert [h.id for h in hits] == [mine.id]


async def test_list_field_match_means_contains(index: VectorIndex) -> None:
    both = point(unit(1), tenant_id="t", bot_ids=["b1", "b2"])
    only2 = point(unit(1), tenant_id="t", bot_ids=["b2"])
    none = point(unit(1), tenant_id="t", bot_ids=[])
    await index.upsert([both, only2, none])
    hits = await index.search(VectorQuery.dense(unit(1), VectorFilter.where(tenant_id="t", bot_ids="b1"), limit=10))
    assert {h.id for h in hits} == {both.id}
    any_of = VectorFilter.where(tenant_id="t").and_(Match("bot_ids", ("b1", "b2")))
    assert {h.id for h in await index.search(VectorQuery.dense(unit(1), any_of, limit=10))} == {both.id, only2.id}


async def test_range_on_created_at_is_inclusive(index: VectorIndex) -> None:
    pts = [point(unit(1, i), tenant_id="t", created_at=1_700_000_000.0 + i) for i in range(5)]
    await index.upsert(pts)
    flt = VectorFilter.where(tenant_id="t").and_(Range("created_at", gte=1_700_000_001.0, lte=1_700_000_003.0))
    hits = await index.search(VectorQuery.dense(unit(1), flt, limit=10))
    assert {h.id for h in hits} == {p.id for p in pts[1:4]}
    open_end = VectorFilter.where(tenant_id="t").and_(Range("created_at", gte=1_700_000_003.0))
    assert await index.count(open_end) == 2


async def test_must_not_excludes(index: VectorIndex) -> None:
    keep = point(unit(1), tenant_id="t", kind="fact")
    drop = point(unit(1), tenant_id="t", kind="summary")
    await index.upsert([keep, drop])
    flt = VectorFilter(must=(Match("tenant_id", ("t",)),), must_not=(Match("kind", ("summary",)),))
    assert [h.id for h in await index.search(VectorQuery.dense(unit(1), flt, limit=10))] == [keep.id]
    assert await index.count(flt) == 1


async def test_integer_and_mixed_matches_and_booleans_refused(index: VectorIndex) -> None:
    two = point(unit(1), tenant_id="t", level=2, tag="x")
    three = point(unit(1), tenant_id="t", level=3, tag=7)
    await index.upsert([two, three])
    assert await index.count(VectorFilter.where(tenant_id="t", level=2)) == 1
    assert await index.count(VectorFilter.where(tenant_id="t").and_(Match("level", (2, 3)))) == 2
    assert await index.count(VectorFilter.where(tenant_id="t").and_(Match("tag", ("x", 7)))) == 2
    with pytest.raises(TypeError, match="boolean"):
        await index.count(VectorFilter.where(tenant_id="t", pinned=True))
    with pytest.raises(ValueError, match="at least one value"):
        await index.count(VectorFilter(must=(Match("tenant_id", ()),)))


async def test_score_threshold_drops_weak_matches(index: VectorIndex) -> None:
    close, far = point(unit(1, 0.1), tenant_id="t"), point(unit(0, 1), tenant_id="t")
    await index.upsert([close, far])
    hits = await index.search(
        VectorQuery.dense(unit(1, 0), VectorFilter.where(tenant_id="t"), limit=10, score_threshold=0.5)
    )
    assert [h.id for h in hits] == [close.id]


async def test_upsert_same_id_is_idempotent_and_replaces_payload(index: VectorIndex) -> None:
    p = point(unit(1), tenant_id="t", kind="fact", message_id="m1")
    await index.upsert([p])
    await index.upsert([p])
    assert await index.count() == 1
    await index.upsert([VectorPoint(p.id, unit(0, 1), {"tenant_id": "t", "kind": "summary"})])
    assert await index.count() == 1
    [got] = await index.retrieve([p.id])
    assert got.payload == {"tenant_id": "t", "kind": "summary"}  # replaced, not merged
    assert await index.count(VectorFilter.where(kind="fact")) == 0


async def test_delete_by_filter_and_by_ids(index: VectorIndex) -> None:
    a = [point(unit(1), tenant_id="A", conversation_id="c1") for _ in range(3)]
    a2 = [point(unit(1), tenant_id="A", conversation_id="c2") for _ in range(2)]
    b = [point(unit(1), tenant_id="B", conversation_id="c1") for _ in range(4)]
    await index.upsert(a + a2 + b)
    await index.delete(VectorFilter.where(tenant_id="A", conversation_id="c1"))
    assert await index.count(VectorFilter.where(tenant_id="A")) == 2
    assert await index.count(VectorFilter.where(tenant_id="B")) == 4
    await index.delete_ids([b[0].id, b[1].id, pid()])  # an unknown id is not an error
    assert await index.count() == 4
    await index.delete_ids([])
    with pytest.raises(ValueError, match="at least one condition"):
        await index.delete(VectorFilter())
    assert await index.count() == 4


async def test_count_with_and_without_filter(index: VectorIndex) -> None:
    assert await index.count() == 0
    await index.upsert([point(unit(1), tenant_id=t) for t in ("A", "A", "B")])
    assert await index.count() == 3
    assert await index.count(VectorFilter.where(tenant_id="A")) == 2
    assert await index.count(VectorFilter.where(tenant_id="nobody")) == 0


async def test_retrieve_returns_payloads_and_skips_missing(index: VectorIndex) -> None:
    p = point(unit(1), tenant_id="t", user_id="u", created_at=1.5, persona_id=None)
    await index.upsert([p])
    got = await index.retrieve([p.id, pid()])
    assert [(g.id, g.score) for g in got] == [(p.id, 0.0)]
    assert got[0].payload == {"tenant_id": "t", "user_id": "u", "created_at": 1.5, "persona_id": None}
    assert await index.retrieve([]) == []


async def test_ids_are_canonical_uuid_text(index: VectorIndex) -> None:
    raw = uuid.uuid4()
    await index.upsert([VectorPoint(str(raw).upper(), unit(1), {"tenant_id": "t"})])
    [hit] = await index.search(VectorQuery.dense(unit(1), VectorFilter.where(tenant_id="t"), limit=1))
    assert hit.id == str(raw)
    with pytest.raises(ValueError, match="badly formed"):
        await index.upsert([VectorPoint("not-a-uuid", unit(1), {})])


async def test_edge_persists_across_close_and_reopen(tmp_path: Path) -> None:
    first = EdgeVectorIndex(tmp_path, "persist")
    await first.ensure_collection(DIM)
    p = point(unit(1), tenant_id="t", created_at=10.0)
    await first.upsert([p])
    await first.close()
    await first.close()  # idempotent
    second = EdgeVectorIndex(tmp_path, "persist")
    await second.ensure_collection(DIM)
    try:
        assert [
            h.id for h in await second.search(VectorQuery.dense(unit(1), VectorFilter.where(tenant_id="t"), 5))
        ] == [p.id]
        assert await second.count(VectorFilter().and_(Range("created_at", gte=10.0))) == 1
        assert await second.optimize() in (True, False)
        assert await second.count(VectorFilter.where(tenant_id="t")) == 1
    finally:
        await second.close()


async def test_edge_second_handle_on_same_path_is_refused(tmp_path: Path) -> None:
    from mnemo.shared.vectors.port import VectorIndexUnavailable

    first = EdgeVectorIndex(tmp_path, "locked")
    await first.ensure_collection(DIM)
    try:
        with pytest.raises(VectorIndexUnavailable, match="WouldBlock"):
            await EdgeVectorIndex(tmp_path, "locked").ensure_collection(DIM)
    finally:
        await first.close()
    with pytest.raises(VectorIndexUnavailable, match="not open"):
        await first.count()


# --- property: zero leaks across many random tenants, users and conversations -----------------------------

finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False)
vectors = st.lists(finite, min_size=DIM, max_size=DIM)
owners = st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 2))  # tenant, user, conversation


Scope = tuple[int, int | None, int | None]
Scenario = tuple[list[tuple[tuple[int, int, int], list[float]]], list[float], Scope]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    rows = draw(st.lists(st.tuples(owners, vectors), min_size=1, max_size=40))
    query = draw(vectors)
    for _, v in [*rows, ((0, 0, 0), query)]:
        assume(math.sqrt(sum(x * x for x in v)) > 1e-3)
    scope = draw(st.tuples(st.integers(0, 5), st.none() | st.integers(0, 2), st.none() | st.integers(0, 2)))
    return rows, query, scope


def test_filtered_search_returns_exactly_the_matching_points(synced: tuple[asyncio.Runner, VectorIndex]) -> None:
    runner, idx = synced

    @settings(PROPERTY, max_examples=60)
    @given(scenarios())
    def check(scenario: Scenario) -> None:
        rows, query, (tenant, user, conv) = scenario
        run = uuid.uuid4().hex  # fresh names per example: earlier examples' points never match
        points = [
            VectorPoint(pid(), v, {"tenant_id": f"{run}-t{t}", "user_id": f"u{u}", "conversation_id": f"c{c}"})
            for (t, u, c), v in rows
        ]
        runner.run(idx.upsert(points))
        equals = {"tenant_id": f"{run}-t{tenant}"}
        if user is not None:
            equals["user_id"] = f"u{user}"
        if conv is not None:
            equals["conversation_id"] = f"c{conv}"
        expected = {p.id for p in points if all(p.payload[k] == v for k, v in equals.items())}
        hits = runner.run(idx.search(VectorQuery.dense(query, VectorFilter.where(**equals), limit=100)))
        assert {h.id for h in hits} == expected  # nothing leaked in, nothing matching left out
        assert all(all(h.payload[k] == v for k, v in equals.items()) for h in hits)
        assert_best_first(hits)

    check()


async def test_factory_picks_the_adapter_from_settings(tmp_path: Path) -> None:
    from mnemo.shared.settings import Settings
    from mnemo.shared.vectors.factory import build_vector_index

    edge = build_vector_index(Settings(data_dir=tmp_path, vector_collection="f"))
    assert isinstance(edge, EdgeVectorIndex)
    await edge.ensure_collection(DIM)
    await edge.close()
    assert (tmp_path / "qdrant-edge" / "f").is_dir()
    server = build_vector_index(Settings(qdrant_url="http://127.0.0.1:9", vector_collection="f"))
    assert isinstance(server, QdrantServerIndex)
    try:
        from mnemo.shared.vectors.port import VectorIndexUnavailable

        with pytest.raises(VectorIndexUnavailable):
            await server.count()  # nothing listens on port 9
    finally:
        await server.close()


# --- hybrid search: DBSF of dense and lexical, both filtered inside the query ------------------------------


def lexical(text: str) -> SparseVector:
    return document_vector(text)


async def test_hybrid_finds_a_lexical_match_that_dense_ranks_out(index: VectorIndex) -> None:
    # The lexical match is the dense-farthest point: dense alone (limit 3) never returns it.
    near = [
        VectorPoint(pid(), unit(1, 0.1 * i), {"tenant_id": "t"}, lexical("we talked about the weather"))
        for i in range(5)
    ]
    word = VectorPoint(pid(), unit(0, 1), {"tenant_id": "t"}, lexical("my cat Pumpernickel turned seven"))
    await index.upsert([*near, word])
    flt = VectorFilter.where(tenant_id="t")
    dense = await index.search(VectorQuery.dense(unit(1, 0), flt, limit=3))
    assert word.id not in {h.id for h in dense}
    hits = await index.hybrid_search(VectorQuery(unit(1, 0), query_vector("how old is Pumpernickel?"), flt, limit=3))
    assert word.id in {h.id for h in hits}
    assert hits[0].id in {word.id, near[0].id}  # first of one list each: tied at the top
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(0 < s < 1 for s in scores)  # fusion scores (each list scaled to about [0, 1], summed), not cosines


async def test_hybrid_without_words_is_the_dense_order(index: VectorIndex) -> None:
    a, b = point(unit(1, 0), tenant_id="t"), point(unit(1, 1), tenant_id="t")
    await index.upsert([b, a])
    hits = await index.hybrid_search(
        VectorQuery(unit(1, 0), query_vector("?!"), VectorFilter.where(tenant_id="t"), limit=5)
    )
    assert [h.id for h in hits] == [a.id, b.id]


async def test_hybrid_score_threshold_applies_to_the_dense_side_only(index: VectorIndex) -> None:
    weak_word = VectorPoint(pid(), unit(0, 1), {"tenant_id": "t"}, lexical("Pumpernickel"))
    weak_plain = VectorPoint(pid(), unit(0, 1, 0.1), {"tenant_id": "t"}, lexical("nothing here"))
    strong = VectorPoint(pid(), unit(1, 0), {"tenant_id": "t"}, lexical("hello"))
    await index.upsert([weak_word, weak_plain, strong])
    hits = await index.hybrid_search(
        VectorQuery(
            unit(1, 0), query_vector("Pumpernickel"), VectorFilter.where(tenant_id="t"), limit=5, score_threshold=0.5
        )
    )
    assert {h.id for h in hits} == {strong.id, weak_word.id}


async def test_hybrid_never_ranks_another_tenants_lexical_match(index: VectorIndex) -> None:
    mine = VectorPoint(pid(), unit(0, 1), {"tenant_id": "A", "kind": "message"}, lexical("lunch on tuesday"))
    theirs = [
        VectorPoint(pid(), unit(1, 0), {"tenant_id": "B", "kind": "message"}, lexical("Pumpernickel secret"))
        for _ in range(10)
    ]
    await index.upsert([mine, *theirs])
    flt = VectorFilter.where(tenant_id="A", kind="message")
    hits = await index.hybrid_search(VectorQuery(unit(1, 0), query_vector("Pumpernickel secret"), flt, limit=5))
    assert [h.id for h in hits] == [mine.id]


async def test_hybrid_searches_in_one_batch_answer_as_each_alone_in_order(index: VectorIndex) -> None:
    """A context request's three searches (one vector, a filter each) go as one batch: each list is what that
    query alone finds, in the order asked, and no query's filter leaks into another's list."""
    kinds = ("summary", "fact", "legacy")
    points = [
        VectorPoint(pid(), unit(1, 0.2 * i), {"tenant_id": t, "kind": k}, lexical(f"{k} number {i} Pumpernickel"))
        for t in ("A", "B")
        for k in kinds
        for i in range(4)
    ]
    await index.upsert(points)
    sparse = query_vector("Pumpernickel number")
    wanted = [("A", k) for k in kinds] + [("B", "fact")]
    queries = [VectorQuery(unit(1, 0), sparse, VectorFilter.where(tenant_id=t, kind=k), limit=3) for t, k in wanted]
    queries[-1] = VectorQuery(unit(0, 1), query_vector("?!"), queries[-1].flt, limit=2)  # no words: dense only
    batch = await index.hybrid_search_many(queries)
    alone = [await index.hybrid_search(q) for q in queries]
    assert [[h.id for h in hits] for hits in batch] == [[h.id for h in hits] for hits in alone]
    assert [[round(h.score, 4) for h in hits] for hits in batch] == [
        [round(h.score, 4) for h in hits] for hits in alone
    ]
    by_id = {p.id: p.payload for p in points}
    for (tenant, kind), hits in zip(wanted, batch, strict=True):
        assert hits
        assert all((by_id[h.id]["tenant_id"], by_id[h.id]["kind"]) == (tenant, kind) for h in hits)
    assert await index.hybrid_search_many([]) == []


async def test_edge_shard_without_the_lexical_vector_falls_back_to_dense(tmp_path: Path) -> None:
    from qdrant_edge import Distance, EdgeConfig, EdgeShard, EdgeVectorParams

    old = EdgeShard.create(
        str(tmp_path / "old"), EdgeConfig(vectors={"dense": EdgeVectorParams(size=DIM, distance=Distance.Cosine)})
    )
    old.close()
    idx = EdgeVectorIndex(tmp_path, "old")
    await idx.ensure_collection(DIM)
    try:
        p = VectorPoint(pid(), unit(1), {"tenant_id": "t"}, lexical("Pumpernickel"))
        await idx.upsert([p])  # the sparse part is dropped, not an error
        hits = await idx.hybrid_search(
            VectorQuery(unit(1), query_vector("Pumpernickel"), VectorFilter.where(tenant_id="t"), 5)
        )
        assert [h.id for h in hits] == [p.id]
        assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # the dense search answered
    finally:
        await idx.close()


Words = st.sampled_from(["alpha", "bravo", "charlie", "delta", "echo"])


def test_hybrid_search_returns_only_the_matching_points(synced: tuple[asyncio.Runner, VectorIndex]) -> None:
    runner, idx = synced

    @settings(PROPERTY, max_examples=40)
    @given(
        st.lists(st.tuples(owners, vectors, st.lists(Words, max_size=4)), min_size=1, max_size=30),
        vectors,
        st.lists(Words, max_size=3),
        st.integers(0, 5),
    )
    def check(
        rows: list[tuple[tuple[int, int, int], list[float], list[str]]],
        query: list[float],
        words: list[str],
        tenant: int,
    ) -> None:
        for _, v, _ in rows:
            assume(math.sqrt(sum(x * x for x in v)) > 1e-3)
        assume(math.sqrt(sum(x * x for x in query)) > 1e-3)
        run = uuid.uuid4().hex
        points = [
            VectorPoint(pid(), v, {"tenant_id": f"{run}-t{t}", "user_id": f"u{u}"}, lexical(" ".join(ws)))
            for (t, u, _), v, ws in rows
        ]
        runner.run(idx.upsert(points))
        flt = VectorFilter.where(tenant_id=f"{run}-t{tenant}")
        expected = {p.id for p in points if p.payload["tenant_id"] == f"{run}-t{tenant}"}
        hits = runner.run(idx.hybrid_search(VectorQuery(query, query_vector(" ".join(words)), flt, limit=100)))
        assert {h.id for h in hits} == expected  # the dense side sees every matching point; nothing leaks
        assert_best_first(hits)

    check()
