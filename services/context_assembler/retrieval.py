"""The I/O half of context assembly: gather bot, persona, history, knowledge, memories and retrieved messages.

Every part is fetched under its own deadline and every failure is caught, so a reply always comes: a part
that cannot be served is left out and named in ``degraded``:

- ``bot_profile``: the bot is unknown or the bots read model failed (a neutral system text is used).
- ``persona``: a persona was asked for (or is active) but is unknown, or its read failed.
- ``history``: the messages read model failed.
- ``embedder``: the query could not be embedded within the retrieval deadline (memories and retrieved
  are skipped).
- ``vector_index``: the vector search failed or ran past the deadline.
- ``memories`` / ``retrieved``: the search worked but the texts could not be read back.
- ``lore``: the lorebooks read model failed (no lore).
- ``knowledge`` / ``legacy_memories``: the facts or legacy-memory read model failed.
- ``persona_labels``: the names of the other personas in the history could not be read (their lines keep
  the platform's author name). ``lore:<uid>`` and ``knowledge:<fact_id>`` (or ``knowledge:+<n>``) come from
  the budget (``assembly.py``): a constant lore entry or a fact of the bot that did not fit.

Deadlines: the whole gathering has ``deadline_s`` and each read-model query ``read_timeout_s``, whichever ends
first, so a slow MongoDB delays the reply by at most that; the search (embed + vector queries) has
``retrieval_timeout_s`` of its own. A part that is late is given up, like a part that failed.

Per-character knowledge (``shared/presence.py``): everything is read as the speaking bot (``bot_id``) may
know it. History and retrieved messages are only those it witnessed (the read model filters on the stored
``bot_ids`` before decrypting; the vector filter on ``audience``); memories are summaries whose ``audience``
admits it, filtered in the query and checked again on read; knowledge is its own facts only (the fact search
filters ``audience`` on the bot itself, never ``*``). A character that
was away when a secret was told therefore finds the secret in no section.

Retrieval (embed + the vector searches) shares one deadline, ``retrieval_timeout_s``. Vector filters carry the
tenant, user, conversation, kind and audience inside the query, never applied afterwards. Messages already in
the history window are excluded in the query too (``must_not``), so they do not take the retrieved slots.
Memories come from every conversation of the user with this bot (past conversations are what characters
remember); a past conversation's memory is dropped when another persona is active now. Legacy memories are
the user's summaries turned into lore, found when they apply to the bot or the active persona.

Point payloads relied on (written by the embedding service): a message, or each chunk of a long one,
``{tenant_id, user_id, conversation_id, kind: "message", message_id, audience}``; a summary
``{tenant_id, user_id, conversation_id, kind: "summary", summary_id, audience}``; a legacy memory
``{tenant_id, user_id, kind: "legacy_memory", legacy_id, applies_to}``; a fact ``{tenant_id, kind: "fact",
fact_id, audience: [character], scope}``. Chunks of one item are merged, keeping the best score.

Knowledge: the bot's current facts come from the read model (``facts_for``: the source of truth for what is
current and visible); the fact search (:func:`facts_filter`, same query and deadline as the others) only
orders them: the facts it finds first, most relevant first, then the rest newest first, ``knowledge_limit`` in
all (:func:`relevant_first`). A found fact the read model does not list is not shown. Without a query or when
the search fails (named ``embedder`` / ``vector_index`` as for the others) the newest facts are shown.

Hybrid retrieval: when the query has words (``shared/sparse.py``), each search is one ``hybrid_search``, a
reciprocal rank fusion of the dense and the lexical prefetch, both filtered inside the query; it decides
WHICH summaries and messages are taken (the fused order, best chunk per message). RRF scores are
rank-based, not similarities, so they are never shown. A summary's or legacy memory's ``score`` is its best
dense cosine, read by a second, dense search restricted to the taken ids (sub-millisecond in-process).
Messages are searched as a pool of three times their slots, read back, and re-ranked by ``ranking.py``
(fused rank, conversation neighbours, the participant the query names, the time it refers to, near-duplicate
removal, MMR, an optional re-ranking model from ``rerank.py``); a retrieved message's ``score`` is that
relevance in [0, 1], the order it is packed in. ``min_score`` bounds the dense side only (a lexical match
enters with any cosine). Without words (e.g. only emoji) the search is dense only. The query is the user's
message; a short follow-up takes its topic from the last history messages (:func:`query_text`).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import re
import time
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from services.context_assembler.activation.compiled import ActiveBook
from services.context_assembler.assembly import (
    AssemblyInput,
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    MemoryItem,
    PersonaProfile,
    reachable_history,
)
from services.context_assembler.lore import LoreLoader
from services.context_assembler.ranking import Candidate, rank_candidates
from services.context_assembler.rerank import NoRerank, Reranker
from services.context_assembler.settings import AssemblerSettings
from services.context_assembler.timerefs import referred_window
from shared.embedders.port import Embedder
from shared.events.contract import ContextAssembleRequest
from shared.events.recorded import campaign_scope, character_scope, player_scope
from shared.presence import visible_audience
from shared.sparse import terms_vector, tokens
from shared.tokens import EstimatedTokens, TokenCounter
from shared.vectors.port import Match, Range, ScoredPoint, SparseVector, VectorFilter, VectorIndex

log = logging.getLogger(__name__)

T = TypeVar("T")
# When the request being gathered must be answered (event loop time); a read never waits past it.
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("assembler_deadline", default=None)


#: How many of the bot's current facts are read for the search to order: far above what one user's scope
#: holds (the extractor folds beyond 50 per user), so a relevant old fact is never cut before it is ranked.
#: ``facts_for`` decrypts every current fact anyway (supersession is computed on read), so this costs nothing.
KNOWLEDGE_POOL = 500


@dataclass(frozen=True)
class SummaryText:
    summary_id: str
    conversation_id: str
    text: str
    message_ids: tuple[str, ...]
    first_index: int
    participants: tuple[str, ...] = ()


@dataclass(frozen=True)
class LegacyText:
    legacy_id: str
    text: str
    message_ids: tuple[str, ...] = ()


class ContextReads(Protocol):
    """The read models the assembler needs (adapted in ``reads.py``); every method filters by tenant."""

    async def bot(self, tenant_id: str, bot_id: str) -> BotProfile | None: ...

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaProfile | None: ...

    async def active_persona_id(self, tenant_id: str, user_id: str, conversation_id: str) -> str | None: ...

    async def recent_messages(
        self, tenant_id: str, user_id: str, conversation_id: str, limit: int, bot_id: str
    ) -> list[ChatLine]:
        """The last ``limit`` live messages ``bot_id`` witnessed, oldest first."""
        ...

    async def messages_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, message_ids: Sequence[str], bot_id: str
    ) -> list[ChatLine]:
        """Those of the messages that are live and that ``bot_id`` witnessed."""
        ...

    async def summaries_by_ids(
        self, tenant_id: str, user_id: str, summary_ids: Sequence[str], bot_id: str
    ) -> list[SummaryText]:
        """Those of the user's live summaries (any conversation) whose audience admits ``bot_id``."""
        ...

    async def legacy_memories(self, tenant_id: str, user_id: str, legacy_ids: Sequence[str]) -> list[LegacyText]:
        """Those of the user's live legacy memories (lore entries made from memories)."""
        ...

    async def knowledge(
        self, tenant_id: str, user_id: str, bot_id: str, limit: int, campaign_id: str | None = None
    ) -> list[KnowledgeItem]:
        """The bot's current facts visible in this user's conversations (and the campaign's), newest first, at
        most ``limit``."""
        ...


@dataclass(frozen=True)
class _Found:
    """Search hits, best first; ``cosine`` (hybrid only) is the best dense cosine per key (summary id, ...)."""

    points: list[ScoredPoint]
    cosine: dict[str, float] | None


@dataclass(frozen=True)
class _Hits:
    memories: _Found = _Found([], None)
    messages: _Found = _Found([], None)
    legacy: _Found = _Found([], None)
    facts: tuple[ScoredPoint, ...] = ()  # the bot's facts, best first (order only: no score is shown)


def messages_filter(req: ContextAssembleRequest, exclude_message_ids: Sequence[str] = ()) -> VectorFilter:
    """This conversation's messages the speaking bot witnessed, minus those already in the history."""
    flt = VectorFilter.where(
        tenant_id=req.tenant_id, user_id=req.user_id, conversation_id=req.conversation_id, kind="message"
    ).and_(Match("audience", visible_audience(req.bot_id)))
    if exclude_message_ids:
        flt = VectorFilter(flt.must, (Match("message_id", tuple(exclude_message_ids)),))
    return flt


def memories_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The user's summaries of any conversation (past conversations are memories too) that the speaking bot
    may be shown: every message they cover was witnessed by it."""
    return VectorFilter.where(tenant_id=req.tenant_id, user_id=req.user_id, kind="summary").and_(
        Match("audience", visible_audience(req.bot_id))
    )


def legacy_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The user's legacy memories that apply to the speaking bot or to the active persona."""
    targets = (req.bot_id, req.persona_id) if req.persona_id else (req.bot_id,)
    return VectorFilter.where(tenant_id=req.tenant_id, user_id=req.user_id, kind="legacy_memory").and_(
        Match("applies_to", targets)
    )


def facts_filter(req: ContextAssembleRequest) -> VectorFilter:
    """The speaking bot's own facts (``audience`` is exactly the fact's character: never ``*``) in the scopes
    this request may see: this user's private ``player:<user>`` scope (the user id is in the value, so
    another user's private facts cannot match), the bot's ``character:<bot>`` scope and, with a campaign,
    ``campaign:<id>``. The read model's ``facts_for`` applies the same scopes again on read."""
    scopes = [player_scope(req.user_id), character_scope(req.bot_id)]
    if req.campaign_id is not None:
        scopes.append(campaign_scope(req.campaign_id))
    return VectorFilter.where(tenant_id=req.tenant_id, kind="fact").and_(
        Match("audience", (req.bot_id,)), Match("scope", tuple(scopes))
    )


def relevant_first(facts: Sequence[KnowledgeItem], found: Sequence[str], limit: int) -> list[KnowledgeItem]:
    """``facts`` (the bot's current facts, newest first) with those among ``found`` (fact ids, most relevant
    first) moved to the front in that order, then the rest newest first, at most ``limit``. A found id that is
    not among ``facts`` (retired, superseded, or not visible here) is ignored: ``facts`` decides what may be
    shown, the search only the order."""
    by_id = {f.fact_id: f for f in facts}
    first = [by_id[i] for i in dict.fromkeys(found) if i in by_id]
    taken = {f.fact_id for f in first}
    return [*first, *(f for f in facts if f.fact_id not in taken)][: max(0, limit)]


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
        value, when = p.payload.get(key), p.payload.get("created_at")
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


#: A user message with fewer content words than this is a follow-up ("Why?", "tell me more"): the query then
#: takes its topic from the last history messages, at ``HISTORY_WEIGHT`` of the message's own words.
SHORT_QUERY_WORDS = 3
HISTORY_MESSAGES = 2
HISTORY_WEIGHT = 0.3


def participant_names(history: Sequence[ChatLine]) -> set[str]:
    """First names (lowercased, 3 letters or more) of who speaks in the history: authors and personas."""
    names: set[str] = set()
    for line in history:
        for name in (line.author_name, line.persona_name):
            first = name.split()[0].lower() if name.split() else ""
            if len(first) >= 3:
                names.add(first)
    return names


def without_names(text: str, names: set[str]) -> str:
    """``text`` without the participants' names (and their possessive ``'s``); unchanged when nothing else
    would be left."""
    if not names:
        return text
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")(?:['’]s)?\b", re.IGNORECASE)
    stripped = " ".join(pattern.sub(" ", text).split())
    return stripped if tokens(stripped) else text


def query_text(req: ContextAssembleRequest, history: Sequence[ChatLine]) -> str:
    """The text the search embeds: the user's message; a short one (a follow-up such as "why?") after the
    last ``HISTORY_MESSAGES`` history messages, which carry its topic; an empty one: the last user message of
    the history. A standalone message is searched alone: history words would only dilute it.

    The names of the conversation's participants (as the history shows them) are taken out: in their own
    conversation they carry no topic, and they pull the query towards greetings that name them ("Hey
    Kate!") rather than what that person said (their own messages never name them). Who is asked about is
    used by the ranking instead (``ranking.named_participant``, from the unchanged user message)."""
    names = participant_names(history)
    if not req.user_message.strip():
        last = next((h.content for h in reversed(history) if h.role == "user" and h.content.strip()), "")
        return without_names(last, names)
    if len(tokens(req.user_message)) >= SHORT_QUERY_WORDS:
        return without_names(req.user_message, names)
    recent = [h.content for h in history[-HISTORY_MESSAGES:] if h.content.strip()]
    return without_names("\n".join([*recent, req.user_message]), names)


def query_sparse(req: ContextAssembleRequest, text: str) -> SparseVector:
    """The lexical query: the words of ``text`` (see :func:`query_text`), those of the user's own message at
    weight 1, those only from the history at ``HISTORY_WEIGHT``."""
    own = set(tokens(req.user_message))
    return terms_vector({t: 1.0 if not own or t in own else HISTORY_WEIGHT for t in tokens(text)})


async def _no_points() -> list[ScoredPoint]:
    return []


def dated_filter(flt: VectorFilter, message: str, now: float) -> VectorFilter | None:
    """``flt`` narrowed to the dated window ``message`` refers to (``timerefs.py``), or None when it names
    none, or only a month or day without a year (no range to filter on: ranking boosts those instead)."""
    window = referred_window(message, now)
    if window is None or (window.start is None and window.end is None):
        return None
    end = None if window.end is None else window.end - 0.001  # Range bounds are inclusive; the window's end is not
    return flt.and_(Range("created_at", gte=window.start, lte=end))


async def _nothing() -> list[ActiveBook]:
    return []


class Gatherer:
    def __init__(
        self,
        reads: ContextReads,
        index: VectorIndex | None,
        embedder: Embedder | None,
        settings: AssemblerSettings,
        lore: LoreLoader | None = None,
        counter: TokenCounter | None = None,
        reranker: Reranker | None = None,
    ) -> None:
        self._reads = reads
        self._reranker: Reranker = reranker or NoRerank()
        self._counter = counter or EstimatedTokens()
        self._lore = lore
        self._index = index
        self._embedder = embedder
        self._settings = settings

    async def _read(self, aw: Awaitable[T], part: str, degraded: list[str], default: T) -> T:
        timeout = self._settings.read_timeout_s
        deadline = _deadline.get()
        if deadline is not None:
            timeout = max(0.0, min(timeout, deadline - asyncio.get_running_loop().time()))
        try:
            return await asyncio.wait_for(aw, timeout)
        except Exception as exc:  # a read model failure degrades that part, never the reply
            log.warning("context part %s unavailable: %s: %s", part, type(exc).__name__, exc)
            degraded.append(part)
            return default

    async def gather(self, req: ContextAssembleRequest) -> AssemblyInput:
        """Everything the assembly needs, within ``deadline_s`` (plus the retrieval's own deadline when the
        search starts late): each read model query is bounded by what is left of it."""
        degraded: list[str] = []
        s = self._settings
        _deadline.set(asyncio.get_running_loop().time() + s.deadline_s)
        # The bot's facts depend on nothing else: read them while the rest is gathered and searched.
        knowing = asyncio.ensure_future(self._knowledge(req, degraded))
        try:
            lore_books = self._read(self._lore.books(req), "lore", degraded, []) if self._lore else _nothing()
            bot, persona, history, books = await asyncio.gather(
                self._read(self._reads.bot(req.tenant_id, req.bot_id), "bot_profile", degraded, None),
                self._persona(req, degraded),
                self._read(
                    self._reads.recent_messages(
                        req.tenant_id, req.user_id, req.conversation_id, s.history_limit, req.bot_id
                    ),
                    "history",
                    degraded,
                    [],
                ),
                lore_books,
            )
            if bot is None and "bot_profile" not in degraded:
                degraded.append("bot_profile")
            history = await self._label_personas(req, history, persona, degraded)
            lore: list[LoreItem] = []
            if books and self._lore is not None:
                similar = await self._lore.similar(req, books, history, degraded)  # vector/hybrid entries
                lore = await self._lore.activate(
                    req, books, history, bot=bot, persona=persona, similar=similar, degraded=degraded
                )
            reachable = reachable_history(req.bot_id, bot, persona, history, req.max_tokens, lore, self._counter)
            shown = [h.message_id for h in reachable]
            hits = await self._search(req, query_text(req, history), shown, degraded)
            persona_id = req.persona_id or (persona.persona_id if persona else None)
            memories, legacy, retrieved, facts = await asyncio.gather(
                self._memories(req, persona_id, hits.memories, degraded),
                self._legacy(req, hits.legacy, degraded),
                self._retrieved(req, hits.messages, set(shown), degraded),
                knowing,
            )
            knowledge = relevant_first(facts, list(best_per_key(hits.facts, "fact_id")), s.knowledge_limit)
            return AssemblyInput(
                bot_id=req.bot_id,
                bot=bot,
                persona=persona,
                memories=[*memories, *legacy],
                retrieved=retrieved,
                knowledge=knowledge,
                history=history,
                lore=lore,
                max_tokens=req.max_tokens,
                min_history=s.min_history,
                degraded=degraded,
                counter=self._counter,
            )
        finally:
            knowing.cancel()  # only if the gathering failed before awaiting it

    async def _label_personas(
        self,
        req: ContextAssembleRequest,
        history: list[ChatLine],
        persona: PersonaProfile | None,
        degraded: list[str],
    ) -> list[ChatLine]:
        """Each user line gets the current name of the persona that wrote it (the active one is known; the
        others are read, under the deadline). A name that cannot be read leaves the platform's author name
        as the label, and ``persona_labels`` in ``degraded``."""
        names = {persona.persona_id: persona.name} if persona is not None else {}
        others = list(dict.fromkeys(h.persona_id for h in history if h.persona_id and h.persona_id not in names))
        if others:
            found = await self._read(
                asyncio.gather(*(self._reads.persona(req.tenant_id, req.user_id, pid) for pid in others)),
                "persona_labels",
                degraded,
                [],
            )
            names.update({p.persona_id: p.name for p in found if p is not None})
        return [replace(h, persona_name=names[h.persona_id]) if h.persona_id in names else h for h in history]

    async def _persona(self, req: ContextAssembleRequest, degraded: list[str]) -> PersonaProfile | None:
        persona_id = req.persona_id
        if persona_id is None:
            persona_id = await self._read(
                self._reads.active_persona_id(req.tenant_id, req.user_id, req.conversation_id),
                "persona",
                degraded,
                None,
            )
        if persona_id is None:
            return None
        persona = await self._read(
            self._reads.persona(req.tenant_id, req.user_id, persona_id), "persona", degraded, None
        )
        if persona is None and "persona" not in degraded:
            degraded.append("persona")
        return persona

    async def _search(
        self, req: ContextAssembleRequest, text: str, history_ids: Sequence[str], degraded: list[str]
    ) -> _Hits:
        s = self._settings
        sections = any((s.memories_limit, s.retrieved_limit, s.legacy_limit))  # the parts only search fills
        if not text.strip() or not (sections or s.knowledge_limit):
            return _Hits()
        if self._embedder is None or self._index is None:
            # The facts are shown without the search (newest first): a missing search degrades only the
            # sections that need it.
            if sections:
                degraded.append("embedder" if self._embedder is None else "vector_index")
            return _Hits()
        stage = "embedder"
        try:
            async with asyncio.timeout(s.retrieval_timeout_s):
                [vector] = await self._embedder.embed([text])
                stage = "vector_index"
                sparse = query_sparse(req, text)
                in_window = dated_filter(messages_filter(req, history_ids), req.user_message, time.time())
                memories, messages, dated, legacy, facts = await asyncio.gather(
                    self._find(vector, sparse, memories_filter(req), s.memories_limit * 2, "summary_id"),
                    # A pool of three times the slots, re-ranked in _retrieved (and several chunks of one
                    # message may match).
                    self._pool(vector, sparse, messages_filter(req, history_ids), s.retrieved_limit * 3),
                    # The time the message refers to ("on 29 Dec 2023") searched on its own, so messages of
                    # that day compete even when the whole conversation has better matches.
                    self._pool(vector, sparse, in_window, s.retrieved_limit) if in_window else _no_points(),
                    self._find(vector, sparse, legacy_filter(req), s.legacy_limit * 2, "legacy_id"),
                    self._pool(vector, sparse, facts_filter(req), s.knowledge_limit),
                )
        except Exception as exc:  # TimeoutError included: retrieval is optional, the reply is not
            log.warning("retrieval skipped (%s): %s: %s", stage, type(exc).__name__, exc)
            degraded.append(stage)
            return _Hits()
        # Both lists carry fusion scores of the same scale; best_per_key interleaves them by score.
        return _Hits(memories, _Found([*messages, *dated], None), legacy, tuple(facts))

    async def _pool(
        self, vector: Sequence[float], sparse: SparseVector, flt: VectorFilter, limit: int
    ) -> list[ScoredPoint]:
        """Candidate messages, best first: hybrid (RRF scores) when the query has words, else dense."""
        assert self._index is not None
        if limit <= 0:
            return []
        if sparse:
            return await self._index.hybrid_search(vector, sparse, flt, limit, self._settings.min_score)
        return await self._index.search(vector, flt, limit, self._settings.min_score)

    async def _find(
        self, vector: Sequence[float], sparse: SparseVector, flt: VectorFilter, limit: int, key: str
    ) -> _Found:
        """Hybrid when the query has words, dense only otherwise; nothing when ``limit`` is 0."""
        assert self._index is not None
        if limit <= 0:
            return _Found([], None)
        if sparse:
            return _Found(*await self._hybrid(vector, sparse, flt, limit, key))
        return _Found(await self._index.search(vector, flt, limit, self._settings.min_score), None)

    async def _hybrid(
        self, vector: Sequence[float], sparse: SparseVector, flt: VectorFilter, limit: int, key: str
    ) -> tuple[list[ScoredPoint], dict[str, float]]:
        """Fused hits (RRF order) and the best dense cosine of each of their ``key`` values."""
        assert self._index is not None
        fused = await self._index.hybrid_search(vector, sparse, flt, limit, self._settings.min_score)
        keys = tuple(dict.fromkeys(v for h in fused if isinstance(v := h.payload.get(key), str)))
        if not keys:
            return fused, {}
        # Every chunk of the taken ids competes here; 8 chunks per id is far above what the chunker makes of
        # a chat message, and an id whose chunks all fall past it just shows a 0 score.
        dense = await self._index.search(vector, flt.and_(Match(key, keys)), len(keys) * 8)
        return fused, best_per_key(dense, key)

    async def _memories(
        self,
        req: ContextAssembleRequest,
        persona_id: str | None,
        found: _Found,
        degraded: list[str],
    ) -> list[MemoryItem]:
        # Twice the slots are searched: memories of a past conversation with another persona are dropped here.
        scores = ranked_keys(found.points, "summary_id", self._settings.memories_limit * 2, found.cosine)
        if not scores:
            return []
        texts = await self._read(
            self._reads.summaries_by_ids(req.tenant_id, req.user_id, list(scores), req.bot_id),
            "memories",
            degraded,
            [],
        )
        by_id = {t.summary_id: t for t in texts if persona_took_part(t, req, persona_id)}
        taken = [sid for sid in scores if sid in by_id][: self._settings.memories_limit]
        return [
            MemoryItem(sid, by_id[sid].text, scores[sid], by_id[sid].message_ids, by_id[sid].first_index)
            for sid in taken
        ]

    async def _retrieved(
        self,
        req: ContextAssembleRequest,
        found: _Found,
        exclude: set[str],
        degraded: list[str],
    ) -> list[ChatLine]:
        """The pool of searched messages (several times the slots, fused order) read back and re-ranked by
        ``ranking.rank_candidates``: neighbours, the named participant, the referred time, near-duplicates;
        each line's ``score`` is its relevance in [0, 1], monotone with the order it is packed in."""
        kept = [p for p in found.points if p.payload.get("message_id") not in exclude]
        pool = list(best_per_key(kept, "message_id"))
        if not pool or self._settings.retrieved_limit == 0:
            return []
        lines = await self._read(
            self._reads.messages_by_ids(req.tenant_id, req.user_id, req.conversation_id, pool, req.bot_id),
            "retrieved",
            degraded,
            [],
        )
        by_id = {line.message_id: line for line in lines}
        ranked = rank_candidates(
            req.user_message,
            candidates(pool, by_id, created_at_by_key(kept, "message_id")),
            self._settings.retrieved_limit,
            now=time.time(),
            rerank=await self._rerank(req.user_message, [by_id[k] for k in pool if k in by_id]),
        )
        return [replace(by_id[key], score=score) for key, score in ranked]

    async def _rerank(self, query: str, lines: Sequence[ChatLine]) -> dict[str, float] | None:
        """The re-ranking model's scores by message id, or None (no model, no query, or it failed: the
        fused order stands, a re-ranker is an improvement, never a dependency)."""
        if not query.strip() or not lines:
            return None
        try:
            scores = await self._reranker.rerank(query, [line.content for line in lines])
        except Exception as exc:
            log.warning("re-ranker skipped: %s: %s", type(exc).__name__, exc)
            return None
        if scores is None or len(scores) != len(lines):
            return None
        return {line.message_id: score for line, score in zip(lines, scores, strict=True)}

    async def _legacy(self, req: ContextAssembleRequest, found: _Found, degraded: list[str]) -> list[MemoryItem]:
        scores = ranked_keys(found.points, "legacy_id", self._settings.legacy_limit, found.cosine)
        if not scores:
            return []
        texts = await self._read(
            self._reads.legacy_memories(req.tenant_id, req.user_id, list(scores)), "legacy_memories", degraded, []
        )
        return [
            MemoryItem(t.legacy_id, t.text, scores[t.legacy_id], t.message_ids, kind="legacy_memory")
            for t in texts
            if t.legacy_id in scores
        ]

    async def _knowledge(self, req: ContextAssembleRequest, degraded: list[str]) -> list[KnowledgeItem]:
        """ALL the bot's current facts visible here (newest first, up to ``KNOWLEDGE_POOL``): the search
        (``facts_filter``) may rank any of them among the ``knowledge_limit`` shown (``relevant_first``)."""
        if self._settings.knowledge_limit == 0:
            return []
        return await self._read(
            self._reads.knowledge(
                req.tenant_id,
                req.user_id,
                req.bot_id,
                max(KNOWLEDGE_POOL, self._settings.knowledge_limit),
                req.campaign_id,
            ),
            "knowledge",
            degraded,
            [],
        )
