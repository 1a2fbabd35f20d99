"""The demo `make run` plays: every event it publishes is a valid contract payload, its lorebook imports
cleanly, and the sample request is a valid context request."""

from __future__ import annotations

import json

from mnemo.runtime.demo import player
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared import subjects
from mnemo_client.wire import contract
from mnemo_client.wire.lore_contract import LoreImportRequest

MODELS = {
    subjects.MESSAGE_CREATED: contract.MessageCreated,
    subjects.BOT_UPSERTED: contract.BotUpserted,
    subjects.PERSONA_UPSERTED: contract.PersonaUpserted,
}


def test_every_demo_event_validates_against_the_wire_contract() -> None:
    scene = player.load_scene()
    events = player.scene_events(scene)
    assert {s for s, _ in events} == set(MODELS)
    for subject, payload in events:
        MODELS[subject].model_validate(payload)
    created = [p for s, p in events if s == subjects.MESSAGE_CREATED]
    assert len({p["message_id"] for p in created}) == len(scene["messages"])


def test_demo_lorebook_imports_without_warnings_and_attaches_to_the_bots() -> None:
    scene = player.load_scene()
    request = LoreImportRequest.model_validate(json.loads(player.lore_import(scene)))
    assert request.attach_to_bots == [b["bot_id"] for b in scene["bots"]]
    assert request.data is not None
    result = import_lorebook(request.data)
    assert len(result.book.entries) == len(scene["lorebook"]["entries"])
    assert result.warnings == []


def test_sample_request_is_a_valid_context_request_mentioning_a_lore_key() -> None:
    scene = player.load_scene()
    request = contract.ContextAssembleRequest.model_validate(player.sample_request(scene))
    keys = {k for e in scene["lorebook"]["entries"].values() for k in e["key"]}
    assert any(k in request.user_message.lower() for k in keys)
