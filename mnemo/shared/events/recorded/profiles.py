"""``bot/<tenant>/<bot>`` and ``persona/<tenant>/<user>/<persona>``: bot and persona profiles as upserted."""

from __future__ import annotations

from datetime import datetime

from mnemo.shared.events.envelope import stream_id
from mnemo.shared.events.recorded.base import REGISTRY, RecordedPayload
from mnemo_client.wire.contract import KnowledgeSharing


# --- bot/<tenant>/<bot> ----------------------------------------------------------------------------
def bot_stream(tenant_id: str, bot_id: str) -> str:
    return stream_id("bot", tenant_id, bot_id)


class BotRecorded(RecordedPayload):
    """``bot.recorded``: a bot profile as upserted. ``gender``, ``age`` and ``knowledge_sharing`` were added
    later with null defaults, so older events read as "not given" (no new schema version needed)."""

    bot_id: str
    owner_user_id: str | None
    name: str
    system_prompt: str
    updated_at: datetime
    gender: str | None = None
    age: str | None = None
    knowledge_sharing: KnowledgeSharing | None = None


BOT_RECORDED = REGISTRY.register("bot.recorded", BotRecorded, encrypted=("name", "system_prompt", "gender", "age"))


# --- persona/<tenant>/<user>/<persona> -----------------------------------------------------------------
def persona_stream(tenant_id: str, user_id: str, persona_id: str) -> str:
    return stream_id("persona", tenant_id, user_id, persona_id)


class PersonaRecorded(RecordedPayload):
    """``persona.recorded``: a persona as upserted; ``instructions`` (added later) defaults to empty."""

    user_id: str
    persona_id: str
    name: str
    description: str
    traits: list[str]
    updated_at: datetime
    instructions: str = ""


PERSONA_RECORDED = REGISTRY.register(
    "persona.recorded",
    PersonaRecorded,
    encrypted=("name", "description", "traits", "instructions"),
    key_owner="user_id",
)
