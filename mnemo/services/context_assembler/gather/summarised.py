"""The summaries and legacy memories a context's search found, read back and checked (``Gatherer``'s part).

Scored by dense cosine times recency (``scoring.with_recency``), their audience checked again on read, and,
in a context as of an earlier message, only those made of what precedes it (``as_of.py``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mnemo.services.context_assembler.gather.as_of import AsOf
from mnemo.services.context_assembler.gather.personas import PartReader
from mnemo.services.context_assembler.gather.port import ContextReads
from mnemo.services.context_assembler.items import SummaryItem
from mnemo.services.context_assembler.recall.scoring import with_recency
from mnemo.services.context_assembler.search.hits import Found, created_at_by_key, persona_took_part, ranked_keys
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.shared.vectors import points as vp
from mnemo_client.wire.contract import ContextAssembleRequest


def half_life(settings: AssemblerSettings, req: ContextAssembleRequest) -> float:
    """The request's recency half-life, else the deployment's."""
    given = req.recency_half_life_days
    return settings.recency.half_life_days if given is None else given


@dataclass(frozen=True)
class FoundMemories:
    reads: ContextReads
    read: PartReader  # the gatherer's bounded read
    settings: AssemblerSettings

    def aged(
        self, req: ContextAssembleRequest, found: Found, key: str, limit: int, as_of: AsOf | None = None
    ) -> dict[str, float]:
        """The ``limit`` first ``key`` values found, scored by cosine times recency (``scoring.with_recency``:
        re-ordered by it, unless recency is off), ages measured from ``as_of``'s time when given."""
        scores, created_at = ranked_keys(found.points, key, limit, found.cosine), created_at_by_key(found.points, key)
        now = as_of.epoch if as_of is not None else time.time()
        return with_recency(scores, created_at, now, half_life(self.settings, req), self.settings.recency.floor)

    async def summaries(
        self,
        req: ContextAssembleRequest,
        persona_id: str | None,
        found: Found,
        degraded: list[str],
        others: frozenset[str] = frozenset(),
        as_of: AsOf | None = None,
    ) -> list[SummaryItem]:
        """The found summaries, read back (their audience checked again on read), best first: dense cosine times
        recency (``aged``).

        Memories come from every conversation of the user with this bot (past conversations are what
        characters remember); a past conversation's memory is dropped when another persona is active now."""
        # Twice the slots are searched: memories of a past conversation with another persona are dropped here.
        scores = self.aged(req, found, vp.SUMMARY_ID, self.settings.memories_limit * 2, as_of)
        if not scores:
            return []
        texts = await self.read(
            self.reads.summaries_by_ids(req.tenant_id, req.user_id, list(scores), req.bot_id),
            "memories",
            degraded,
            [],
        )
        by_id = {
            t.summary_id: t
            for t in texts
            if persona_took_part(t, req, persona_id)
            and t.conversation_id not in others
            and (as_of is None or as_of.holds_summary(t))
        }
        taken = [sid for sid in scores if sid in by_id][: self.settings.memories_limit]
        return [
            SummaryItem(sid, by_id[sid].text, scores[sid], by_id[sid].message_ids, by_id[sid].first_index)
            for sid in taken
        ]

    async def legacy(
        self, req: ContextAssembleRequest, found: Found, degraded: list[str], as_of: AsOf | None = None
    ) -> list[SummaryItem]:
        pool = self.aged(req, found, vp.LEGACY_ID, self.settings.legacy_limit * 2, as_of)
        scores = dict(list(pool.items())[: self.settings.legacy_limit])
        if not scores:
            return []
        texts = await self.read(
            self.reads.legacy_memories(req.tenant_id, req.user_id, list(scores)), "legacy_memories", degraded, []
        )
        return [
            SummaryItem(t.legacy_id, t.text, scores[t.legacy_id], t.message_ids, kind="legacy_memory")
            for t in texts
            if t.legacy_id in scores and (as_of is None or as_of.holds_legacy(t))
        ]
