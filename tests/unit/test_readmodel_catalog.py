"""The projection catalog (``mnemo/shared/readmodels/catalog.py``) as declared: what erasure, replay and the
index setup rely on when they go through every read model."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.shared.aggregates.conversation import ConversationState, fold
from mnemo.shared.events.recorded import REGISTRY, conversation_stream
from mnemo.shared.readmodels import catalog
from mnemo.shared.readmodels.catalog import CATALOG, FakeReadModelPorts
from mnemo.shared.readmodels.inmemory import conversation as fake_conversation
from mnemo.shared.readmodels.inmemory import knowledge as fake_knowledge
from mnemo.shared.readmodels.inmemory import lore as fake_lore
from mnemo.shared.readmodels.inmemory import summaries as fake_summaries
from mnemo.shared.readmodels.rows import NOT_READ_MODELS
from tests.envelopes import recorded

AT = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def test_each_read_model_and_collection_is_declared_once() -> None:
    names = [model.name for model in CATALOG]
    assert len(names) == len(set(names))
    collections = [c.name for c in catalog.erasable()]
    assert len(collections) == len(set(collections)), "a collection belongs to one read model"
    assert not set(collections) & NOT_READ_MODELS, "the log, its outbox and the keys are not read models"


def test_every_collection_has_an_index_that_starts_with_the_tenant() -> None:
    """Erasure reads a tenant's rows of every collection: without such an index it reads the collection whole."""
    for collection in catalog.erasable():
        firsts = [next(iter(index.document["key"])) for index in collection.indexes]
        assert "tenant_id" in firsts, collection.name


def test_only_the_platforms_bots_and_the_knowledge_positions_outlive_a_users_erasure() -> None:
    """A bot is the platform's; a knowledge stream's catch-up position is a version number, no one's data."""
    kept = [c.name for c in catalog.collections() if c.kept_on_user_erasure]
    assert kept == ["rm_bots", "knowledge_positions"]


def test_each_read_model_folds_registered_types_and_its_fake_the_same_ones() -> None:
    for model in CATALOG:
        assert model.folds, model.name
        assert model.folds <= set(REGISTRY.names()), model.name
    assert set(fake_conversation._APPLY) <= catalog.CONVERSATIONS.folds, "and every other type of its streams"
    assert set(fake_knowledge._APPLY) == catalog.KNOWLEDGE.folds
    assert set(fake_summaries._APPLY) == catalog.SUMMARIES.folds
    assert set(fake_lore._LEGACY_APPLY) == catalog.LEGACY_LORE.folds


def test_the_ports_are_made_once_per_read_model() -> None:
    fakes = FakeReadModelPorts()
    assert fakes.of(catalog.SUMMARIES) is fakes.of(catalog.SUMMARIES)
    assert fakes.of(catalog.SUMMARIES) is not FakeReadModelPorts().of(catalog.SUMMARIES)
    assert [m.name for m in CATALOG if m.fake is None] == ["documents"]
    with pytest.raises(LookupError, match="no in-memory fake: test get on a database"):
        fakes.of(catalog.DOCUMENTS).get  # noqa: B018


def test_replay_hands_the_conversations_every_event_of_a_forks_stream() -> None:
    """The conversation state advances one version at a time: an event type left out of the catalog's folds (a
    fork's first event, a swipe's alternative) would stop a replayed conversation there."""
    stream = conversation_stream("t", "u", "fork")
    common = {"user_id": "u", "conversation_id": "fork"}
    message = {**common, "role": "user", "author_id": None, "author_name": "", "content": "hi", "created_at": AT,
               "bot_ids": [], "persona_id": None, "tokens": 1}  # fmt: skip
    events = [
        recorded(
            "t",
            stream,
            1,
            "conversation.forked",
            {
                **common,
                "parent_conversation_id": "c",
                "from_message_id": "m0",
                "from_index": 0,
                "root_conversation_id": "c",
                "forked_at": AT,
            },
            AT,
        ),
        recorded("t", stream, 2, "message.recorded", {**message, "message_id": "m0", "index": 0}, AT),
        recorded(
            "t",
            stream,
            3,
            "message.alternative_recorded",
            {**common, "message_id": "a1", "swipe_of": "m0", "content": "hey", "created_at": AT, "tokens": 1},
            AT,
        ),
        recorded("t", stream, 4, "message.recorded", {**message, "message_id": "m1", "index": 1}, AT),
    ]
    replayed = fold(ConversationState.for_stream(stream), [e for e in events if e.type in catalog.CONVERSATIONS.folds])
    assert replayed == fold(ConversationState.for_stream(stream), events)
    assert (replayed.version, replayed.forked_from) == (4, "c")
