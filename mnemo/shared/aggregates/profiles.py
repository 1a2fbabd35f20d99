"""The profile aggregates, a bot's stream (``bot/<tenant>/<bot>``) and a persona's
(``persona/<tenant>/<user>/<persona>``): their events and their decider (pure, no I/O; ingest calls it).

A profile's stream is a list of upserts, each recorded as given; the profiles read model keeps the latest
(``bot_of`` / ``persona_of`` in ``mnemo/shared/readmodels/profiles.py`` build its view from the event), so
there is no state to decide on. Idempotency: ``bot.recorded`` / ``persona.recorded`` ids are the profile's ids
and a hash of the upsert's content, so the same upsert delivered twice is stored once.
"""

from __future__ import annotations

import json

from mnemo.shared.aggregates.decision import Decision, digest
from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.events.recorded import BotRecorded, PersonaRecorded, new_event
from mnemo.shared.mapping import mapped
from mnemo_client.wire.contract import BotUpserted, PersonaUpserted

#: The payload classes of the profile streams (a bot's stream holds the first, a persona's the second).
EVENTS = (BotRecorded, PersonaRecorded)

# Profile fields added after v1 was published: they enter the content key only when given, so an upsert
# recorded before they existed keeps its event id when it is delivered again (nothing new is appended).
LATER_PROFILE_FIELDS = ("gender", "age", "knowledge_sharing", "instructions")


def _content_key(cmd: BotUpserted | PersonaUpserted) -> str:
    data = cmd.model_dump(mode="json")
    for name in LATER_PROFILE_FIELDS:
        if data.get(name) in (None, ""):
            data.pop(name, None)
    return digest(json.dumps(data, sort_keys=True, ensure_ascii=False))


def decide_profile(cmd: BotUpserted | PersonaUpserted) -> Decision:
    """A bot or persona upsert is recorded as given; the same upsert delivered twice has the same id."""
    if isinstance(cmd, BotUpserted):
        event_id = deterministic_id(cmd.tenant_id, "bot", cmd.bot_id, "upserted", _content_key(cmd))
        payload: BotRecorded | PersonaRecorded = mapped(BotRecorded, cmd)
    else:
        event_id = deterministic_id(
            cmd.tenant_id, cmd.user_id, "persona", cmd.persona_id, "upserted", _content_key(cmd)
        )
        payload = mapped(PersonaRecorded, cmd)
    return Decision((new_event(payload, tenant_id=cmd.tenant_id, event_id=event_id, occurred_at=cmd.updated_at),))
