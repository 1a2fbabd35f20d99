"""Bots and personas read models: the latest recorded profile of each, user text encrypted.

Document ids are the log stream ids (``bot/<tenant>/<bot>``, ``persona/<tenant>/<user>/<persona>``) and
the AES-GCM associated data of the encrypted fields. A document is replaced only by an event with a higher
log version (the last recorded upsert wins); a stale write fails the ``version`` filter and its upsert hits
the ``_id`` index, an expected duplicate-key error the repository ignores.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from pymongo import ReplaceOne

from mnemo.shared.aggregates.conversation import as_utc
from mnemo.shared.crypto import TenantCipher
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    BOT_RECORDED,
    PERSONA_RECORDED,
    BotRecorded,
    PersonaRecorded,
    bot_stream,
    persona_stream,
)
from mnemo.shared.mapping import mapped

BOT_ENCRYPTED = frozenset({"name", "system_prompt", "gender", "age"})
PERSONA_ENCRYPTED = frozenset({"name", "description", "traits", "instructions"})


@dataclass(frozen=True)
class BotView:
    tenant_id: str
    bot_id: str
    owner_user_id: str | None
    name: str
    system_prompt: str
    updated_at: datetime
    gender: str | None = None
    age: str | None = None
    knowledge_sharing: str | None = None  # open | guarded | secretive (see the BotUpserted contract)


@dataclass(frozen=True)
class PersonaView:
    tenant_id: str
    user_id: str
    persona_id: str
    name: str
    description: str
    traits: list[str]
    updated_at: datetime
    instructions: str = ""


def _replace_if_newer(doc_id: str, version: int, doc: dict[str, Any]) -> ReplaceOne[dict[str, Any]]:
    return ReplaceOne({"_id": doc_id, "version": {"$lt": version}}, {**doc, "version": version}, upsert=True)


def bot_of(tenant_id: str, bot: BotRecorded) -> BotView:
    """The profile a ``bot.recorded`` event records: what the MongoDB adapter stores and its fake keeps."""
    return mapped(BotView, bot, tenant_id=tenant_id, updated_at=as_utc(bot.updated_at))


def persona_of(tenant_id: str, persona: PersonaRecorded) -> PersonaView:
    """The profile a ``persona.recorded`` event records (as ``bot_of``)."""
    return mapped(PersonaView, persona, tenant_id=tenant_id, updated_at=as_utc(persona.updated_at))


def bot_write(envelope: EventEnvelope, cipher: TenantCipher) -> ReplaceOne[dict[str, Any]] | None:
    if envelope.type != BOT_RECORDED.name:
        return None
    bot = bot_of(envelope.tenant_id, BOT_RECORDED.parse(envelope.payload))
    doc_id = bot_stream(envelope.tenant_id, bot.bot_id)
    return _replace_if_newer(doc_id, envelope.version, cipher.encrypt_fields(doc_id, asdict(bot), BOT_ENCRYPTED))


def persona_write(envelope: EventEnvelope, cipher: TenantCipher) -> ReplaceOne[dict[str, Any]] | None:
    if envelope.type != PERSONA_RECORDED.name:
        return None
    persona = persona_of(envelope.tenant_id, PERSONA_RECORDED.parse(envelope.payload))
    doc_id = persona_stream(envelope.tenant_id, persona.user_id, persona.persona_id)
    doc = asdict(persona)
    return _replace_if_newer(doc_id, envelope.version, cipher.encrypt_fields(doc_id, doc, PERSONA_ENCRYPTED))


def bot_view(doc: dict[str, Any], cipher: TenantCipher) -> BotView:
    plain = cipher.decrypt_fields(doc["_id"], doc, BOT_ENCRYPTED)
    return BotView(
        tenant_id=plain["tenant_id"],
        bot_id=plain["bot_id"],
        owner_user_id=plain.get("owner_user_id"),
        name=plain["name"],
        system_prompt=plain.get("system_prompt") or "",
        updated_at=as_utc(plain["updated_at"]),
        gender=plain.get("gender"),
        age=plain.get("age"),
        knowledge_sharing=plain.get("knowledge_sharing"),
    )


def persona_view(doc: dict[str, Any], cipher: TenantCipher) -> PersonaView:
    plain = cipher.decrypt_fields(doc["_id"], doc, PERSONA_ENCRYPTED)
    return PersonaView(
        tenant_id=plain["tenant_id"],
        user_id=plain["user_id"],
        persona_id=plain["persona_id"],
        name=plain["name"],
        description=plain.get("description") or "",
        traits=[str(t) for t in plain.get("traits") or []],
        updated_at=as_utc(plain["updated_at"]),
        instructions=plain.get("instructions") or "",
    )
