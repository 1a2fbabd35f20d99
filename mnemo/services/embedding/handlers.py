"""The embedding consumer: a batch of log events in, deletions and upserts of vectors out.

Contract: the log events of ``domain.HANDLERS`` on MNEMO_LOG, the durable filtering their subjects (the
relay's wire form, decoded by the codec and decrypted as far as the table reads). Undecodable events are
dead-lettered by the consumer; a handled event whose payload fails its model is dead-lettered with the
reason. Everything else is acked once its vectors are written; a failure (embedder or index
unavailable) naks the batch for a retry with backoff. Idempotency key: deterministic point ids (see
``mnemo/shared/vectors/points.py``).

Throughput: every text of the fetched batch goes to the embedder in ONE call (the embedder batches
internally), so the per-message overhead is a dict and a chunk split, not a model call. Each point also
carries a sparse lexical vector of its chunk (``mnemo/shared/sparse.py``) for hybrid search.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mnemo.services.embedding.documents import DocState, documents_touched
from mnemo.services.embedding.domain import HANDLERS, BatchReads, BySource, plan_sorted
from mnemo.services.embedding.facts import FactState, fact_ids_touched
from mnemo.services.embedding.lore_entries import lore_touched
from mnemo.services.embedding.memories import memories_touched
from mnemo.services.embedding.messages import latest_message_events
from mnemo.services.embedding.plan import Chunker, Plan, of_type
from mnemo.shared.aggregates.knowledge import ACTIVE
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.analyzer import ANALYZER_VERSION
from mnemo.shared.delivery import Completion, Item, Rejection
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.events.envelope import EventEnvelope, EventType
from mnemo.shared.events.recorded import LEGACY_LORE_CREATED, SUMMARY_CREATED
from mnemo.shared.readmodels import ports
from mnemo.shared.readmodels.documents import DocumentsReadModel
from mnemo.shared.readmodels.memories import MemoryView
from mnemo.shared.sparse import document_vector
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorIndex, VectorPoint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A batch between its two stages: what to delete and upsert, and the points' vectors."""

    plan: Plan
    vectors: list[list[float]]


@dataclass(eq=False)
class EmbeddingHandler:
    index: VectorIndex
    embedder: Embedder
    read_models: ports.ConversationReadModel
    chunker: Chunker
    summaries: ports.SummariesPort | None = None  # to skip a late redelivered creation of a retired summary
    legacy: ports.LegacyLorePort | None = None  # the same for a deleted legacy lore entry
    lore: ports.LorePort | None = None  # lore entries are indexed from their book's current state (None: not indexed)
    knowledge: ports.KnowledgePort | None = None  # facts' current status, scope and text (None: facts are not indexed)
    documents: DocumentsReadModel | None = None  # documents' versions and active chunk hashes (None: not indexed)
    memories: ports.MemoriesPort | None = None  # remembered memories' current versions (None: not indexed)
    # The embedding of the batch begun last (``begin``): the next batch's starts after it.
    _embedding: asyncio.Future[list[list[float]]] | None = field(default=None, init=False, repr=False)

    async def on_log_batch(self, items: list[Item[EventEnvelope]]) -> list[Rejection]:
        """Both stages of :meth:`begin` back to back."""
        return list(await (await self.begin(items))())

    async def begin(self, items: list[Item[EventEnvelope]]) -> Completion:
        """The staged form (``mnemo.shared.delivery.Staged``): plan this batch and start embedding it, and return
        the rest (wait for its vectors, write them) as its completion. The consumer runs completions one at a
        time in delivery order, so deletions and upserts reach the index in log order.

        The embedding runs in the background, after the previous batch's, so the consumer fetches, decodes and
        plans the next batch while the model works: the model always has a batch queued. When the first stage
        embedded, the model sat idle for each fetch, decode and plan (in the cluster a fetch of 1,024 events
        from three replicating NATS nodes, a decrypt per event, the read models' round trips)."""
        batch: BySource = {}
        rejections = await HANDLERS.dispatch(batch, items)  # an invalid payload is rejected, not retried
        plan = await self.plan(batch)
        vectors = self._embed_in_turn(plan)

        async def finish() -> list[Rejection]:
            await self.write(Prepared(plan, await vectors))
            return rejections

        return finish

    def _embed_in_turn(self, plan: Plan) -> asyncio.Future[list[list[float]]]:
        """The vectors of ``plan``'s points, embedded once the batch begun before has its own: batches reach the
        model one after the other, in delivery order (concurrent calls would interleave their model runs and
        delay the earlier batch's completion, which every later one waits for)."""
        previous = self._embedding

        async def embed() -> list[list[float]]:
            if previous is not None and not previous.done():
                await asyncio.wait({previous})  # its failure is its own batch's: this one still embeds
            return await self.embedder.embed([p.text for p in plan.points]) if plan.points else []

        task = asyncio.ensure_future(embed())
        self._embedding = task
        return task

    async def project(self, events: list[EventEnvelope]) -> None:
        """Bring the index in line with ``events`` (``mnemo replay``; the types not handled are passed over, an
        invalid payload is logged and skipped as live)."""
        batch: BySource = {}
        for env, reason in HANDLERS.sort(batch, events):
            log.warning("skipping %s %s: %s", env.type, env.event_id, reason)
        await self.write(await self.prepare(batch))

    async def prepare(self, batch: BySource) -> Prepared:
        """The plan of a batch sorted per source and the vectors of its points; nothing is written yet."""
        plan = await self.plan(batch)
        vectors = await self.embedder.embed([p.text for p in plan.points]) if plan.points else []
        return Prepared(plan, vectors)

    async def plan(self, batch: BySource) -> Plan:
        """What a batch sorted per source deletes and which points it writes (read models read, nothing embedded)."""
        events = [env for source in batch.values() for env in source]
        if not events:
            return Plan()
        keys = list(latest_message_events(events))
        statuses = await self.read_models.message_status(keys, scene=True) if keys else {}
        reads = BatchReads(
            self.embedder.model_id,
            self.chunker,
            statuses,
            await self._inactive_summaries(events),
            await self._deleted_legacy(events),
            await self._lore_books(events),
            await self._fact_states(events),
            await self._document_states(events),
            await self._memory_states(events),
        )
        return plan_sorted(batch, reads)

    async def write(self, prepared: Prepared) -> None:
        """The deletions, then the upserts, of a prepared batch."""
        plan = prepared.plan
        for flt in plan.deletions:
            await self.index.delete(flt)
        if plan.points:
            await self.index.upsert(
                [
                    # The lexical vector comes from the same chunk text, so hybrid search can match its words.
                    VectorPoint(p.id, v, p.payload | {vp.ANALYZER: ANALYZER_VERSION}, document_vector(p.text))
                    for p, v in zip(plan.points, prepared.vectors, strict=True)
                ]
            )
        log.debug("embedded %d chunk(s), %d deletion(s)", len(plan.points), len(plan.deletions))

    async def _inactive_summaries(self, events: list[EventEnvelope]) -> set[str]:
        """The batch's created summaries that the summaries read model already shows retired."""
        if self.summaries is None:
            return set()
        return await _found_among_created(events, SUMMARY_CREATED, "summary_id", self.summaries.inactive)

    async def _deleted_legacy(self, events: list[EventEnvelope]) -> set[str]:
        """The batch's created legacy lore entries that the legacy lore read model already shows deleted."""
        if self.legacy is None:
            return set()
        return await _found_among_created(events, LEGACY_LORE_CREATED, "legacy_id", self.legacy.deleted)

    async def _lore_books(self, events: list[EventEnvelope]) -> dict[tuple[str, str], BookState | None] | None:
        """The current state of every book the batch's lorebook events touch (see ``lore_entries.plan_lore``)."""
        if self.lore is None:
            return None
        return {key: await self.lore.state(*key) for key in sorted(lore_touched(events))}

    async def _document_states(self, events: list[EventEnvelope]) -> dict[tuple[str, str], DocState] | None:
        """The documents read model's view of every document the batch's ``document.*`` events name."""
        if self.documents is None:
            return None
        out: dict[tuple[str, str], DocState] = {}
        for tenant_id, document_id in sorted(documents_touched(events)):
            rec = await self.documents.get(tenant_id, document_id)
            if rec is not None:
                s = rec.state
                out[(tenant_id, document_id)] = DocState(
                    s.book_id, s.version, s.active_version, s.status == "deleted", rec.hashes
                )
        return out

    async def _memory_states(self, events: list[EventEnvelope]) -> dict[tuple[str, str], MemoryView] | None:
        """The memories read model's current version of every memory the batch names (absent: forgotten)."""
        if self.memories is None:
            return None
        by_tenant: dict[str, list[str]] = {}
        for tenant_id, memory_id in sorted(memories_touched(events)):
            by_tenant.setdefault(tenant_id, []).append(memory_id)
        out: dict[tuple[str, str], MemoryView] = {}
        for tenant_id, ids in by_tenant.items():
            out.update({(tenant_id, v.memory_id): v for v in await self.memories.by_ids(tenant_id, ids)})
        return out

    async def _fact_states(self, events: list[EventEnvelope]) -> dict[tuple[str, str], FactState] | None:
        """The knowledge read model's view of every fact the batch's knowledge events name (see
        ``facts.plan_facts``); facts it does not hold yet are absent."""
        if self.knowledge is None:
            return None
        out: dict[tuple[str, str], FactState] = {}
        for tenant_id, ids in sorted(fact_ids_touched(events).items()):
            wanted = sorted(ids)
            versions = await self.knowledge.scope_versions(tenant_id, wanted)
            for v in await self.knowledge.by_ids(tenant_id, wanted):
                out[(tenant_id, v.fact_id)] = FactState(
                    v.fact_id,
                    v.user_id,
                    v.character_id,
                    v.text,
                    v.scope,
                    versions.get(v.fact_id, 0),
                    v.status == ACTIVE,
                )
        return out


async def _found_among_created(
    events: Sequence[EventEnvelope],
    created: EventType[Any],
    id_field: str,
    among: Callable[[str, Sequence[str]], Awaitable[set[str]]],
) -> set[str]:
    """What ``among`` (a read model's per-tenant lookup) finds among the ids (``id_field``) of the batch's
    ``created`` events: the creations whose retirement or deletion the read model already shows."""
    by_tenant: dict[str, list[str]] = {}
    for env in of_type(events, created):
        by_tenant.setdefault(env.tenant_id, []).append(str(env.payload[id_field]))
    found: set[str] = set()
    for tenant_id, ids in by_tenant.items():
        found |= await among(tenant_id, ids)
    return found
