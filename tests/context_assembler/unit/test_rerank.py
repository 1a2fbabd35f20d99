"""The re-ranking port: the default says nothing, and a model's scores are used only when well-formed."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.context_assembler.gather.gathering import Gatherer
from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.rerank import NoRerank
from mnemo.services.context_assembler.settings import AssemblerSettings

LINES = [ChatLine("m1", 1, "user", "Kate", "I love skiing"), ChatLine("m2", 2, "assistant", "Elise", "Me too")]


class Fixed:
    def __init__(self, scores: list[float] | None) -> None:
        self.scores = scores

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        return self.scores


class Broken:
    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        raise RuntimeError("model crashed")


def gatherer(reranker: object) -> Gatherer:
    return Gatherer(None, None, None, AssemblerSettings(), reranker=reranker)  # type: ignore[arg-type]


async def test_the_default_has_no_opinion() -> None:
    assert await NoRerank().rerank("q", ["a"]) is None
    assert await gatherer(NoRerank())._rerank("skiing", LINES) is None


async def test_a_model_scores_each_line_by_id() -> None:
    assert await gatherer(Fixed([0.2, 0.9]))._rerank("skiing", LINES) == {"m1": 0.2, "m2": 0.9}


async def test_a_failing_or_malformed_model_is_ignored() -> None:
    assert await gatherer(Broken())._rerank("skiing", LINES) is None
    assert await gatherer(Fixed([0.5]))._rerank("skiing", LINES) is None  # wrong length
    assert await gatherer(Fixed([0.5, 0.5]))._rerank("  ", LINES) is None  # no query, no call
