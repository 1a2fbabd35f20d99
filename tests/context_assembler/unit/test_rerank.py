"""The re-ranking port: the default says nothing, and a model's scores are used only when well-formed."""

from __future__ import annotations

from collections.abc import Sequence

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.rerank import NoRerank, scores_by_id

LINES = [ChatLine("m1", 1, "user", "Kate", "I love skiing"), ChatLine("m2", 2, "assistant", "Elise", "Me too")]


class Fixed:
    def __init__(self, scores: list[float] | None) -> None:
        self.scores = scores

    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        return self.scores


class Broken:
    async def rerank(self, query: str, passages: Sequence[str]) -> list[float] | None:
        raise RuntimeError("model crashed")


async def test_the_default_has_no_opinion() -> None:
    assert await NoRerank().rerank("q", ["a"]) is None
    assert await scores_by_id(NoRerank(), "skiing", LINES) is None


async def test_a_model_scores_each_line_by_id() -> None:
    assert await scores_by_id(Fixed([0.2, 0.9]), "skiing", LINES) == {"m1": 0.2, "m2": 0.9}


async def test_a_failing_or_malformed_model_is_ignored() -> None:
    assert await scores_by_id(Broken(), "skiing", LINES) is None
    assert await scores_by_id(Fixed([0.5]), "skiing", LINES) is None  # wrong length
    assert await scores_by_id(Fixed([0.5, 0.5]), "  ", LINES) is None  # no query, no call
