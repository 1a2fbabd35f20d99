"""The dispatch tables of the log consumers: every type they fold is registered, and each in-memory fake folds
exactly the event types its MongoDB adapter does (the contract suite checks how; this checks which)."""

from mnemo.shared.aggregates import lorebook
from mnemo.shared.events.recorded import BOT_RECORDED, PERSONA_RECORDED, REGISTRY
from mnemo.shared.readmodels import knowledge, legacy_lore, messages, summaries
from mnemo.shared.readmodels.inmemory import conversation as fake_conversation
from mnemo.shared.readmodels.inmemory import knowledge as fake_knowledge
from mnemo.shared.readmodels.inmemory import lore as fake_lore
from mnemo.shared.readmodels.inmemory import summaries as fake_summaries


def test_every_folded_type_is_registered():
    tables = [
        lorebook._APPLY,
        fake_conversation._APPLY,
        fake_knowledge._APPLY,
        fake_lore._LEGACY_APPLY,
        fake_summaries._APPLY,
    ]
    for table in tables:
        assert set(table) <= set(REGISTRY.names())


def test_the_lore_fold_covers_every_lorebook_type():
    lorebook_types = {n for n in REGISTRY.names() if n.startswith("lorebook.")}
    assert lorebook.LORE_EVENTS == frozenset(lorebook._APPLY) == lorebook_types


def test_each_fake_folds_the_types_its_adapter_folds():
    assert set(fake_knowledge._APPLY) == set(knowledge._APPLY) == knowledge.KNOWLEDGE_EVENTS
    assert set(fake_summaries._APPLY) == set(summaries._APPLY)
    assert set(fake_lore._LEGACY_APPLY) == set(legacy_lore._APPLY)
    assert set(fake_conversation._APPLY) == messages.MESSAGE_EVENT_TYPES | {BOT_RECORDED.name, PERSONA_RECORDED.name}
