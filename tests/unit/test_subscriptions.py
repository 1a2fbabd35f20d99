"""The log consumers' handler tables (``mnemo.shared.subscriptions``): what a table derives (filter subjects,
decrypted fields), its dispatch (parse once, reject with the reason, pass over what it does not handle), and
each service's durable filtering exactly the types its table handles."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from faststream.nats import NatsRouter
from pydantic import BaseModel

from mnemo.services.embedding.domain import HANDLERS as EMBEDDING
from mnemo.services.memory_extractor.app import create_router as memory_extractor_router
from mnemo.services.memory_extractor.handlers import HANDLERS as MEMORY_EXTRACTOR
from mnemo.services.memory_extractor.settings import KnowledgeSettings
from mnemo.services.summarizer.handlers import HANDLERS as SUMMARIZER
from mnemo.shared import subjects
from mnemo.shared.consumers import log_consumer_router
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.delivery import Item, Rejection
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    REGISTRY,
    LorebookImported,
    MessageDeletionRecorded,
    MessageRecorded,
    SummaryRetired,
)
from mnemo.shared.subscriptions import Delivered, EventHandlers
from tests.components import Msg, deps
from tests.fakes.embedders import ConstantEmbedder

T0 = datetime(2026, 1, 1, tzinfo=UTC)
TABLES = {"summarizer": SUMMARIZER, "memory-extractor": MEMORY_EXTRACTOR, "embedding": EMBEDDING}


def envelope(type_name: str, payload: dict[str, Any], n: int = 1) -> EventEnvelope:
    return EventEnvelope(
        event_id=f"e{n}", type=type_name, schema_version=REGISTRY.get(type_name).schema_version, stream_id="s/t",
        version=n, tenant_id="t", occurred_at=T0, recorded_at=T0, payload=payload,
    )  # fmt: skip


def deleted(n: int, message_id: str = "m") -> EventEnvelope:
    payload = {"user_id": "u", "conversation_id": "c", "message_id": message_id, "deleted_at": T0.isoformat()}
    return envelope("message.deleted", payload, n)


def test_the_filter_subjects_are_the_log_subjects_of_the_handled_types() -> None:
    for name, table in TABLES.items():
        assert table.filter_subjects() == sorted(subjects.log_subject(t) for t in table.types), name
        assert subjects.LOG_ALL not in table.filter_subjects(), name
        assert table.types <= set(REGISTRY.names()), name


def test_each_consumer_handles_what_it_uses_and_nothing_else() -> None:
    assert SUMMARIZER.types == {"message.recorded", "message.edited", "message.deleted", "summary.created",
                                "summary.retired"}  # fmt: skip
    assert "knowledge.witnessed" not in SUMMARIZER.types | EMBEDDING.types, "witnessings are the extractor's"
    assert "lorebook.imported" not in SUMMARIZER.types | MEMORY_EXTRACTOR.types
    assert "lore.timed_state_recorded" not in SUMMARIZER.types | MEMORY_EXTRACTOR.types | EMBEDDING.types


def test_a_view_decrypts_only_the_fields_it_reads() -> None:
    assert EMBEDDING.decrypted("lorebook.imported") == frozenset(), "a book import is indexed from the read model"
    assert EMBEDDING.decrypted("lorebook.entry_updated") == frozenset()
    assert EMBEDDING.decrypted("message.recorded") == {"author_name", "content"}
    assert EMBEDDING.decrypted("document.chunked") == {"chunks"}
    assert SUMMARIZER.decrypted("summary.created") == {"text", "emotional_context"}
    assert SUMMARIZER.decrypted("knowledge.witnessed") == frozenset(), "not handled: nothing decrypted"


def test_a_table_names_each_type_once_and_views_only_fields_of_the_event() -> None:
    def noop(context: None, event: Delivered[BaseModel]) -> None:
        return None

    with pytest.raises(ValueError, match="handled twice"):
        EventHandlers[None]().on(MessageDeletionRecorded, noop).on(MessageDeletionRecorded, noop)

    class Wrong(BaseModel):
        lorebook_id: str
        colour: str

    with pytest.raises(ValueError, match="colour"):
        EventHandlers[None]().on_view(LorebookImported, Wrong, noop)


async def test_dispatch_parses_once_rejects_the_invalid_and_passes_over_the_unhandled() -> None:
    seen: list[tuple[str, str, str | None]] = []

    async def on_deleted(context: list[str], event: Delivered[MessageDeletionRecorded]) -> None:
        assert isinstance(event.payload, MessageDeletionRecorded)
        context.append(event.payload.message_id)
        seen.append(("deleted", event.envelope.event_id, event.traceparent))

    table = EventHandlers[list[str]]().on(MessageDeletionRecorded, on_deleted)
    bad = envelope("message.deleted", {"user_id": "u"}, 2)
    other = envelope("summary.retired", {"anything": 1}, 3)
    batch = [
        Item(deleted(1, "m1"), Msg("1")),
        Item(bad, Msg("2")),
        Item(other, Msg("3")),
        Item(deleted(4, "m4"), Msg("4")),
    ]
    context: list[str] = []

    rejections = await table.dispatch(context, batch)  # type: ignore[arg-type]  # Msg stands for the message

    assert context == ["m1", "m4"], "in log order, the invalid and the unhandled left out"
    assert [r.msg for r in rejections] == [batch[1].msg]
    assert "invalid message.deleted payload" in rejections[0].reason
    assert [s[1] for s in seen] == ["e1", "e4"]


def test_sort_reports_the_invalid_and_refuses_an_asynchronous_handler() -> None:
    def on_retired(context: list[str], event: Delivered[SummaryRetired]) -> None:
        context.append(event.payload.summary_id)

    retired = {"summary_id": "s1", "user_id": "u", "conversation_id": "c", "reason": "deleted",
               "retired_at": T0.isoformat()}  # fmt: skip
    context: list[str] = []
    invalid = (
        EventHandlers[list[str]]()
        .on(SummaryRetired, on_retired)
        .sort(context, [envelope("summary.retired", retired), envelope("summary.retired", {"summary_id": "s2"}, 2)])
    )
    assert context == ["s1"]
    assert [(e.event_id, "invalid summary.retired payload" in r) for e, r in invalid] == [("e2", True)]

    async def later(context: None, event: Delivered[MessageDeletionRecorded]) -> None:
        return None

    with pytest.raises(TypeError, match="asynchronous"):
        EventHandlers[None]().on(MessageDeletionRecorded, later).sort(None, [deleted(1)])


def durable_filters(router: NatsRouter) -> dict[str, list[str]]:
    """Durable name -> the subjects it filters, of every JetStream subscriber ``router`` registers."""
    out = {}
    for sub in router.subscribers:
        config: Any = sub.config
        if getattr(config, "durable_name", None):  # not the request-reply subscribers
            out[config.durable_name] = list(config.filter_subjects) or [str(sub.subject.template)]  # type: ignore[attr-defined]
    return out


def test_the_routers_durables_filter_exactly_their_tables() -> None:
    d = deps(embedder=ConstantEmbedder())
    extractor = memory_extractor_router(d, KnowledgeSettings())
    assert durable_filters(extractor) == {"mnemo_memory_extractor_main": MEMORY_EXTRACTOR.filter_subjects()}
    for service, table in TABLES.items():
        router = log_consumer_router(d, service=service, handlers=table, handle=no_batch, title=service)
        assert durable_filters(router) == {subjects.durable(service): table.filter_subjects()}


async def no_batch(items: list[Item[EventEnvelope]]) -> list[Rejection]:
    return []


class CountingKeys(InMemoryKeyStore):
    """A key store that counts the reads of data keys."""

    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self, scope: str) -> Any:
        self.reads += 1
        return await super().get(scope)

    async def find(self, key_ids: Sequence[str]) -> Any:
        self.reads += 1
        return await super().find(key_ids)


async def test_the_codec_decrypts_only_what_it_is_asked_and_reads_no_key_for_nothing() -> None:
    keys = CountingKeys()
    kek = os.urandom(32)
    codec = EventCodec(REGISTRY, FieldCipher(kek, keys))
    book = {"lorebook_id": "b1", "owner_user_id": "u", "name": "Secret book", "format": "sillytavern",
            "book": {"entries": []}, "original": {"x": 1}, "warnings": [], "imported_at": T0.isoformat()}  # fmt: skip
    wire = EventCodec.to_wire(await codec.encode(envelope("lorebook.imported", book)))
    assert (await codec.from_wire(wire)).payload["name"] == "Secret book"
    reader = EventCodec(REGISTRY, FieldCipher(kek, keys))  # another process: no key cached yet
    keys.reads = 0

    ids_only = await reader.from_wire(wire, frozenset())

    assert set(ids_only.payload) == {"lorebook_id", "owner_user_id", "format", "imported_at"}
    assert keys.reads == 0, "no encrypted field read: no data key fetched"
    name_only = await reader.from_wire(wire, {"name"})
    assert name_only.payload["name"] == "Secret book"
    assert "book" not in name_only.payload, "the fields not asked for are left out, not passed on as ciphertext"
    assert keys.reads > 0


async def test_an_event_to_upcast_is_decrypted_whole() -> None:
    codec = EventCodec(REGISTRY, FieldCipher(os.urandom(32), InMemoryKeyStore()))
    v1 = {"user_id": "u", "conversation_id": "c", "message_id": "m", "role": "user", "author_id": None,
          "author_name": "Ann", "content": "four words right here", "created_at": T0.isoformat(), "bot_ids": [],
          "persona_id": None, "index": 0}  # fmt: skip
    old = envelope("message.recorded", v1).model_copy(update={"schema_version": 1})
    decoded = await codec.from_wire(EventCodec.to_wire(await codec.encode(old)), frozenset())
    assert decoded.payload["content"] == "four words right here", "its upcaster reads the content"
    assert decoded.payload["tokens"] > 0
    assert MessageRecorded.model_validate(decoded.payload).tokens == decoded.payload["tokens"]
