"""What the embedding service does with a batch of log events (pure, no I/O): a :class:`Plan`.

- ``message.recorded``: chunk the content and index every chunk as a ``kind="message"`` point.
- ``message.edited``: delete the message's points, then index the new content.
- ``message.deleted``: delete the message's points.
- ``summary.created``: index the summary text as ``kind="summary"`` points (``source_id`` = summary id),
  chunked by :func:`summary_chunks`, with the summary's ``audience`` (who may be shown it) and ``summary_type``;
  ``summary.retired`` deletes them (a summary created and retired in the same batch is not indexed).
- lorebook events (``lorebook.imported``, ``.created``, ``.entry_created``, ``.entry_updated``,
  ``.entry_deleted``, ``.deleted``): the touched entries' ``kind="lore_entry"`` points are deleted, then the
  entries in ``vector`` or ``hybrid`` mode, enabled and not empty, are indexed again FROM THE BOOK'S CURRENT
  STATE in the lore read model (see :func:`plan_lore`), chunked by :func:`lore_chunks`.
- ``legacy_lore.created``: index the entry as ``kind="legacy_memory"`` points, each chunk embedded WITH a
  header of its metadata (participants, date range, mood), filterable by ``applies_to``; ``legacy_lore.deleted``
  deletes them (the last event of an entry in a batch wins, as for messages).
- knowledge events (``knowledge.fact_learned``, ``.facts_consolidated``, ``.fact_retired``, ``.fact_promoted``,
  ``.fact_unpromoted``): a character's current fact is one ``kind="fact"`` point with ``audience`` = that
  character and its ``scope``; retired or folded facts lose their points, a scope change rewrites them
  (see :func:`plan_facts`).

Idempotency key: point ids are ``deterministic_id("vec", kind, tenant, user, conversation, source id,
chunk)``, so a redelivered event overwrites the same points. Within a batch only the *last* event of each
message counts (an edit after a create in the same batch must not leave chunks of the old text), and an
event older than what the messages read model already shows for that message (a redelivery arriving after
a later edit or delete) is skipped, so a late redelivery cannot resurrect old or deleted text.

Payloads carry ids and filter fields only, never text: the text stays encrypted in MongoDB.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, ValidationError

from services.embedding.chunking import LORE_MAX_TOKENS, LORE_OVERLAP_TOKENS, chunk_strings, chunk_text
from shared.events.envelope import EventEnvelope, deterministic_id
from shared.events.recorded import (
    FACT_LEARNED,
    FACT_PROMOTED,
    FACT_RETIRED,
    FACT_UNPROMOTED,
    FACTS_CONSOLIDATED,
    LEGACY_LORE_CREATED,
    LEGACY_LORE_DELETED,
    LOREBOOK_CREATED,
    LOREBOOK_DELETED,
    LOREBOOK_ENTRY_CREATED,
    LOREBOOK_ENTRY_DELETED,
    LOREBOOK_ENTRY_UPDATED,
    LOREBOOK_IMPORTED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
    FactLearned,
    FactRetired,
    FactsConsolidated,
    FactScopeChanged,
    LegacyLoreCreated,
    LegacyLoreDeleted,
    LorebookCreated,
    LorebookDeleted,
    LorebookEntryDeleted,
    LorebookEntryWritten,
    LorebookImported,
    MessageDeleted,
    MessageEdited,
    MessageRecorded,
    SummaryCreated,
    SummaryRetired,
)
from shared.lore.history import BookState
from shared.presence import message_audience
from shared.readmodels import MessageKey, MessageStatus
from shared.readmodels.conversation import as_utc
from shared.vectors.port import Match, PayloadValue, VectorFilter

MESSAGE_EVENTS = frozenset({MESSAGE_RECORDED.name, MESSAGE_EDITED.name, MESSAGE_DELETED.name})

PAYLOAD_MODELS: dict[str, type[BaseModel]] = {
    MESSAGE_RECORDED.name: MessageRecorded,
    MESSAGE_EDITED.name: MessageEdited,
    MESSAGE_DELETED.name: MessageDeleted,
    SUMMARY_CREATED.name: SummaryCreated,
    SUMMARY_RETIRED.name: SummaryRetired,
    LEGACY_LORE_CREATED.name: LegacyLoreCreated,
    LEGACY_LORE_DELETED.name: LegacyLoreDeleted,
    LOREBOOK_IMPORTED.name: LorebookImported,
    LOREBOOK_CREATED.name: LorebookCreated,
    LOREBOOK_ENTRY_CREATED.name: LorebookEntryWritten,
    LOREBOOK_ENTRY_UPDATED.name: LorebookEntryWritten,
    LOREBOOK_ENTRY_DELETED.name: LorebookEntryDeleted,
    LOREBOOK_DELETED.name: LorebookDeleted,
    FACT_LEARNED.name: FactLearned,
    FACTS_CONSOLIDATED.name: FactsConsolidated,
    FACT_RETIRED.name: FactRetired,
    FACT_PROMOTED.name: FactScopeChanged,
    FACT_UNPROMOTED.name: FactScopeChanged,
}

Chunker = Callable[[str], list[str]]


def payload_error(envelope: EventEnvelope) -> str | None:
    """Why a handled event's payload can never be processed (None when it is fine or not handled)."""
    model = PAYLOAD_MODELS.get(envelope.type)
    if model is None:
        return None
    try:
        model.model_validate(envelope.payload)
    except ValidationError as exc:
        return f"{envelope.type} payload invalid: {exc}"
    return None


def point_id(kind: str, tenant_id: str, user_id: str, conversation_id: str, source_id: str, chunk: int) -> str:
    return deterministic_id("vec", kind, tenant_id, user_id, conversation_id, source_id, str(chunk))


def epoch(value: datetime) -> float:
    return as_utc(value).timestamp()


@dataclass(frozen=True)
class PendingPoint:
    """A chunk to embed and the point it becomes."""

    id: str
    text: str
    payload: dict[str, PayloadValue]


@dataclass
class Plan:
    deletions: list[VectorFilter] = field(default_factory=list)  # run before the upserts
    points: list[PendingPoint] = field(default_factory=list)


def message_key(envelope: EventEnvelope) -> MessageKey:
    p = envelope.payload
    return MessageKey(envelope.tenant_id, str(p["user_id"]), str(p["conversation_id"]), str(p["message_id"]))


def messages_filter(tenant_id: str, user_id: str, conversation_id: str, message_ids: Iterable[str]) -> VectorFilter:
    """Every chunk of these messages (and nothing of another tenant, user or conversation)."""
    flt = VectorFilter.where(tenant_id=tenant_id, user_id=user_id, conversation_id=conversation_id, kind="message")
    return flt.and_(Match("message_id", tuple(message_ids)))


def latest_message_events(envelopes: Iterable[EventEnvelope]) -> dict[MessageKey, EventEnvelope]:
    """The last event (highest log version) of each message among ``envelopes``."""
    latest: dict[MessageKey, EventEnvelope] = {}
    for env in envelopes:
        if env.type in MESSAGE_EVENTS:
            key = message_key(env)
            if key not in latest or env.version > latest[key].version:
                latest[key] = env
    return latest


def _scene(base: MessageRecorded | MessageStatus) -> dict[str, PayloadValue]:
    created = base.created_at
    return {
        "bot_ids": list(base.bot_ids),
        "audience": message_audience(base.bot_ids),
        "persona_id": base.persona_id,
        "author_id": base.author_id,
        "role": base.role,
        "index": base.index,
        "created_at": epoch(created) if created is not None else None,
    }


def _message_points(
    env: EventEnvelope, content: str, base: MessageRecorded | MessageStatus | None, model: str, chunker: Chunker
) -> list[PendingPoint]:
    key = message_key(env)
    payload: dict[str, PayloadValue] = {
        "tenant_id": key.tenant_id,
        "user_id": key.user_id,
        "conversation_id": key.conversation_id,
        "message_id": key.message_id,
        "kind": "message",
        "source_id": key.message_id,
        "model": model,
    }
    if base is not None:  # an edit keeps the scene of the original message (from the read model)
        payload |= _scene(base)
    return [
        PendingPoint(
            point_id("message", key.tenant_id, key.user_id, key.conversation_id, key.message_id, i),
            text,
            payload | {"chunk": i},
        )
        for i, text in enumerate(chunker(content))
    ]


# Summary chunks: at most 256 estimated tokens (the low end of the 250-400 the summaries are specified with,
# because the bundled embedder truncates at 256 and would not see the rest) with 25 tokens of overlap.
SUMMARY_CHUNK_TOKENS = 256
SUMMARY_CHUNK_OVERLAP = 25


def summary_chunks(text: str) -> list[str]:
    return [c.text for c in chunk_text(text, SUMMARY_CHUNK_TOKENS, SUMMARY_CHUNK_OVERLAP)]


def summary_filter(tenant_id: str, user_id: str, conversation_id: str, summary_ids: Iterable[str]) -> VectorFilter:
    """Every chunk of these summaries (and nothing of another tenant, user or conversation)."""
    flt = VectorFilter.where(tenant_id=tenant_id, user_id=user_id, conversation_id=conversation_id, kind="summary")
    return flt.and_(Match("summary_id", tuple(summary_ids)))


def _summary_points(env: EventEnvelope, model: str) -> list[PendingPoint]:
    s = SummaryCreated.model_validate(env.payload)
    payload: dict[str, PayloadValue] = {
        "tenant_id": env.tenant_id,
        "user_id": s.user_id,
        "conversation_id": s.conversation_id,
        "kind": "summary",
        "source_id": s.summary_id,
        "summary_id": s.summary_id,
        "summary_type": s.summary_type,
        "audience": list(s.audience),
        "message_ids": list(s.message_ids),
        "participants": list(s.participants),
        "first_index": s.first_index,
        "last_index": s.last_index,
        "created_at": epoch(s.end_at),
        "model": model,
    }
    return [
        PendingPoint(
            point_id("summary", env.tenant_id, s.user_id, s.conversation_id, s.summary_id, i),
            text,
            payload | {"chunk": i},
        )
        for i, text in enumerate(summary_chunks(s.text))
    ]


def plan_summaries(envelopes: Sequence[EventEnvelope], plan: Plan, *, model: str, inactive: set[str]) -> None:
    """Add the summaries' deletions (``summary.retired``) and points (``summary.created``) to ``plan``.

    ``inactive``: summary ids already retired in the summaries read model; their creation is skipped, as is
    a creation retired later in the same batch (deletions run before upserts), so a late redelivery cannot
    bring a retired summary back into search.
    """
    retired: dict[tuple[str, str, str], list[str]] = {}
    for env in envelopes:
        if env.type == SUMMARY_RETIRED.name:
            r = SummaryRetired.model_validate(env.payload)
            retired.setdefault((env.tenant_id, r.user_id, r.conversation_id), []).append(r.summary_id)
    gone = inactive | {sid for ids in retired.values() for sid in ids}
    plan.deletions.extend(summary_filter(*conv, ids) for conv, ids in retired.items())
    for env in envelopes:
        if env.type == SUMMARY_CREATED.name and str(env.payload["summary_id"]) not in gone:
            plan.points.extend(_summary_points(env, model))


def _is_stale(env: EventEnvelope, status: MessageStatus | None) -> bool:
    """A later edit or delete of this message is already projected: this event's text is outdated."""
    return status is not None and (status.deleted or status.version > env.version)


def plan_batch(
    envelopes: Sequence[EventEnvelope],
    statuses: Mapping[MessageKey, MessageStatus],
    *,
    model: str,
    chunker: Chunker,
    inactive_summaries: set[str] | None = None,
    deleted_legacy: set[str] | None = None,
    lore_books: Mapping[tuple[str, str], BookState | None] | None = None,
    facts: Mapping[tuple[str, str], FactState] | None = None,
) -> Plan:
    """The deletions and points for a batch; ``statuses`` (with scenes) from the messages read model;
    ``inactive_summaries`` from the summaries read model (see :func:`plan_summaries`); ``facts`` from the
    knowledge read model (None: facts are not indexed; see :func:`plan_facts`)."""
    plan = Plan()
    deleted_by_conversation: dict[tuple[str, str, str], list[str]] = {}
    for key, env in latest_message_events(envelopes).items():
        if env.type == MESSAGE_DELETED.name:
            deleted_by_conversation.setdefault(key[:3], []).append(key.message_id)
        elif _is_stale(env, statuses.get(key)):
            continue
        elif env.type == MESSAGE_RECORDED.name:
            msg = MessageRecorded.model_validate(env.payload)
            plan.points.extend(_message_points(env, msg.content, msg, model, chunker))
        else:
            edit = MessageEdited.model_validate(env.payload)
            deleted_by_conversation.setdefault(key[:3], []).append(key.message_id)
            plan.points.extend(_message_points(env, edit.content, statuses.get(key), model, chunker))
    plan.deletions = [messages_filter(*conv, ids) for conv, ids in deleted_by_conversation.items()]
    plan_summaries(envelopes, plan, model=model, inactive=inactive_summaries or set())
    plan_legacy(envelopes, plan, model=model, chunker=chunker, deleted=deleted_legacy or set())
    if lore_books is not None:
        plan_lore(envelopes, plan, model=model, books=lore_books)
    if facts is not None:
        plan_facts(envelopes, plan, model=model, chunker=chunker, states=facts)
    return plan


# --- legacy lore (kind "legacy_memory") ------------------------------------------------------------------
LEGACY_KIND = "legacy_memory"
LEGACY_EVENTS = frozenset({LEGACY_LORE_CREATED.name, LEGACY_LORE_DELETED.name})


def legacy_header(entry: LegacyLoreCreated) -> str:
    """The metadata line embedded with each chunk, so a search for who, when or the mood finds the entry:
    ``Memory of <participants>, <date range>, mood: <tags>`` (preceded by the title when there is one)."""
    start, end = as_utc(entry.start_at).date(), as_utc(entry.end_at).date()
    dates = start.isoformat() if start == end else f"{start.isoformat()} to {end.isoformat()}"
    who = ", ".join(entry.participants) or "unknown participants"
    line = f"Memory of {who}, {dates}"
    if entry.emotional_tags:
        line += f", mood: {', '.join(entry.emotional_tags)}"
    return f"{entry.title}. {line}" if entry.title else line


def legacy_filter(tenant_id: str, user_id: str, legacy_id: str) -> VectorFilter:
    """Every chunk of one legacy entry (and nothing of another tenant or user)."""
    return VectorFilter.where(tenant_id=tenant_id, user_id=user_id, kind=LEGACY_KIND, legacy_id=legacy_id)


def _legacy_points(env: EventEnvelope, model: str, chunker: Chunker) -> list[PendingPoint]:
    e = LegacyLoreCreated.model_validate(env.payload)
    payload: dict[str, PayloadValue] = {
        "tenant_id": env.tenant_id,
        "user_id": e.user_id,
        "conversation_id": e.conversation_id,
        "kind": LEGACY_KIND,
        "source_id": e.legacy_id,
        "legacy_id": e.legacy_id,
        "memory_id": e.memory_id,
        "applies_to": sorted({*e.applies_to_bots, *e.applies_to_personas}),
        "participants": list(e.participants),
        "importance": e.importance,
        "start_at": epoch(e.start_at),
        "end_at": epoch(e.end_at),
        "created_at": epoch(e.end_at),
        "model": model,
    }
    header = legacy_header(e)
    return [
        PendingPoint(
            point_id(LEGACY_KIND, env.tenant_id, e.user_id, "", e.legacy_id, i),
            f"{header}\n{text}",
            payload | {"chunk": i},
        )
        for i, text in enumerate(chunker(e.text) or [""])
    ]


def plan_legacy(
    envelopes: Sequence[EventEnvelope], plan: Plan, *, model: str, chunker: Chunker, deleted: set[str]
) -> None:
    """Add the legacy entries' deletions and points to ``plan``; the last event of each entry counts, and a
    creation of an entry in ``deleted`` (the legacy lore read model shows it deleted: a late redelivery) is
    skipped, so it cannot come back into search."""
    latest: dict[tuple[str, str, str], EventEnvelope] = {}
    for env in envelopes:
        if env.type in LEGACY_EVENTS:
            key = (env.tenant_id, str(env.payload["user_id"]), str(env.payload["legacy_id"]))
            if key not in latest or env.version > latest[key].version:
                latest[key] = env
    for (tenant_id, user_id, legacy_id), env in latest.items():
        if env.type == LEGACY_LORE_DELETED.name:
            plan.deletions.append(legacy_filter(tenant_id, user_id, legacy_id))
        elif legacy_id not in deleted:
            plan.points.extend(_legacy_points(env, model, chunker))


# --- lore entries (kind "lore_entry"): vector and hybrid activation ------------------------------------
LORE_KIND = "lore_entry"
LORE_VECTOR_EVENTS = frozenset(
    {
        LOREBOOK_IMPORTED.name,
        LOREBOOK_CREATED.name,
        LOREBOOK_ENTRY_CREATED.name,
        LOREBOOK_ENTRY_UPDATED.name,
        LOREBOOK_ENTRY_DELETED.name,
        LOREBOOK_DELETED.name,
    }
)
_WHOLE_BOOK = frozenset({LOREBOOK_IMPORTED.name, LOREBOOK_CREATED.name, LOREBOOK_DELETED.name})


def lore_chunks(text: str) -> list[str]:
    """Paragraphs first, then sentences, then a word window (``services.embedding.chunking``), ~750 tokens, 50 overlap."""
    return chunk_strings(text, LORE_MAX_TOKENS, LORE_OVERLAP_TOKENS)


def lore_filter(tenant_id: str, lorebook_id: str, uids: Iterable[int] | None = None) -> VectorFilter:
    """Every chunk of these entries of one book (all of the book's with ``uids=None``), and nothing else."""
    flt = VectorFilter.where(tenant_id=tenant_id, kind=LORE_KIND, lorebook_id=lorebook_id)
    return flt if uids is None else flt.and_(Match("uid", tuple(sorted(uids))))


def lore_touched(envelopes: Iterable[EventEnvelope]) -> dict[tuple[str, str], set[int] | None]:
    """Per (tenant, book): the entry uids whose vectors a batch may change, or None for the whole book."""
    touched: dict[tuple[str, str], set[int] | None] = {}
    for env in envelopes:
        if env.type not in LORE_VECTOR_EVENTS:
            continue
        key = (env.tenant_id, str(env.payload["lorebook_id"]))
        if env.type in _WHOLE_BOOK:
            touched[key] = None
        elif (uids := touched.setdefault(key, set())) is not None:
            uids.add(int(str(env.payload["uid"])))
    return touched


def lore_points(state: BookState, uids: set[int] | None, model: str) -> list[PendingPoint]:
    """The points of the book's current vector/hybrid entries among ``uids`` (all with None)."""
    points: list[PendingPoint] = []
    for entry in state.book.entries:
        if uids is not None and entry.uid not in uids:
            continue
        if entry.activation_mode == "keyword" or entry.disable or not entry.content.strip():
            continue
        payload: dict[str, PayloadValue] = {
            "tenant_id": state.tenant_id,
            "kind": LORE_KIND,
            "lorebook_id": state.lorebook_id,
            "uid": entry.uid,
            "source_id": f"{state.lorebook_id}:{entry.uid}",
            "model": model,
        }
        for i, text in enumerate(lore_chunks(entry.content)):
            pid = point_id(LORE_KIND, state.tenant_id, "", "", f"{state.lorebook_id}:{entry.uid}", i)
            points.append(PendingPoint(pid, text, payload | {"chunk": i}))
    return points


def plan_lore(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    model: str,
    books: Mapping[tuple[str, str], BookState | None],
) -> None:
    """Add the lore deletions and points to ``plan``. ``books``: the current state of each touched book (from
    the lore read model, which the lore service writes before it publishes); the points come from it, not
    from the events, so a late redelivery re-indexes the entry as it is now (or not at all when it is gone):
    an old text can never come back, and a deleted entry or book never does."""
    for (tenant_id, lorebook_id), uids in lore_touched(envelopes).items():
        plan.deletions.append(lore_filter(tenant_id, lorebook_id, uids))
        state = books.get((tenant_id, lorebook_id))
        if state is not None and not state.deleted:
            plan.points.extend(lore_points(state, uids, model))


# --- characters' facts (kind "fact") -------------------------------------------------------------------
FACT_KIND = "fact"
FACT_EVENTS = frozenset(
    {FACT_LEARNED.name, FACTS_CONSOLIDATED.name, FACT_RETIRED.name, FACT_PROMOTED.name, FACT_UNPROMOTED.name}
)
_FACT_CREATED = frozenset({FACT_LEARNED.name, FACTS_CONSOLIDATED.name})
_FACT_SCOPED = frozenset({FACT_PROMOTED.name, FACT_UNPROMOTED.name})


@dataclass(frozen=True)
class FactState:
    """What the knowledge read model shows of a fact (the extractor writes it right after appending)."""

    fact_id: str
    user_id: str
    character_id: str
    text: str
    scope: str
    scope_version: int  # log version of the event that set ``scope``
    current: bool  # not retired and not consolidated away (superseded facts stay current here)


def fact_filter(tenant_id: str, fact_ids: Iterable[str]) -> VectorFilter:
    """Every point of these facts of one tenant (and nothing else)."""
    return VectorFilter.where(tenant_id=tenant_id, kind=FACT_KIND).and_(Match("fact_id", tuple(sorted(fact_ids))))


def fact_points(
    tenant_id: str, fact_id: str, user_id: str, character_id: str, text: str, scope: str, model: str, chunker: Chunker
) -> list[PendingPoint]:
    """The points of one fact: its text (a sentence: one chunk), visible to its character only."""
    payload: dict[str, PayloadValue] = {
        "tenant_id": tenant_id,
        "user_id": user_id,
        "kind": FACT_KIND,
        "fact_id": fact_id,
        "source_id": fact_id,
        "character_id": character_id,
        "audience": [character_id],
        "scope": scope,
        "model": model,
    }
    return [
        PendingPoint(point_id(FACT_KIND, tenant_id, user_id, "", fact_id, i), chunk, payload | {"chunk": i})
        for i, chunk in enumerate(chunker(text) or [text])
    ]


def fact_ids_touched(envelopes: Iterable[EventEnvelope]) -> dict[str, set[str]]:
    """Per tenant: the fact ids a batch's knowledge events name (created, folded, retired or re-scoped), whose
    read model state :func:`plan_facts` needs."""
    out: dict[str, set[str]] = {}
    for env in envelopes:
        if env.type in FACT_EVENTS:
            ids = out.setdefault(env.tenant_id, set())
            ids.add(str(env.payload["fact_id"]))
            if env.type == FACTS_CONSOLIDATED.name:
                ids.update(str(i) for i in env.payload.get("consolidates", ()))
    return out


def plan_facts(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    model: str,
    chunker: Chunker,
    states: Mapping[tuple[str, str], FactState],
) -> None:
    """Add the facts' deletions and points to ``plan``. ``states``: (tenant, fact id) -> the knowledge read
    model's view of the fact, for the facts of :func:`fact_ids_touched` it holds.

    - ``knowledge.fact_learned`` / ``.facts_consolidated``: the fact's points, with its scope; a consolidation
      also deletes the points of the facts it folds.
    - ``knowledge.fact_retired``: the fact's points are deleted.
    - ``knowledge.fact_promoted`` / ``_unpromoted``: the fact's points are written again with the new scope
      (same ids: an overwrite), the text taken from the read model (the event carries none).

    Late redeliveries cannot undo later changes: a fact retired or folded in this batch, or no longer current
    in the read model, is not indexed (deletions run before upserts); the scope is the newest among the
    batch's events and the read model's (``scope_version``), so an old promotion redelivered after its undo,
    or an old creation after a promotion, keeps the current scope. Superseded facts keep their points: the
    read side takes only the current facts of the read model.
    """
    gone: dict[str, set[str]] = {}
    created: dict[tuple[str, str], FactLearned] = {}
    scope: dict[tuple[str, str], tuple[int, str]] = {}  # newest (version, scope) known per fact

    def newer(key: tuple[str, str], version: int, value: str) -> None:
        if key not in scope or version > scope[key][0]:
            scope[key] = (version, value)

    for env in envelopes:
        t = env.tenant_id
        if env.type in _FACT_CREATED:
            fact = (FactsConsolidated if env.type == FACTS_CONSOLIDATED.name else FactLearned).model_validate(
                env.payload
            )
            created[(t, fact.fact_id)] = fact
            newer((t, fact.fact_id), env.version, fact.scope)
            if isinstance(fact, FactsConsolidated):
                gone.setdefault(t, set()).update(fact.consolidates)
        elif env.type == FACT_RETIRED.name:
            gone.setdefault(t, set()).add(FactRetired.model_validate(env.payload).fact_id)
        elif env.type in _FACT_SCOPED:
            change = FactScopeChanged.model_validate(env.payload)
            newer((t, change.fact_id), env.version, change.to_scope)
    for (t, fid), known in states.items():
        if (t, fid) in scope:
            newer((t, fid), known.scope_version, known.scope)
    plan.deletions.extend(fact_filter(t, ids) for t, ids in sorted(gone.items()) if ids)
    for (t, fid), (_, current_scope) in scope.items():
        state = states.get((t, fid))
        if fid in gone.get(t, set()) or (state is not None and not state.current):
            continue
        if (t, fid) in created:
            f = created[(t, fid)]
            plan.points.extend(fact_points(t, fid, f.user_id, f.character_id, f.text, current_scope, model, chunker))
        elif state is not None:  # a scope change of a fact learned in an earlier batch
            plan.points.extend(
                fact_points(t, fid, state.user_id, state.character_id, state.text, current_scope, model, chunker)
            )
