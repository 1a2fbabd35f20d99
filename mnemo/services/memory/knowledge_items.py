"""Characters' facts as items of the memory listing, read through ``KnowledgeReadModel.page``.

The knowledge read model pages facts newest ``learned_at`` first with its own tie-break; the listing orders by
``end_at`` (for a fact, when it was learned) then id. Facts learned in one extraction share their time, so the
first ``count`` facts of the listing are not always the first ``count`` of the read model's page: the facts
tied with the last one fetched are fetched too, then the union is re-sorted in listing order and cut. Every
fact of an earlier time is already in the first page, so the cut is exactly the listing's prefix.
"""

from __future__ import annotations

from mnemo.services.memory.listing import order_key
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo_client.wire.memory_contract import MemoryItem

TIE_PAGE = 100


class FactItems:
    def __init__(self, knowledge: KnowledgePort) -> None:
        self._knowledge = knowledge

    async def first(
        self,
        tenant_id: str,
        user_id: str,
        *,
        character_id: str | None,
        fact_type: str | None,
        count: int,
        conversation_id: str | None = None,
    ) -> tuple[list[MemoryItem], int]:
        """The first ``count`` facts of the user in listing order, and how many match (current facts only)."""

        async def page(offset: int, limit: int) -> tuple[list[FactView], int]:
            return await self._knowledge.page(
                tenant_id,
                user_id,
                character_id=character_id,
                fact_type=fact_type,
                conversation_id=conversation_id,
                limit=limit,
                offset=offset,
            )

        views, total = await page(0, count)
        if views and len(views) == count < total:
            boundary = views[-1].learned_at
            offset = count
            while offset < total:
                more, _ = await page(offset, TIE_PAGE)
                tied = [v for v in more if v.learned_at == boundary]
                views += tied
                if not more or len(tied) < len(more):
                    break
                offset += len(more)
        return sorted((fact_item(v) for v in views), key=order_key)[:count], total


def fact_item(view: FactView) -> MemoryItem:
    return mapped(MemoryItem, view, source="knowledge", id=view.fact_id, type=view.fact_type, end_at=view.learned_at)
