"""``ContextReads`` over the MongoDB read models (messages, profiles, conversations, summaries, facts, legacy lore).

A thin adapter: it maps read-model views to the assembler's own value types, so ``assembly.py`` depends on
nothing but the wire contract. Every query is scoped by tenant (and by user and conversation where the
data belongs to one).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from mnemo.services.context_assembler.gather.as_of import AsOf
from mnemo.services.context_assembler.gather.cache import LogCache, cached, tenant_topic
from mnemo.services.context_assembler.gather.conversations import ConversationMessages
from mnemo.services.context_assembler.gather.invalidations import facts_topic, forks_topic, summaries_topic
from mnemo.services.context_assembler.gather.memo import once
from mnemo.services.context_assembler.gather.port import FactsAsked, HistoryAsked, LegacyText, SummaryText
from mnemo.services.context_assembler.items import BotProfile, ChatLine, KnowledgeItem, PersonaProfile
from mnemo.shared.aggregates.conversation import ConversationState
from mnemo.shared.events.recorded import bot_stream, persona_stream
from mnemo.shared.presence import bot_may_see
from mnemo.shared.readmodels import MessageView
from mnemo.shared.readmodels.catalog import CONVERSATIONS, KNOWLEDGE, LEGACY_LORE, SUMMARIES, ReadModelPorts
from mnemo.shared.readmodels.ports import ConversationReadModel, KnowledgePort, LegacyLorePort, SummariesPort
from mnemo.shared.readmodels.summaries import SummaryView


def _line(m: MessageView) -> ChatLine:
    # The persona that wrote a user message: the one active when it was posted (the contract's author_id is
    # the persona id for user messages when no persona_id was given). Its name is filled in by the gatherer.
    persona_id = (m.persona_id or m.author_id) if m.role == "user" else None
    return ChatLine(
        m.message_id, m.index, m.role, m.author_name, m.content, author_id=m.author_id, persona_id=persona_id
    )


class ReadModelReads:
    def __init__(
        self,
        models: ConversationReadModel,
        summaries: SummariesPort,
        knowledge: KnowledgePort,
        legacy: LegacyLorePort,
        cache: LogCache | None = None,
    ) -> None:
        """``cache``: the profiles, the fork family and the facts are kept until the log says they changed."""
        self._cache = cache
        self._models = models
        self._summaries = summaries
        self._knowledge = knowledge
        self._legacy = legacy
        self._messages = ConversationMessages()  # kept while the log shows only new messages (conversations.py)

    @classmethod
    def over(cls, ports: ReadModelPorts, cache: LogCache | None = None) -> ReadModelReads:
        return cls(ports.of(CONVERSATIONS), ports.of(SUMMARIES), ports.of(KNOWLEDGE), ports.of(LEGACY_LORE), cache)

    async def bot(self, tenant_id: str, bot_id: str) -> BotProfile | None:
        async def read() -> BotProfile | None:
            view = await self._models.bot(tenant_id, bot_id)
            if view is None:
                return None
            return BotProfile(view.bot_id, view.name, view.system_prompt, view.gender, view.age, view.knowledge_sharing)

        sources = (bot_stream(tenant_id, bot_id), tenant_topic(tenant_id))
        return await cached(self._cache, ("bot", tenant_id, bot_id), sources, read)

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaProfile | None:
        async def read() -> PersonaProfile | None:
            view = await self._models.persona(tenant_id, user_id, persona_id)
            if view is None:
                return None
            return PersonaProfile(view.persona_id, view.name, view.description, tuple(view.traits), view.instructions)

        sources = (persona_stream(tenant_id, user_id, persona_id), tenant_topic(tenant_id))
        return await cached(self._cache, ("persona", tenant_id, user_id, persona_id), sources, read)

    async def _conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None:
        """The conversation's state, read once per request (``memo.py``): the active persona and the history's
        end both come from it."""
        key = ("conversation", tenant_id, user_id, conversation_id)
        return await once(key, lambda: self._models.conversation(tenant_id, user_id, conversation_id))

    async def active_persona_id(self, tenant_id: str, user_id: str, conversation_id: str) -> str | None:
        state = await self._conversation(tenant_id, user_id, conversation_id)
        return state.persona_id if state else None

    async def family(self, tenant_id: str, user_id: str, conversation_id: str) -> frozenset[str]:
        state = await self._conversation(tenant_id, user_id, conversation_id)
        root = state.family_root if state is not None else conversation_id
        return await cached(
            self._cache,
            ("family", tenant_id, user_id, conversation_id, root),
            (forks_topic(tenant_id, user_id), tenant_topic(tenant_id)),
            lambda: self._models.family(tenant_id, user_id, conversation_id, root=root),
        )

    async def recent_messages(self, asked: HistoryAsked) -> list[ChatLine]:
        tenant_id, user_id, conversation_id, bot_id = (
            asked.tenant_id,
            asked.user_id,
            asked.conversation_id,
            asked.bot_id,
        )
        limit, until_index = asked.limit, asked.until_index
        if limit <= 0:
            return []
        if until_index is not None:  # a context as of an earlier message: read as it was, past the kept window
            views = await self._models.recent(
                tenant_id, user_id, conversation_id, limit, before_index=until_index + 1, visible_to=bot_id
            )
            return [_line(m) for m in views]
        state = await self._conversation(tenant_id, user_id, conversation_id)

        async def read_range(start: int, end: int | None) -> list[ChatLine]:
            views = await self._models.message_range(tenant_id, user_id, conversation_id, start, end, visible_to=bot_id)
            return [_line(m) for m in views]

        async def read_recent(wanted: int, end: int) -> list[ChatLine]:
            views = await self._models.recent(
                tenant_id, user_id, conversation_id, wanted, before_index=end, visible_to=bot_id
            )
            return [_line(m) for m in views]

        key = (tenant_id, user_id, conversation_id, bot_id)
        return await self._messages.recent(key, state, limit, read_range, read_recent)

    async def message_at(self, tenant_id: str, user_id: str, conversation_id: str, message_id: str) -> AsOf | None:
        # No ``visible_to``: a context as of a message the speaking bot did not witness is still that moment.
        found = await self._models.by_ids(tenant_id, user_id, conversation_id, [message_id])
        m = next((v for v in found if v.message_id == message_id and v.conversation_id == conversation_id), None)
        if m is None:
            return None
        persona_id = (m.persona_id or m.author_id) if m.role == "user" else None
        return AsOf(conversation_id, message_id, m.index, m.created_at, persona_id)

    async def messages_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, message_ids: Sequence[str], bot_id: str
    ) -> list[ChatLine]:
        state = await self._conversation(tenant_id, user_id, conversation_id)

        async def read(ids: Sequence[str]) -> list[ChatLine]:
            views = await self._models.by_ids(tenant_id, user_id, conversation_id, ids, visible_to=bot_id)
            return [_line(m) for m in views]

        return await self._messages.by_ids((tenant_id, user_id, conversation_id, bot_id), state, message_ids, read)

    async def summaries_by_ids(
        self, tenant_id: str, user_id: str, summary_ids: Sequence[str], bot_id: str
    ) -> list[SummaryText]:
        # The vector filter already applied the audience; checking again here means a stale or hand-made
        # point can never show a bot a summary of messages it did not witness. Kept as read (any bot, any
        # status) until the log relays a summary event of the user: a request reads only the ones it lacks.
        ids: dict[Hashable, str] = {("summary", tenant_id, user_id, sid): sid for sid in summary_ids}

        async def read(keys: list[Hashable]) -> dict[Hashable, SummaryView]:
            views = await self._summaries.by_ids(tenant_id, [ids[k] for k in keys], user_id=user_id)
            return {("summary", tenant_id, user_id, v.summary_id): v for v in views}

        sources = (summaries_topic(tenant_id, user_id), tenant_topic(tenant_id))
        found = await (read(list(ids)) if self._cache is None else self._cache.read_each(list(ids), sources, read))
        views = [v for v in found.values() if v is not None]
        return [
            SummaryText(
                v.summary_id,
                v.conversation_id,
                v.text,
                v.cited_message_ids,
                v.first_index,
                v.participants,
                v.last_index,
                v.end_at,
            )
            for v in views
            if v.status == "active" and bot_may_see(bot_id, v.audience)
        ]

    async def legacy_memories(self, tenant_id: str, user_id: str, legacy_ids: Sequence[str]) -> list[LegacyText]:
        views = await self._legacy.by_ids(tenant_id, legacy_ids, user_id=user_id)
        return [LegacyText(v.legacy_id, v.text, v.message_ids, v.end_at) for v in views]

    async def knowledge(self, asked: FactsAsked) -> list[KnowledgeItem]:
        async def read() -> list[KnowledgeItem]:
            facts = await self._knowledge.facts_for(
                asked.tenant_id,
                asked.bot_id,
                user_id=asked.user_id,
                campaign_id=asked.campaign_id,
                limit=asked.limit,
                exclude_conversations=asked.exclude_conversations,
                learned_by=asked.learned_by,
            )
            return [KnowledgeItem(f.fact_id, f.text, tuple(f.message_ids)) for f in facts]

        sources = (facts_topic(asked.tenant_id), tenant_topic(asked.tenant_id))
        found = await cached(self._cache, ("facts", asked), sources, read)
        return list(found)  # the caller may reorder its list; the kept one stays as read
