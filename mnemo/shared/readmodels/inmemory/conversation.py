"""In-memory fake of the conversation read models (``ports.ConversationReadModel``): messages, conversations,
bots and personas, folded with the MongoDB adapter's rules (see ``mnemo/shared/readmodels/inmemory/__init__.py``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from mnemo.shared.aggregates.conversation import ConversationState, as_utc, by_stream, folded_states
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    BOT_RECORDED,
    MESSAGE_DELETED,
    MESSAGE_EDITED,
    MESSAGE_RECORDED,
    PERSONA_RECORDED,
    bot_stream,
    conversation_stream,
    persona_stream,
)
from mnemo.shared.mapping import mapped
from mnemo.shared.readmodels.dispatch import apply_each
from mnemo.shared.readmodels.message_reads import MessageRange, MessageReads
from mnemo.shared.readmodels.messages import MessageKey, MessageStatus, MessageView, message_doc_id
from mnemo.shared.readmodels.profiles import BotView, PersonaView, bot_of, persona_of

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def naive_utc(value: datetime) -> datetime:
    """A datetime as MongoDB hands it back to a client that is not tz-aware: UTC, without tzinfo."""
    return value.astimezone(UTC).replace(tzinfo=None) if value.tzinfo is not None else value


# --- conversations, messages, profiles ----------------------------------------------------------------
class InMemoryReadModels(MessageReads):
    """``ReadModels`` in memory (port: ``ConversationReadModel``)."""

    def __init__(self) -> None:
        self.states: dict[str, ConversationState] = {}
        self.messages: dict[str, tuple[MessageView, int]] = {}  # doc id -> (view, version)
        self.bots: dict[str, tuple[BotView, int]] = {}
        self.personas: dict[str, tuple[PersonaView, int]] = {}

    async def apply(
        self, envelopes: Iterable[EventEnvelope], *, known_states: Mapping[str, ConversationState] | None = None
    ) -> dict[str, ConversationState]:
        streams = by_stream(envelopes)
        apply_each(self, (env for events in streams.values() for env in events), _APPLY)
        before, after = await folded_states(streams, known_states, self.conversation_states)
        for s, st in after.items():
            stored = self.states.get(s)
            if st.version > before[s].version and (stored is None or stored.version < st.version):
                self.states[s] = st
        return after

    def _on_message_recorded(self, env: EventEnvelope) -> None:
        m = MESSAGE_RECORDED.parse(env.payload)
        doc_id = message_doc_id(env.tenant_id, m.user_id, m.conversation_id, m.message_id)
        if doc_id not in self.messages:
            created_at = as_utc(m.created_at)
            view = mapped(
                MessageView,
                m,
                tenant_id=env.tenant_id,
                created_at=created_at,
                deleted=False,
                edited_at=None,
                deleted_at=None,
            )
            self.messages[doc_id] = (view, env.version)

    def _on_message_edited(self, env: EventEnvelope) -> None:
        e = MESSAGE_EDITED.parse(env.payload)
        doc_id = message_doc_id(env.tenant_id, e.user_id, e.conversation_id, e.message_id)
        if (found := self.messages.get(doc_id)) and found[1] < env.version:
            edited = replace(found[0], content=e.content, tokens=e.tokens, edited_at=as_utc(e.edited_at))
            self.messages[doc_id] = (edited, env.version)

    def _on_message_deleted(self, env: EventEnvelope) -> None:
        d = MESSAGE_DELETED.parse(env.payload)
        doc_id = message_doc_id(env.tenant_id, d.user_id, d.conversation_id, d.message_id)
        if (found := self.messages.get(doc_id)) and found[1] < env.version:
            gone = replace(found[0], deleted=True, deleted_at=as_utc(d.deleted_at))
            self.messages[doc_id] = (gone, env.version)

    def _on_bot_recorded(self, env: EventEnvelope) -> None:
        b = BOT_RECORDED.parse(env.payload)
        doc_id = bot_stream(env.tenant_id, b.bot_id)
        if (old := self.bots.get(doc_id)) is None or old[1] < env.version:
            self.bots[doc_id] = (bot_of(env.tenant_id, b), env.version)

    def _on_persona_recorded(self, env: EventEnvelope) -> None:
        p = PERSONA_RECORDED.parse(env.payload)
        doc_id = persona_stream(env.tenant_id, p.user_id, p.persona_id)
        if (old := self.personas.get(doc_id)) is None or old[1] < env.version:
            self.personas[doc_id] = (persona_of(env.tenant_id, p), env.version)

    async def conversation_states(self, stream_ids: Sequence[str]) -> dict[str, ConversationState]:
        unique = list(dict.fromkeys(stream_ids))
        return {s: self.states.get(s) or ConversationState.for_stream(s) for s in unique}

    async def conversation(self, tenant_id: str, user_id: str, conversation_id: str) -> ConversationState | None:
        return self.states.get(conversation_stream(tenant_id, user_id, conversation_id))

    async def listing(
        self, tenant_id: str, user_id: str | None, *, limit: int, offset: int = 0
    ) -> tuple[list[ConversationState], int]:
        theirs = sorted(
            (s for s in self.states.values() if s.tenant_id == tenant_id and user_id in (None, s.user_id)),
            key=lambda s: s.stream_id,
        )
        # Newest first, as MongoDB sorts them descending: a conversation without messages (null) comes last.
        theirs.sort(key=lambda s: (s.last_message_at is not None, s.last_message_at or _EPOCH), reverse=True)
        return theirs[offset : offset + limit], len(theirs)

    async def family(
        self, tenant_id: str, user_id: str, conversation_id: str, *, root: str | None = None
    ) -> frozenset[str]:
        if root is None:
            state = await self.conversation(tenant_id, user_id, conversation_id)
            root = state.family_root if state is not None else conversation_id
        forks = [
            s.conversation_id
            for s in self.states.values()
            if (s.tenant_id, s.user_id, s.root_conversation_id) == (tenant_id, user_id, root)
        ]
        return frozenset({root, conversation_id, *forks})

    async def message_status(
        self, keys: Iterable[MessageKey], *, scene: bool = False
    ) -> dict[MessageKey, MessageStatus]:
        out: dict[MessageKey, MessageStatus] = {}
        for key in keys:
            found = self.messages.get(message_doc_id(*key))
            if found is None:
                continue
            m, version = found
            status = MessageStatus(index=m.index, deleted=m.deleted, version=version)
            if scene:
                status = replace(
                    status,
                    role=m.role,
                    author_id=m.author_id,
                    bot_ids=tuple(m.bot_ids),
                    persona_id=m.persona_id,
                    created_at=m.created_at,
                )
            out[key] = status
        return out

    def _of(self, tenant_id: str, user_id: str, conversation_id: str) -> list[MessageView]:
        return [
            m
            for m, _ in self.messages.values()
            if (m.tenant_id, m.user_id, m.conversation_id) == (tenant_id, user_id, conversation_id)
        ]

    async def messages_in(self, q: MessageRange) -> list[MessageView]:
        if q.message_ids is not None:
            found = [self.messages[i][0] for i in q.doc_ids() if i in self.messages]
        else:
            found = self._of(q.tenant_id, q.user_id, q.conversation_id)
        wanted = (m for m in found if q.covers(m.index) and q.admits(m.deleted, m.bot_ids or ()))
        return sorted(wanted, key=lambda m: m.index)

    async def bot(self, tenant_id: str, bot_id: str) -> BotView | None:
        found = self.bots.get(bot_stream(tenant_id, bot_id))
        return found[0] if found else None

    async def persona(self, tenant_id: str, user_id: str, persona_id: str) -> PersonaView | None:
        found = self.personas.get(persona_stream(tenant_id, user_id, persona_id))
        return found[0] if found else None


# Event type -> how ``InMemoryReadModels.apply`` writes it to the messages, bots or personas (the same
# rules as ``messages.MESSAGE_WRITES`` and ``profiles``); conversation states are folded by ``fold``.
_APPLY: dict[str, Callable[[InMemoryReadModels, EventEnvelope], None]] = {
    MESSAGE_RECORDED.name: InMemoryReadModels._on_message_recorded,
    MESSAGE_EDITED.name: InMemoryReadModels._on_message_edited,
    MESSAGE_DELETED.name: InMemoryReadModels._on_message_deleted,
    BOT_RECORDED.name: InMemoryReadModels._on_bot_recorded,
    PERSONA_RECORDED.name: InMemoryReadModels._on_persona_recorded,
}
