"""The memories written through the memory API that a context shows (issue 28): found, checked, ranked.

Who sees what is the memory search's rule (``mnemo/shared/namespaces.py``): a context's viewer
(``filters.context_viewer``) is its user as the speaking bot, in the request's campaign, so it sees the user's
``player:<user>`` namespace, ``campaign:<campaign_id>`` (only when the request names it) and
``character:<bot>``, each memory there only when it is for everyone or for that bot. The rule is inside the
vector query (``filters.context_memories_filter``) and checked again on read, so a character never finds what
it was not given, and another user's or tenant's memory cannot even be ranked.

Ranking: the hybrid query (dense and lexical, fused, as for summaries; made by the context's search, in its
batch: ``search/searches.py``) decides which memories are candidates; a memory's score is the best dense
cosine of its chunks (the search's dense re-query among them) times the recency factor the memory search applies
(``scoring.recency_factor``: half-life from the request, else the settings, 0 = off), on the same scale as a
summary's so the budget compares them fairly. Near-duplicates go (``scoring.without_near_duplicates``), and at
most ``remembered_limit`` are offered to the budget, which packs them with the other scored sections.

Failures are never the reply's: the embed and the queries are the search's (past ``retrieval_timeout_s`` or on
an error, ``embedder`` or ``vector_index`` in ``degraded``); a failed read back names ``remembered``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass

from mnemo.services.context_assembler.gather.as_of import AsOf
from mnemo.services.context_assembler.items import RememberedItem
from mnemo.services.context_assembler.recall.candidates import from_memory
from mnemo.services.context_assembler.recall.filters import context_viewer
from mnemo.services.context_assembler.recall.scoring import recency_factor, without_near_duplicates
from mnemo.services.context_assembler.search.hits import Found
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.readmodels.ports import MemoriesPort
from mnemo.shared.titles import short_title
from mnemo.shared.vectors import points as vp
from mnemo_client.wire.contract import ContextAssembleRequest

log = logging.getLogger(__name__)


@dataclass(eq=False)
class RememberedRecall:
    """The remembered memories of one context request (:meth:`read`); never fails a request."""

    memories: MemoriesPort | None
    settings: AssemblerSettings

    @property
    def wanted(self) -> bool:
        """The search must look for them (``search/searches.py``): there is a read model and room for them."""
        return self.memories is not None and self.settings.remembered_limit > 0

    async def read(
        self,
        req: ContextAssembleRequest,
        found: Found,
        degraded: list[str],
        half_life_days: float,
        as_of: AsOf | None = None,
    ) -> list[RememberedItem]:
        """The best ``remembered_limit`` memories the speaking bot may be shown among those the search
        ``found`` (fused order, with each memory's best dense cosine), best first; with ``as_of``, only those
        that occurred by its time (``gather/as_of.py``), recency measured from it."""
        s = self.settings
        if self.memories is None or s.remembered_limit == 0:
            return []
        ids = tuple(dict.fromkeys(v for h in found.points if isinstance(v := h.payload.get(vp.MEMORY_ID), str)))
        if not ids:
            return []
        cosine = found.cosine or {}
        try:
            async with asyncio.timeout(s.read_timeout_s):  # in this task: no task of its own per request
                views = await self.memories.by_ids(req.tenant_id, list(ids))
        except Exception as exc:
            log.warning("remembered memories unreadable: %s: %s", type(exc).__name__, exc)
            degraded.append("remembered")
            return []
        viewer = context_viewer(req)
        visible = set(viewer.namespaces())
        now = as_of.epoch if as_of is not None else time.time()
        items = [
            _item(v, max(0.0, cosine.get(v.memory_id, 0.0)) * recency_factor(
                now - v.occurred_at.timestamp(), half_life_days, s.recency.floor))
            for v in views
            if v.tenant_id == req.tenant_id and v.owner_namespace in visible and viewer.sees(v.owner_namespace, v.audience)
            and (as_of is None or as_of.holds_time(v.occurred_at))
        ]  # fmt: skip
        items.sort(key=lambda i: (-i.score, i.memory_id))
        return without_near_duplicates(items, lambda i: i.text, s.remembered_limit)


def _item(v: MemoryView, score: float) -> RememberedItem:
    # A title someone gave says what the memory is about; a derived one only repeats the content's start.
    text = v.content.strip() if v.title == short_title(v.content) else f"{v.title}: {v.content.strip()}"
    why = f"{v.memory_type} memory of {v.owner_namespace}, {from_memory(v).origin}"
    return RememberedItem(v.memory_id, v.memory_type, text, score, why, v.assets, v.occurred_at)
