"""The I/O half of context assembly: gather bot, persona, history, memories and retrieved messages.

Every part is fetched under its own deadline and every failure is caught, so a reply always comes: a part
that cannot be served is left out and named in ``degraded``:

- ``bot_profile``: the bot is unknown or the bots read model failed (a neutral system text is used).
- ``persona``: a persona was asked for (or is active) but is unknown, or its read failed.
- ``history``: the messages read model failed.
- ``embedder``: the query could not be embedded within the retrieval deadline (memories and retrieved
  are skipped).
- ``vector_index``: the vector search failed or ran past the deadline.
- ``memories`` / ``retrieved``: the search worked but the texts could not be read back.
- ``lore``: the lorebooks read model failed (no lore); ``lore:<uid>``: a constant entry did not fit.

Retrieval (embed + both searches) shares one deadline, ``retrieval_timeout_s``. Vector filters carry the
tenant, user, conversation and kind inside the query, never applied afterwards. Messages already in the
history window are excluded in the query too (``must_not``), so they do not take the retrieved slots.

Point payloads relied on (written by the embedding service): a message, or each chunk of a long one,
``{tenant_id, user_id, conversation_id, kind: "message", message_id}``; a summary
``{tenant_id, user_id, conversation_id, kind: "summary", summary_id}``. Chunks of one message are merged,
keeping the best score.

Hybrid retrieval: when the query has words (``shared/sparse.py``), each search is one ``hybrid_search``, a
reciprocal rank fusion of the dense and the lexical prefetch, both filtered inside the query; it decides
WHICH summaries and messages are taken (the fused order, best chunk per message). RRF scores are
rank-based, not similarities, so they are never shown: each taken item's ``score`` is its best dense cosine,
read by a second, dense search restricted to the taken ids (sub-millisecond in-process). ``min_score``
bounds the dense side only (a lexical match enters with any cosine), so a retrieved item's score may be
below ``min_score``. Without words (e.g. only emoji) the search is dense only, as before.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from services.context_assembler.assembly import (
    AssemblyInput,
    BotProfile,
    ChatLine,
    LoreItem,
    MemoryItem,
    PersonaProfile,
    reachable_history,
)
from services.context_assembler.lore import LoreLoader, activate_lore
from shared.embedders.port import Embedder
from shared.events.contract import ContextAssembleRequest
from shared.lore.compiled import ActiveBook
from shared.sparse import query_vector
from shared.vectors.port import Match, ScoredPoint, SparseVector, VectorFilter, VectorIndex

log = logging.getLogger(__name__)

T = TypeVar("T")


class AssemblerSettings(BaseSettings):
    """``MNEMO_ASSEMBLER_*``."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_ASSEMBLER_", extra="ignore")

    history_limit: int = Field(40, ge=0, description="most recent messages loaded as the history window")
    min_history: int = Field(4, ge=0, description="newest messages placed before memories and retrieved")
    memories_limit: int = Field(4, ge=0)
    retrieved_limit: int = Field(6, ge=0)
    min_score: float = Field(0.3, description="cosine below which a search hit is ignored")
    retrieval_timeout_s: float = Field(1.5, gt=0, description="embed + vector searches, together")
    read_timeout_s: float = Field(2.0, gt=0, description="each read-model query")
    max_workers: int = Field(32, ge=1, description="requests answered concurrently per replica")


@dataclass(frozen=True)
class SummaryText:
    summary_id: str
    text: str
    message_ids: tuple[str, ...]
    first_index: int


class ContextReads(Protocol):
    """The read models the assembler needs (adapted in ``reads.py``); every method filters by tenant."""

    async def bot(self, tenant_id: str, bot_id: str) -> BotProfile | None: ...

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaProfile | None: ...

    async def active_persona_id(self, tenant_id: str, user_id: str, conversation_id: str) -> str | None: ...

    async def recent_messages(self, tenant_id: str, user_id: str, conversation_id: str, limit: int) -> list[ChatLine]:
        """The last ``limit`` live messages, oldest first."""
        ...

    async def messages_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, message_ids: Sequence[str]
    ) -> list[ChatLine]: ...

    async def summaries_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, summary_ids: Sequence[str]
    ) -> list[SummaryText]: ...


@dataclass
class _Hits:
    """Search hits, best first; ``*_cosine`` (hybrid only) is the best dense cosine per summary/message id."""

    memories: list[ScoredPoint] = field(default_factory=list)
    messages: list[ScoredPoint] = field(default_factory=list)
    memories_cosine: dict[str, float] | None = None
    messages_cosine: dict[str, float] | None = None


def scope_filter(req: ContextAssembleRequest, kind: str, exclude_message_ids: Sequence[str] = ()) -> VectorFilter:
    flt = VectorFilter.where(
        tenant_id=req.tenant_id, user_id=req.user_id, conversation_id=req.conversation_id, kind=kind
    )
    if exclude_message_ids:
        flt = VectorFilter(flt.must, (Match("message_id", tuple(exclude_message_ids)),))
    return flt


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


def query_text(req: ContextAssembleRequest, history: Sequence[ChatLine]) -> str:
    """The user's message, or when it is empty the last user message of the history."""
    if req.user_message.strip():
        return req.user_message
    return next((h.content for h in reversed(history) if h.role == "user" and h.content.strip()), "")


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
    ) -> None:
        self._reads = reads
        self._lore = lore
        self._index = index
        self._embedder = embedder
        self._settings = settings

    async def _read(self, aw: Awaitable[T], part: str, degraded: list[str], default: T) -> T:
        try:
            return await asyncio.wait_for(aw, self._settings.read_timeout_s)
        except Exception as exc:  # a read model failure degrades that part, never the reply
            log.warning("context part %s unavailable: %s: %s", part, type(exc).__name__, exc)
            degraded.append(part)
            return default

    async def gather(self, req: ContextAssembleRequest) -> AssemblyInput:
        degraded: list[str] = []
        s = self._settings
        lore_books = self._read(self._lore.books(req), "lore", degraded, []) if self._lore else _nothing()
        bot, persona, history, books = await asyncio.gather(
            self._read(self._reads.bot(req.tenant_id, req.bot_id), "bot_profile", degraded, None),
            self._persona(req, degraded),
            self._read(
                self._reads.recent_messages(req.tenant_id, req.user_id, req.conversation_id, s.history_limit),
                "history",
                degraded,
                [],
            ),
            lore_books,
        )
        if bot is None and "bot_profile" not in degraded:
            degraded.append("bot_profile")
        lore: list[LoreItem] = []
        if books and self._lore is not None:
            macros = {"char": bot.name if bot else req.bot_id, "user": persona.name if persona else "User"}
            lore = activate_lore(
                self._lore.compiled(req.tenant_id, books, macros),
                history,
                req.user_message,
                max_tokens=req.max_tokens,
                seed=f"{req.conversation_id}:{history[-1].index + 1 if history else 0}",
                user_name=macros["user"],
                character=macros["char"],
            )
        reachable = reachable_history(req.bot_id, bot, persona, history, req.max_tokens, lore)
        shown = [h.message_id for h in reachable]
        hits = await self._search(req, query_text(req, history), shown, degraded)
        memories = await self._memories(req, hits.memories, hits.memories_cosine, degraded)
        retrieved = await self._retrieved(req, hits.messages, hits.messages_cosine, set(shown), degraded)
        return AssemblyInput(
            bot_id=req.bot_id,
            bot=bot,
            persona=persona,
            memories=memories,
            retrieved=retrieved,
            history=history,
            lore=lore,
            max_tokens=req.max_tokens,
            min_history=s.min_history,
            degraded=degraded,
        )

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
        hits = _Hits()
        if not text.strip() or (s.memories_limit == 0 and s.retrieved_limit == 0):
            return hits
        if self._embedder is None:
            degraded.append("embedder")
            return hits
        if self._index is None:
            degraded.append("vector_index")
            return hits
        stage = "embedder"
        try:
            async with asyncio.timeout(s.retrieval_timeout_s):
                [vector] = await self._embedder.embed([text])
                stage = "vector_index"
                sparse = query_vector(text)
                if sparse:
                    (hits.memories, hits.memories_cosine), (hits.messages, hits.messages_cosine) = await asyncio.gather(
                        self._hybrid(vector, sparse, scope_filter(req, "summary"), s.memories_limit, "summary_id"),
                        self._hybrid(
                            vector,
                            sparse,
                            scope_filter(req, "message", history_ids),
                            s.retrieved_limit * 3,
                            "message_id",
                        ),
                    )
                else:
                    hits.memories, hits.messages = await asyncio.gather(
                        self._index.search(vector, scope_filter(req, "summary"), s.memories_limit, s.min_score),
                        # Several chunks of one message may match: fetch extra so dedupe still fills the slots.
                        self._index.search(
                            vector, scope_filter(req, "message", history_ids), s.retrieved_limit * 3, s.min_score
                        ),
                    )
        except Exception as exc:  # TimeoutError included: retrieval is optional, the reply is not
            log.warning("retrieval skipped (%s): %s: %s", stage, type(exc).__name__, exc)
            degraded.append(stage)
            return _Hits()
        return hits

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
        points: Sequence[ScoredPoint],
        cosine: dict[str, float] | None,
        degraded: list[str],
    ) -> list[MemoryItem]:
        scores = ranked_keys(points, "summary_id", self._settings.memories_limit, cosine)
        if not scores:
            return []
        texts = await self._read(
            self._reads.summaries_by_ids(req.tenant_id, req.user_id, req.conversation_id, list(scores)),
            "memories",
            degraded,
            [],
        )
        return [
            MemoryItem(t.summary_id, t.text, scores[t.summary_id], t.message_ids, t.first_index)
            for t in texts
            if t.summary_id in scores
        ]

    async def _retrieved(
        self,
        req: ContextAssembleRequest,
        points: Sequence[ScoredPoint],
        cosine: dict[str, float] | None,
        exclude: set[str],
        degraded: list[str],
    ) -> list[ChatLine]:
        kept = [p for p in points if p.payload.get("message_id") not in exclude]
        scores = ranked_keys(kept, "message_id", self._settings.retrieved_limit, cosine)
        if not scores:
            return []
        lines = await self._read(
            self._reads.messages_by_ids(req.tenant_id, req.user_id, req.conversation_id, list(scores)),
            "retrieved",
            degraded,
            [],
        )
        return [
            ChatLine(line.message_id, line.index, line.role, line.author_name, line.content, scores[line.message_id])
            for line in lines
            if line.message_id in scores
        ]
