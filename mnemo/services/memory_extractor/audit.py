"""A fact's audit trail (``mnemo.rpc.knowledge.fact.history.v1``), read from the character's knowledge stream.

Every change to a fact is an event there: learned (by extraction or by hand), folded into a consolidation,
retired (its message edited or deleted, replaced by an edited version, retracted), promoted and unpromoted.
The trail follows a fact's versions both ways (``revises``, and consolidations), so asking for any version
shows the whole story.
Only events of the asking user's facts are read into the answer (another user's fact is ``not_found``).

Cost: the character's stream is read once per request, in pages (the fact ids are in plain text in the log, but
the event store's port has no query by payload): fine for the workbench, not a per-message call.
"""

from __future__ import annotations

from mnemo.shared.aggregates.knowledge.changes import owned
from mnemo.shared.eventlog.port import EventStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    knowledge_stream,
)
from mnemo.shared.readmodels.ports import KnowledgePort
from mnemo_client.wire.knowledge_contract import FactHistoryEntry, FactHistoryReply, FactHistoryRequest

PAGE = 500
_RETIRED_WHY = {
    "stale": "retired: the message it came from was edited",
    "deleted": "retired: the message it came from was deleted",
    "edited": "replaced by an edited version",
    "retracted": "retracted",
}


def _entry(env: EventEnvelope) -> FactHistoryEntry | None:
    """The audit line of one knowledge event, None for an event about no fact (a witness record)."""
    p = env.payload
    if env.type in (FACT_LEARNED.name, FACTS_CONSOLIDATED.name):
        fact = (FACTS_CONSOLIDATED if env.type == FACTS_CONSOLIDATED.name else FACT_LEARNED).parse(p)
        how = "added by hand" if fact.method.startswith("manual:") else f"learned ({fact.method})"
        if fact.revises:
            how = f"edited version of {fact.revises}"
        folded = getattr(fact, "consolidates", None)
        if folded:
            how = f"consolidated from {', '.join(folded)}"
        by = fact.method.removeprefix("manual:") if fact.method.startswith("manual:") else fact.method
        where = f" in {fact.conversation_id}" if fact.conversation_id else ""
        return FactHistoryEntry(
            at=env.occurred_at, event=env.type, fact_id=fact.fact_id, by=by, summary=how + where,
            text=fact.text, scope=fact.scope,
        )  # fmt: skip
    if env.type == FACT_RETIRED.name:
        retired = FACT_RETIRED.parse(p)
        why = _RETIRED_WHY.get(retired.reason, retired.reason)
        return FactHistoryEntry(
            at=env.occurred_at, event=env.type, fact_id=retired.fact_id, by=retired.by_user_id, summary=why
        )
    if env.type in (FACT_PROMOTED.name, FACT_UNPROMOTED.name):
        change = (FACT_PROMOTED if env.type == FACT_PROMOTED.name else FACT_UNPROMOTED).parse(p)
        verb = "promoted" if env.type == FACT_PROMOTED.name else "unpromoted"
        return FactHistoryEntry(
            at=env.occurred_at, event=env.type, fact_id=change.fact_id, by=change.by_user_id,
            summary=f"{verb} from {change.from_scope} to {change.to_scope}", scope=change.to_scope,
        )  # fmt: skip
    return None


def _owner(env: EventEnvelope) -> str | None:
    owner = env.payload.get("user_id", env.payload.get("owner_user_id"))
    return owner if isinstance(owner, str) else None


class FactAudit:
    def __init__(self, store: EventStore, knowledge: KnowledgePort) -> None:
        self._store = store
        self._knowledge = knowledge

    async def history(self, req: FactHistoryRequest) -> FactHistoryReply:
        fact = owned(await self._knowledge.by_id(req.tenant_id, req.fact_id), req.user_id, req.fact_id)
        entries: list[FactHistoryEntry] = []
        links: list[tuple[str, str]] = []  # (fact, an earlier version it revises or a fact it folds)
        stream, after = knowledge_stream(req.tenant_id, fact.character_id), 0
        while page := await self._store.read_stream(stream, after_version=after, limit=PAGE):
            after = page[-1].version
            for env in page:
                if _owner(env) == req.user_id and (entry := _entry(env)) is not None:
                    entries.append(entry)
                    earlier = [env.payload.get("revises"), *env.payload.get("consolidates", ())]
                    links += [(entry.fact_id, e) for e in earlier if isinstance(e, str)]
        chain = _versions(req.fact_id, links)
        return FactHistoryReply(fact_id=req.fact_id, entries=[e for e in entries if e.fact_id in chain])


def _versions(fact_id: str, links: list[tuple[str, str]]) -> set[str]:
    """``fact_id`` and every fact linked to it, however far (earlier and later versions, consolidations)."""
    chain = {fact_id}
    grew = True
    while grew:
        grew = False
        for later, earlier in links:
            if (later in chain) != (earlier in chain):
                chain |= {later, earlier}
                grew = True
    return chain
