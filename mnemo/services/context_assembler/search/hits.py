"""What the searches found, turned into what the sections show (pure).

Chunks of one item are merged, keeping the best score (:func:`best_per_key`). With hybrid search the hits
come in fusion order and fusion scores (sums of each list's scaled scores) are not similarities, so they are
never shown: a summary's or legacy memory's shown score is its best dense cosine (``Found.cosine``), a retrieved
message's is its relevance from ``ranking.py``. Knowledge is decided by the read model, ordered by the
search (:func:`relevant_first`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from mnemo.services.context_assembler.gather.port import SummaryText
from mnemo.services.context_assembler.items import ChatLine, KnowledgeItem
from mnemo.services.context_assembler.search.expansion import SecondSearch
from mnemo.services.context_assembler.search.ranking import Candidate
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import ScoredPoint
from mnemo_client.wire.contract import ContextAssembleRequest


@dataclass(frozen=True)
class Found:
    """Search hits, best first; ``cosine`` (hybrid only) is the best dense cosine per key (summary id, ...)."""

    points: list[ScoredPoint]
    cosine: dict[str, float] | None


@dataclass(frozen=True)
class Hits:
    """Every search of one request (nothing found: empty)."""

    memories: Found = Found([], None)
    messages: Found = Found([], None)
    legacy: Found = Found([], None)
    facts: Found = Found([], None)  # the bot's facts, best first (no score is shown; the budget packs by it)
    searched: bool = False  # the searches ran: a fact they did not find is unrelated to the request
    second: SecondSearch | None = None  # the messages' second search, when configured (``expansion.py``)
    remembered: Found = Found([], None)  # the memory API's memories, cosines always (``recall/remembered.py``)


def relevant_first(
    facts: Sequence[KnowledgeItem], found: Mapping[str, float], limit: int, searched: bool = True
) -> list[KnowledgeItem]:
    """The knowledge shown: the bot's current facts come from the read model (``facts_for``: the source of
    truth for what is current and visible); the fact search orders and scores them. Without a query or when
    the search fails, ``found`` is empty and the newest facts are shown.

    ``facts`` (the bot's current facts, newest first) with those among ``found`` (fact id -> score, most
    relevant first) moved to the front in that order with their score, then the rest newest first, scored 0
    when the search ran (``searched``: it found them unrelated) or left unscored (nothing judged them), at most
    ``limit``. A found id that is not among ``facts`` (retired, superseded, or not visible here) is ignored:
    ``facts`` decides what may be shown, the search only the order and the score."""
    by_id = {f.fact_id: f for f in facts}
    first = [replace(by_id[i], score=max(0.0, score)) for i, score in found.items() if i in by_id]
    taken = {f.fact_id for f in first}
    rest = [f if not searched else replace(f, score=0.0) for f in facts if f.fact_id not in taken]
    return [*first, *rest][: max(0, limit)]


def persona_took_part(summary: SummaryText, req: ContextAssembleRequest, persona_id: str | None) -> bool:
    """A past conversation's memory is the bot's memory of the persona it met there: with another persona
    active now, it is not shown (this conversation's summaries always are)."""
    return summary.conversation_id == req.conversation_id or persona_id is None or persona_id in summary.participants


def best_per_key(points: Sequence[ScoredPoint], key: str) -> dict[str, float]:
    """Highest score per payload ``key`` (a long message is indexed as several chunks), best first."""
    best: dict[str, float] = {}
    for p in points:
        value = p.payload.get(key) or p.id
        if isinstance(value, str) and p.score > best.get(value, float("-inf")):
            best[value] = p.score
    return dict(sorted(best.items(), key=lambda kv: -kv[1]))


def ranked_keys(
    points: Sequence[ScoredPoint], key: str, limit: int, cosine: dict[str, float] | None
) -> dict[str, float]:
    """The ``limit`` best ``key`` values in the hits' order, scored by ``cosine`` when given (hybrid)."""
    best = list(best_per_key(points, key).items())[:limit]
    if cosine is None:
        return dict(best)
    return {k: cosine.get(k, 0.0) for k, _ in best}


def created_at_by_key(points: Sequence[ScoredPoint], key: str) -> dict[str, float]:
    """The ``created_at`` (epoch seconds) of each ``key`` value, from the first of its points that has one."""
    out: dict[str, float] = {}
    for p in points:
        value, when = p.payload.get(key), p.payload.get(vp.CREATED_AT)
        if isinstance(value, str) and isinstance(when, int | float) and value not in out:
            out[value] = float(when)
    return out


def candidates(pool: Sequence[str], lines: dict[str, ChatLine], created_at: dict[str, float]) -> list[Candidate]:
    """The pool (fused order) as ranking candidates; ids the read model did not return (deleted, or not
    witnessed by the bot) are left out, the others keep their fused rank."""
    return [
        Candidate(key, rank, lines[key].index, created_at.get(key), lines[key].author_name, lines[key].content)
        for rank, key in enumerate(pool, start=1)
        if key in lines
    ]
