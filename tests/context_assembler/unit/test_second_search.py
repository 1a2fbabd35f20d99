"""The second search of retrieved messages (``search/expansion.py``, ``gather/retrieved.py``): which words it
adds, how the query changes, that its pool replaces the first, and that a failed or late one keeps the first."""

from __future__ import annotations

import asyncio

from mnemo.services.context_assembler.gather.retrieved import retrieved_lines
from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.expansion import SecondSearch, expanded_vector, expansion_terms
from mnemo.services.context_assembler.search.hits import Found
from mnemo.services.context_assembler.search.rerank import NoRerank
from mnemo.shared.sparse import query_vector, term_id, tokens
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import ScoredPoint, SparseVector

QUERY = "Where does the dragon sleep?"
LINES = {
    "m1": ChatLine("m1", 1, "user", "Mira", "The dragon sleeps under the old mill by the river."),
    "m2": ChatLine("m2", 2, "user", "Mira", "Children must stay away from the old mill by the river."),
    "m3": ChatLine("m3", 3, "user", "Mira", "I bought bread today."),
    "m4": ChatLine("m4", 4, "user", "Mira", "Tomas buried a chest of silver near the old mill."),
    "m9": ChatLine("m9", 9, "user", "Mira", "What a lovely morning."),
}


def points(*ids: str) -> list[ScoredPoint]:
    return [ScoredPoint(f"p-{i}", 1.0 - n / 10, {vp.MESSAGE_ID: i}) for n, i in enumerate(ids)]


class Reader:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []

    async def __call__(self, ids: list[str]) -> list[ChatLine]:
        self.asked.append(ids)
        return [LINES[i] for i in ids if i in LINES]


def test_the_words_at_least_two_first_hits_share_and_the_query_lacks() -> None:
    texts = [LINES["m1"].content, LINES["m2"].content, LINES["m3"].content]

    extra = expansion_terms(QUERY, texts)

    assert set(extra) == set(tokens("old mill river"))  # "dragon" and "sleeps" are asked already
    assert expansion_terms(QUERY, texts, from_hits=1) == []  # one hit shares nothing with another
    assert expansion_terms(QUERY, [LINES["m3"].content, LINES["m9"].content]) == []
    assert len(expansion_terms("x", [LINES["m1"].content] * 2, limit=2)) == 2


def test_the_new_words_join_the_query_at_their_weight_and_asked_words_keep_theirs() -> None:
    base = query_vector("dragon mill")
    vector = expanded_vector(base, ["mill", "river"], 0.5)

    weights = dict(zip(vector.indices, vector.values, strict=True))
    assert weights[term_id("mill")] == 1.0
    assert weights[term_id("river")] == 0.5
    assert weights[term_id("dragon")] == 1.0
    assert vector.indices == sorted(vector.indices)
    assert expanded_vector(base, ["river"], 0.0) == base


async def test_its_pool_replaces_the_first_and_only_new_ids_are_read() -> None:
    asked: list[SparseVector] = []

    async def search(vector: SparseVector) -> list[ScoredPoint]:
        asked.append(vector)
        return points("m4", "m1", "m9")

    second = SecondSearch("dragon sleep", query_vector("dragon sleep"), search, 0.5, 5.0)
    read = Reader()

    lines = await retrieved_lines(QUERY, Found(points("m1", "m2", "m3"), None), {"m9"}, read, 3, NoRerank(), second)

    assert {line.message_id for line in lines} == {"m4", "m1"}  # m2, m3 were only in the first pool; m9 shown
    assert read.asked == [["m1", "m2", "m3"], ["m4"]]
    assert term_id("mill") in asked[0].indices


async def test_without_a_second_search_or_new_words_the_first_pool_stands() -> None:
    async def search(vector: SparseVector) -> list[ScoredPoint]:
        raise AssertionError("nothing to add: no second search")

    first = Found(points("m3", "m9"), None)
    nothing_shared = SecondSearch("bread", query_vector("bread"), search, 0.5, 5.0)

    assert [x.message_id for x in await retrieved_lines(QUERY, first, set(), Reader(), 2, NoRerank())] == ["m3", "m9"]
    lines = await retrieved_lines(QUERY, first, set(), Reader(), 2, NoRerank(), nothing_shared)
    assert [x.message_id for x in lines] == ["m3", "m9"]


async def test_a_failed_or_late_second_search_keeps_the_first_pool() -> None:
    async def broken(vector: SparseVector) -> list[ScoredPoint]:
        raise ConnectionError("index down")

    async def late(vector: SparseVector) -> list[ScoredPoint]:
        await asyncio.sleep(10)
        return points("m4")

    first = Found(points("m1", "m2"), None)
    for search, timeout in ((broken, 5.0), (late, 0.01)):
        second = SecondSearch("dragon sleep", query_vector("dragon sleep"), search, 0.5, timeout)
        lines = await retrieved_lines(QUERY, first, set(), Reader(), 2, NoRerank(), second)
        assert {x.message_id for x in lines} == {"m1", "m2"}
