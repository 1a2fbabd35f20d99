"""What characters learn from recorded messages: extraction, dedup, the cap, edits and deletes (I/O glue).

Contract (called by ``handlers.MemoryExtractor`` for each fetched batch):

- ``learn``: the recorded messages of a batch → facts per character present (LLM per run of equal presence
  when a model is configured, the ``facts.py`` patterns otherwise or when the model fails) → exact and near
  duplicates dropped (``curation.keep_fresh``) → ``knowledge.fact_learned`` appended to the character's stream
  ``knowledge/<tenant>/<character>`` at the version the read model was brought to before the dedup check
  (``caught_up.py``), so a writer that raced us makes the append conflict and the check runs again (two
  replicas never both learn one fact; the event id is the deterministic fact id: a redelivery appends
  nothing), projected at once (so the next batch deduplicates against them) and published → the cap: oldest
  facts folded into ``knowledge.facts_consolidated``, appended the same way, before the facts are read (two
  replicas never fold one fact twice).

Edits and deletes of messages are ``revisions.py``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import KW_ONLY, dataclass, field

from mnemo.services.memory_extractor import llm_knowledge
from mnemo.services.memory_extractor.appending import save_witnessings
from mnemo.services.memory_extractor.caught_up import ReadModelCatchUp
from mnemo.services.memory_extractor.domain import group_appends
from mnemo.services.memory_extractor.facts import pattern_candidates, runs_of_presence
from mnemo.services.memory_extractor.settings import KnowledgeSettings
from mnemo.shared.aggregates.knowledge import ACTIVE, FactCandidate, Witnessing, learned, normalise
from mnemo.shared.aggregates.knowledge.curation import (
    Known,
    cap_consolidation,
    keep_fresh,
    merge_extractive,
    plan_consolidation,
)
from mnemo.shared.embedders.port import Embedder
from mnemo.shared.eventlog.port import Append, EventStore
from mnemo.shared.eventlog.save import AppendDecision, ConflictRetriesExhausted, EventSaver
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import MessageRecorded, knowledge_stream, player_scope
from mnemo.shared.llm.port import ChatModel, LLMError, ProgressCallback
from mnemo.shared.readmodels.knowledge import FactView
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo.shared.usage import acting_for

log = logging.getLogger(__name__)
#: (tenant, user, conversation) -> the conversation's fork family (``ConversationReadModel.family``).
Family = Callable[[str, str, str], Awaitable[frozenset[str]]]


@dataclass(frozen=True)
class SourceMessage:
    """A message to learn from, with the event that carried it (causation, trace) and its revision."""

    env: EventEnvelope
    msg: MessageRecorded
    traceparent: str | None = None
    revision: str = ""


@dataclass(eq=False)
class Learning:
    store: EventStore
    saver: EventSaver
    knowledge: KnowledgePort
    _: KW_ONLY
    embedder: Embedder | None = None
    chat_model: ChatModel | None = None
    settings: KnowledgeSettings = field(default_factory=KnowledgeSettings)
    family: Family | None = None

    def __post_init__(self) -> None:
        self._vectors: dict[str, list[float]] = {}  # fact id -> vector; facts never change, so never stale
        self._catch_up = ReadModelCatchUp(self.store, self.knowledge)

    async def project(self, events: Sequence[EventEnvelope]) -> None:
        """Fold relayed knowledge events into the read model (idempotent; others ignored)."""
        await self.knowledge.apply(events)

    # --- learning ---------------------------------------------------------------------------------------
    async def learn(self, sources: Sequence[SourceMessage], on_progress: ProgressCallback | None = None) -> None:
        by_tenant: dict[str, list[SourceMessage]] = {}
        for s in sources:
            by_tenant.setdefault(s.env.tenant_id, []).append(s)
        for tenant_id, tenant_sources in by_tenant.items():
            with acting_for(tenant_id):  # its LLM tokens are this tenant's usage
                await self._learn_for(tenant_id, tenant_sources, on_progress)

    async def _learn_for(
        self, tenant_id: str, tenant_sources: list[SourceMessage], on_progress: ProgressCallback | None
    ) -> None:
        candidates = await self._extract(tenant_sources, on_progress)
        origin = {s.msg.message_id: s for s in tenant_sources}
        fresh = await self._append_fresh(tenant_id, candidates, origin)
        for character_id, user_id in dict.fromkeys((c.character_id, c.user_id) for c in fresh):
            await self._enforce_cap(tenant_id, character_id, user_id, on_progress)

    async def _extract(
        self, sources: Sequence[SourceMessage], on_progress: ProgressCallback | None
    ) -> list[FactCandidate]:
        revision = {s.msg.message_id: s.revision for s in sources}
        if self.chat_model is None:
            return [c for s in sources for c in pattern_candidates(s.msg, revision=s.revision)]
        out: list[FactCandidate] = []
        for run in runs_of_presence([s.msg for s in sources]):
            rev = "|".join(revision[m.message_id] for m in run if revision[m.message_id])
            if not llm_knowledge.transcript(run):
                continue
            try:
                completion = await llm_knowledge.extract(self.chat_model, run, on_progress)
            except LLMError as exc:
                log.warning("LLM knowledge extraction failed, falling back to patterns: %s", exc)
                out += [c for m in run for c in pattern_candidates(m, revision=revision[m.message_id])]
            else:
                out += llm_knowledge.candidates_from_updates(run, completion, revision=rev)
        return out

    async def _append_fresh(
        self, tenant_id: str, candidates: Sequence[FactCandidate], origin: dict[str, SourceMessage]
    ) -> list[FactCandidate]:
        """Bring the read model up to the log (``caught_up``), deduplicate, then append at the versions it was
        brought to: if another writer (a replica, a slower attempt racing a redelivery) appended to a
        character's stream meanwhile, that append conflicts and that stream's candidates are checked again,
        against what the other wrote. Without it both writers found the fact unknown and both appended it.
        Returns the candidates appended."""
        decided: dict[str, list[FactCandidate]] = {}  # stream -> the fresh candidates of its latest decision

        async def decide(only: Sequence[str] | None) -> list[Append]:
            lost = set(only or ())
            pending = [c for c in candidates if only is None or knowledge_stream(tenant_id, c.character_id) in lost]
            streams = list(dict.fromkeys(knowledge_stream(tenant_id, c.character_id) for c in pending))
            versions = await self._catch_up.at_log(tenant_id, streams)
            for stream in streams:
                decided[stream] = []
            fresh = await self._deduplicate(tenant_id, pending)
            events = [self._fact_event(tenant_id, c, origin.get(c.message_ids[-1])) for c in fresh]
            for c, e in zip(fresh, events, strict=True):
                decided[e.stream_id].append(c)
            return group_appends(events, versions)

        if not candidates:
            return []
        # Projected at once: the next batch deduplicates against these facts.
        saved = await self.saver.save_many(decide, project=self.knowledge.apply)
        await self._catch_up.appended(tenant_id, saved.results.values())
        return [c for stream in saved.results for c in decided[stream]]

    async def _deduplicate(self, tenant_id: str, candidates: Sequence[FactCandidate]) -> list[FactCandidate]:
        """Candidates against what their character knows, branch by branch: a fork learns its copied prefix
        again, since what another branch of its family learned is not its own (docs/branches.md)."""
        groups: dict[frozenset[str], list[FactCandidate]] = {}
        for conversation in dict.fromkeys((c.user_id, c.conversation_id) for c in candidates):
            others = await self._other_branches(tenant_id, *conversation)
            groups.setdefault(others, []).extend(
                c for c in candidates if (c.user_id, c.conversation_id) == conversation
            )
        return [kept for others, group in groups.items() for kept in await self._fresh(tenant_id, group, others)]

    async def _other_branches(self, tenant_id: str, user_id: str, conversation_id: str) -> frozenset[str]:
        if self.family is None:
            return frozenset()
        return await self.family(tenant_id, user_id, conversation_id) - {conversation_id}

    async def _fresh(
        self, tenant_id: str, candidates: Sequence[FactCandidate], others: frozenset[str]
    ) -> list[FactCandidate]:
        known: dict[tuple[str, str], Known] = {}
        for character_id, user_id in dict.fromkeys((c.character_id, c.user_id) for c in candidates):
            # Against CURRENT facts only: "I live in Paris" after a move to Rome is news again.
            owned = await self.knowledge.owned(tenant_id, character_id, user_id, exclude_conversations=others)
            facts = [f for f in owned if f.status == ACTIVE]
            known[(character_id, user_id)] = Known({normalise(f.text) for f in facts}, await self._vectors_of(facts))
        if self.embedder is None:
            vectors: list[list[float]] = [[] for _ in candidates]
            threshold = 2.0  # no embedder: exact duplicates only
        else:
            vectors = await self.embedder.embed([c.text for c in candidates])
            threshold = self.settings.near_duplicate
        return keep_fresh(candidates, vectors, known, threshold)

    async def _vectors_of(self, facts: Sequence[FactView]) -> list[Sequence[float]]:
        if self.embedder is None or not facts:
            return []
        missing = [f for f in facts if f.fact_id not in self._vectors]
        if missing:
            for f, v in zip(missing, await self.embedder.embed([f.text for f in missing]), strict=True):
                self._vectors[f.fact_id] = v
        if len(self._vectors) > 100_000:
            self._vectors.clear()  # a bounded cache; recomputing is cheap
        return [self._vectors[f.fact_id] for f in facts if f.fact_id in self._vectors]

    @staticmethod
    def _fact_event(tenant_id: str, cand: FactCandidate, source: SourceMessage | None) -> Witnessing:
        return learned(tenant_id, cand, source.env if source else None, source.traceparent if source else None)

    async def commit(self, pending: Sequence[Witnessing]) -> list[EventEnvelope]:
        """Append, project at once (the next step reads the read model), publish."""
        if not pending:
            return []
        return await save_witnessings(self.saver, pending, project=self.knowledge.apply)

    # --- the cap ----------------------------------------------------------------------------------------
    async def _enforce_cap(
        self, tenant_id: str, character_id: str, user_id: str, on_progress: ProgressCallback | None
    ) -> None:
        """Fold the oldest facts past the cap, appended at the version the read model was brought to before
        the facts were read (``caught_up``): if another writer (a replica folding its own view of the same
        facts) appended meanwhile, the append conflicts and the plan is made again from the facts as they now
        are. Without it two replicas that read the facts a moment apart folded overlapping groups (different
        groups, so different fact ids) and one fact went into two consolidations."""
        stream = knowledge_stream(tenant_id, character_id)

        async def decide() -> AppendDecision[None]:
            [version] = (await self._catch_up.at_log(tenant_id, [stream])).values()
            pending = await self._consolidations(tenant_id, character_id, user_id, on_progress)
            return AppendDecision(version, pending, None)

        try:
            done = await self.saver.save_decided(stream, decide, project=self.knowledge.apply)
        except ConflictRetriesExhausted as exc:
            # The facts are learned; the cap is a bound on what a character carries, enforced again after its
            # next learned fact, so losing this race repeatedly fails nothing (a retry of the batch would not
            # come back here: its facts are known by then).
            log.warning("knowledge cap of %s not enforced: %d appends lost their race", stream, exc.attempts)
            return
        if done.result is not None:
            await self._catch_up.appended(tenant_id, [done.result])

    async def _consolidations(
        self, tenant_id: str, character_id: str, user_id: str, on_progress: ProgressCallback | None
    ) -> list[NewEvent]:
        """One ``knowledge.facts_consolidated`` per group of the oldest current facts past the cap."""
        owned = await self.knowledge.owned(tenant_id, character_id, user_id)
        current = [f for f in owned if f.status == ACTIVE and f.scope == player_scope(user_id)]
        groups = plan_consolidation(current, self.settings.cap, self.settings.consolidate_at_least)
        pending: list[NewEvent] = []
        for group in groups:
            text, method, prompt_version = merge_extractive(group), "extractive", None
            if self.chat_model is not None:
                try:
                    done = await llm_knowledge.consolidate(self.chat_model, [f.text for f in group], on_progress)
                except LLMError as exc:
                    log.warning("LLM consolidation failed, merging extractively: %s", exc)
                else:
                    text, method, prompt_version = done.value.fact, done.method, done.prompt_version
            pending.append(cap_consolidation(tenant_id, group, text=text, method=method, prompt_version=prompt_version))
        return pending
