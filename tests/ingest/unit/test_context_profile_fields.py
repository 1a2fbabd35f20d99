"""The bot and persona fields the context uses (gender, age, knowledge sharing, persona instructions): from the
public upsert through the recorded event to the profiles read model, encrypted at rest, and old events
without them still read."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

from mnemo.shared.aggregates.profiles import decide_profile
from mnemo.shared.crypto import TenantCipher
from mnemo.shared.events.recorded import BotRecorded, PersonaRecorded, bot_stream
from mnemo.shared.readmodels.profiles import bot_view, bot_write, persona_view, persona_write
from mnemo_client.wire.contract import BotUpserted, PersonaUpserted
from tests.envelopes import recorded

T0 = datetime(2026, 3, 1, tzinfo=UTC)


@pytest.fixture
def cipher() -> TenantCipher:
    return TenantCipher("t1", "k1", os.urandom(32))


def test_new_bot_fields_flow_to_the_read_model_encrypted(cipher: TenantCipher):
    cmd = BotUpserted(tenant_id="t1", bot_id="b1", name="Eli", system_prompt="Be kind.", gender="nonbinary",
                      age="looks 20, is 300", knowledge_sharing="secretive", updated_at=T0)  # fmt: skip
    (event,) = decide_profile(cmd).events
    assert BotRecorded.model_validate(event.payload).knowledge_sharing == "secretive"
    write = bot_write(recorded("t1", bot_stream("t1", "b1"), 1, event.type, event.payload, T0), cipher)
    assert write is not None
    doc = {"_id": bot_stream("t1", "b1"), **write._doc}
    assert "300" not in str(doc["age"]), "encrypted at rest"
    assert "nonbinary" not in str(doc["gender"])
    view = bot_view(doc, cipher)
    assert (view.gender, view.age, view.knowledge_sharing) == ("nonbinary", "looks 20, is 300", "secretive")


def test_persona_instructions_flow_to_the_read_model_encrypted(cipher: TenantCipher):
    cmd = PersonaUpserted(tenant_id="t1", user_id="u1", persona_id="p1", name="Tobin",
                          instructions="Call me Captain.", updated_at=T0)  # fmt: skip
    (event,) = decide_profile(cmd).events
    assert PersonaRecorded.model_validate(event.payload).instructions == "Call me Captain."
    write = persona_write(recorded("t1", "persona/t1/u1/p1", 1, event.type, event.payload, T0), cipher)
    assert write is not None
    doc = {"_id": "persona/t1/u1/p1", **write._doc}
    assert "Captain" not in str(doc["instructions"])
    assert persona_view(doc, cipher).instructions == "Call me Captain."


def test_events_recorded_before_the_fields_existed_still_read(cipher: TenantCipher):
    old_bot = {"bot_id": "b1", "owner_user_id": None, "name": "Eli", "system_prompt": "", "updated_at": T0}
    write = bot_write(recorded("t1", bot_stream("t1", "b1"), 1, "bot.recorded", old_bot, T0), cipher)
    assert write is not None
    view = bot_view({"_id": bot_stream("t1", "b1"), **write._doc}, cipher)
    assert (view.gender, view.age, view.knowledge_sharing) == (None, None, None)
    old_persona = {"user_id": "u1", "persona_id": "p1", "name": "T", "description": "", "traits": [], "updated_at": T0}
    assert PersonaRecorded.model_validate(old_persona).instructions == ""


def test_an_unknown_knowledge_sharing_value_is_rejected_at_the_contract():
    with pytest.raises(ValueError, match="knowledge_sharing"):
        BotUpserted(tenant_id="t1", bot_id="b1", name="Eli", knowledge_sharing="telepathic", updated_at=T0)


def test_an_upsert_without_the_new_fields_keeps_the_event_id_it_had_before_they_existed():
    from mnemo.shared.aggregates.decision import digest as _digest
    from mnemo.shared.events.envelope import deterministic_id

    bot = BotUpserted(tenant_id="t1", bot_id="b1", name="Eli", system_prompt="Be kind.", updated_at=T0)
    before = {k: v for k, v in bot.model_dump(mode="json").items() if k not in ("gender", "age", "knowledge_sharing")}
    key = _digest(json.dumps(before, sort_keys=True, ensure_ascii=False))
    assert decide_profile(bot).events[0].event_id == deterministic_id("t1", "bot", "b1", "upserted", key)
    given = BotUpserted(tenant_id="t1", bot_id="b1", name="Eli", system_prompt="Be kind.", age="30", updated_at=T0)
    assert decide_profile(given).events[0].event_id != decide_profile(bot).events[0].event_id
    persona = PersonaUpserted(tenant_id="t1", user_id="u1", persona_id="p1", name="T", updated_at=T0)
    old = {k: v for k, v in persona.model_dump(mode="json").items() if k != "instructions"}
    old_key = _digest(json.dumps(old, sort_keys=True, ensure_ascii=False))
    expected = deterministic_id("t1", "u1", "persona", "p1", "upserted", old_key)
    assert decide_profile(persona).events[0].event_id == expected
