"""``ContextReads`` over the MongoDB read models (messages, bots, personas, conversations, summaries).

A thin adapter: it maps read-model views to the assembler's own value types, so ``assembly.py`` depends on
nothing but the wire contract. Every query is scoped by tenant (and by user and conversation where the
data belongs to one).
"""

from __future__ import annotations

from collections.abc import Sequence

from services.context_assembler.assembly import BotProfile, ChatLine, PersonaProfile
from services.context_assembler.retrieval import SummaryText
from shared.readmodels import MessageView, ReadModels
from shared.readmodels.summaries import SummariesReadModel


def _line(m: MessageView) -> ChatLine:
    return ChatLine(m.message_id, m.index, m.role, m.author_name, m.content)


class ReadModelReads:
    def __init__(self, models: ReadModels, summaries: SummariesReadModel) -> None:
        self._models = models
        self._summaries = summaries

    async def bot(self, tenant_id: str, bot_id: str) -> BotProfile | None:
        view = await self._models.bot(tenant_id, bot_id)
        return BotProfile(view.bot_id, view.name, view.system_prompt) if view else None

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaProfile | None:
        view = await self._models.persona(tenant_id, user_id, persona_id)
        return PersonaProfile(view.persona_id, view.name, view.description, tuple(view.traits)) if view else None

    async def active_persona_id(self, tenant_id: str, user_id: str, conversation_id: str) -> str | None:
        state = await self._models.conversation(tenant_id, user_id, conversation_id)
        return state.persona_id if state else None

    async def recent_messages(self, tenant_id: str, user_id: str, conversation_id: str, limit: int) -> list[ChatLine]:
        return [_line(m) for m in await self._models.recent(tenant_id, user_id, conversation_id, limit)]

    async def messages_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, message_ids: Sequence[str]
    ) -> list[ChatLine]:
        return [_line(m) for m in await self._models.by_ids(tenant_id, user_id, conversation_id, message_ids)]

    async def summaries_by_ids(
        self, tenant_id: str, user_id: str, conversation_id: str, summary_ids: Sequence[str]
    ) -> list[SummaryText]:
        views = await self._summaries.by_ids(tenant_id, summary_ids, user_id=user_id, conversation_id=conversation_id)
        return [SummaryText(v.summary_id, v.text, v.message_ids, v.first_index) for v in views]
