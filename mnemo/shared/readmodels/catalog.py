"""The projection catalog: every read model declared once, and everything that goes through all of them.

A :class:`ReadModel` names a projection of the log: its collections (each with its indexes and how erasure
finds a user's rows there), the event types it folds, its port, its MongoDB adapter and its in-memory fake.
:data:`CATALOG` lists them all; what spans every read model reads it and nothing else:

- index setup at start (:func:`ensure_indexes`, ``mnemo.shared.bootstrap.open_core``);
- ``mnemo replay``: drop each read model (:func:`drop`), then hand it the log's events of the types it folds;
- erasure (``mnemo/services/privacy/erasure.py``) sweeps a user's or a tenant's rows from every collection, and
  from the tenant's rows that are no projection (:data:`UNPROJECTED`: usage counts);
- the ports a service is given (:class:`ReadModelPorts`: :class:`MongoReadModelPorts` on a database,
  :class:`FakeReadModelPorts` in memory), and the tests: one contract suite per port on both adapters, the
  component tests on either.

Adding a read model is one entry here (tests/e2e/test_privacy.py fails on a collection a running stack creates
that no entry declares). Every row carries ``tenant_id`` and every collection has an index that
starts with it: erasure reads a tenant's rows by it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pymongo import ASCENDING, DESCENDING, IndexModel
from pymongo.asynchronous.database import AsyncDatabase

from mnemo.shared import usage
from mnemo.shared.aggregates.lorebook import LORE_EVENTS
from mnemo.shared.crypto import FieldCipher
from mnemo.shared.events.recorded import (
    BOT_RECORDED,
    CONVERSATION_FORKED,
    DOCUMENT_EVENTS,
    LEGACY_LORE_CREATED,
    LEGACY_LORE_DELETED,
    LORE_TIMED_STATE_RECORDED,
    MEMORY_FORGOTTEN,
    MEMORY_REMEMBERED,
    MEMORY_UPDATED,
    MESSAGE_ALTERNATIVE_DELETED,
    MESSAGE_ALTERNATIVE_RECORDED,
    MESSAGES_WITNESSED,
    PERSONA_RECORDED,
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
)
from mnemo.shared.readmodels import (
    documents,
    knowledge,
    legacy_lore,
    lore,
    lore_timed,
    memories,
    ports,
    repository,
    summaries,
    witnessed,
)
from mnemo.shared.readmodels.documents import DocumentsReadModel
from mnemo.shared.readmodels.inmemory import (
    InMemoryKnowledge,
    InMemoryLegacyLore,
    InMemoryLore,
    InMemoryMemories,
    InMemoryReadModels,
    InMemorySummaries,
)
from mnemo.shared.readmodels.inmemory.lore_timed import InMemoryLoreTimed
from mnemo.shared.readmodels.inmemory.witnessed import InMemoryWitnessed
from mnemo.shared.readmodels.knowledge import KNOWLEDGE_EVENTS, KnowledgeReadModel
from mnemo.shared.readmodels.legacy_lore import LegacyLoreReadModel
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.readmodels.lore_timed import LoreTimedReadModel, TimedPort
from mnemo.shared.readmodels.memories import MemoriesReadModel
from mnemo.shared.readmodels.messages import MESSAGE_EVENT_TYPES
from mnemo.shared.readmodels.repository import ReadModels
from mnemo.shared.readmodels.summaries import SummariesReadModel
from mnemo.shared.readmodels.witnessed import WitnessedPort, WitnessedReadModel

Db = AsyncDatabase[dict[str, Any]]
P = TypeVar("P")


def _index(name: str, *keys: str | tuple[str, int]) -> IndexModel:
    """An index named ``name`` on ``keys`` (a bare name is ascending)."""
    return IndexModel([k if isinstance(k, tuple) else (k, ASCENDING) for k in keys], name=name)


BY_TENANT = _index("by_tenant", "tenant_id")
#: A conversation's state is folded from its whole stream, each event advancing its version
#: (``mnemo.shared.aggregates.conversation.evolve``), so its read model takes every type a conversation stream
#: records, also those that change no row (a fork's first event, a swipe's alternatives).
CONVERSATION_STREAM_TYPES = MESSAGE_EVENT_TYPES | {
    CONVERSATION_FORKED.name,
    MESSAGE_ALTERNATIVE_RECORDED.name,
    MESSAGE_ALTERNATIVE_DELETED.name,
}


@dataclass(frozen=True)
class Collection:
    """One MongoDB collection of a read model. Erasure finds a user's rows by their shape
    (``mnemo.shared.readmodels.rows.owned_by``: ``user_id`` or ``owner_user_id``, the user's stream ids, their
    books' ``lorebook_id``); ``kept_on_user_erasure``: the rows are the platform's, not the user's (a bot's
    profile), so only the tenant's erasure deletes them."""

    name: str
    indexes: tuple[IndexModel, ...]
    kept_on_user_erasure: bool = False


@dataclass(frozen=True)
class ReadModel(Generic[P]):
    """A projection of the log, declared once: see the module docstring. ``P``: its port."""

    name: str
    collections: tuple[Collection, ...]
    folds: frozenset[str]  # the event types it folds (replay hands it those alone): all of a stream it folds whole
    mongo: Callable[[Db, FieldCipher], P]
    fake: Callable[[], P] | None  # None: no in-memory fake (nothing is tested on one)

    @property
    def collection_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.collections)


CONVERSATIONS: ReadModel[ports.ConversationReadModel] = ReadModel(
    "conversations",
    (
        Collection(
            repository.CONVERSATIONS,
            (
                _index("by_family_root", "tenant_id", "user_id", "root_conversation_id"),
                _index("tenant_recent", "tenant_id", ("last_message_at", DESCENDING)),
            ),
        ),
        Collection(
            repository.MESSAGES, (_index("conversation_index", "tenant_id", "user_id", "conversation_id", "index"),)
        ),
        # Read by _id. A bot belongs to the platform's catalog, not to the user who created it: erasing a user
        # keeps it (its text is under the tenant's key); erasing the tenant deletes it.
        Collection(repository.BOTS, (BY_TENANT,), kept_on_user_erasure=True),
        Collection(repository.PERSONAS, (BY_TENANT,)),
    ),
    CONVERSATION_STREAM_TYPES | {BOT_RECORDED.name, PERSONA_RECORDED.name},
    ReadModels,
    InMemoryReadModels,
)
SUMMARIES: ReadModel[ports.SummariesPort] = ReadModel(
    "summaries",
    (
        Collection(
            summaries.COLLECTION,
            (_index("by_conversation", "tenant_id", "user_id", "conversation_id", ("last_index", DESCENDING)),),
        ),
    ),
    frozenset({SUMMARY_CREATED.name, SUMMARY_RETIRED.name}),
    SummariesReadModel,
    InMemorySummaries,
)
KNOWLEDGE: ReadModel[ports.KnowledgePort] = ReadModel(
    "knowledge",
    (
        Collection(
            knowledge.COLLECTION,
            (
                _index("by_character_scope", "tenant_id", "character_id", "status", "scope"),
                _index("by_owner", "tenant_id", "user_id", ("learned_at", DESCENDING)),
                _index("by_source", "tenant_id", "user_id", "source_keys"),
            ),
        ),
        # Read by _id (a stream id); no user's data, so only the tenant's erasure deletes them.
        Collection(knowledge.POSITIONS, (BY_TENANT,), kept_on_user_erasure=True),
    ),
    KNOWLEDGE_EVENTS,
    KnowledgeReadModel,
    InMemoryKnowledge,
)
LEGACY_LORE: ReadModel[ports.LegacyLorePort] = ReadModel(
    "legacy_lore",
    (
        Collection(
            legacy_lore.COLLECTION,
            (
                _index("by_user_newest", "tenant_id", "user_id", ("end_at", DESCENDING), "_id"),
                _index("by_memory", "tenant_id", "user_id", "memory_id"),
            ),
        ),
    ),
    frozenset({LEGACY_LORE_CREATED.name, LEGACY_LORE_DELETED.name}),
    LegacyLoreReadModel,
    InMemoryLegacyLore,
)
# Every query names the tenant first; without these a tenant's listing, a book's attachment sync or an erasure's
# lookup of a user's books read every tenant's rows (found by the 100,000-case fuzz run).
LORE: ReadModel[ports.LorePort] = ReadModel(
    "lore",
    (
        Collection(lore.LOREBOOKS, (_index("tenant_owner", "tenant_id", "owner_user_id"),)),
        Collection(
            lore.LORE_ATTACHMENTS,
            (_index("tenant_target", "tenant_id", "target"), _index("tenant_book", "tenant_id", "lorebook_id")),
        ),
    ),
    LORE_EVENTS,
    LoreReadModel,
    InMemoryLore,
)
DOCUMENTS: ReadModel[DocumentsReadModel] = ReadModel(
    "documents",
    (
        Collection(
            documents.DOCUMENTS,
            (_index("by_book", "tenant_id", "lorebook_id"), _index("by_owner", "tenant_id", "owner_user_id")),
        ),
        Collection(documents.CHUNKS, (_index("by_hash", "tenant_id", "document_id", "version", "hash"),)),
    ),
    DOCUMENT_EVENTS,
    DocumentsReadModel,
    None,
)
WITNESSED: ReadModel[WitnessedPort] = ReadModel(
    "witnessed",
    (
        Collection(
            witnessed.COLLECTION,
            (
                _index("by_character_message", "tenant_id", "character_id", "message_id"),
                _index("by_character_conversation", "tenant_id", "character_id", "user_id", "conversation_id", "index"),
            ),
        ),
    ),
    frozenset({MESSAGES_WITNESSED.name}),
    lambda db, _cipher: WitnessedReadModel(db),
    InMemoryWitnessed,
)
# Lookups are by ``_id`` (the stream id); the tenant index serves erasure, which reads a tenant's rows.
LORE_TIMED: ReadModel[TimedPort] = ReadModel(
    "lore_timed",
    (Collection(lore_timed.COLLECTION, (BY_TENANT,)),),
    frozenset({LORE_TIMED_STATE_RECORDED.name}),
    lambda db, _cipher: LoreTimedReadModel(db),
    InMemoryLoreTimed,
)  # The memory API's memories (docs/memory-api.md): a search lists a namespace's newest, erasure reads an owner's.
MEMORIES: ReadModel[ports.MemoriesPort] = ReadModel(
    "memories",
    (
        Collection(
            memories.COLLECTION,
            (
                _index("by_namespace_newest", "tenant_id", "owner_namespace", ("occurred_at", DESCENDING)),
                _index("by_owner", "tenant_id", "user_id"),
            ),
        ),
    ),
    frozenset({MEMORY_REMEMBERED.name, MEMORY_UPDATED.name, MEMORY_FORGOTTEN.name}),
    MemoriesReadModel,
    InMemoryMemories,
)

#: Every read model, in the order replay folds a batch into them (later ones may read earlier ones: lore, messages).
CATALOG: tuple[ReadModel[Any], ...] = (
    CONVERSATIONS,
    SUMMARIES,
    WITNESSED,
    LORE,
    LEGACY_LORE,
    KNOWLEDGE,
    LORE_TIMED,
    DOCUMENTS,
    MEMORIES,
)


#: A tenant's rows that are no projection of the log (replay leaves them alone), swept by erasure all the same.
UNPROJECTED: tuple[Collection, ...] = (Collection(usage.COLLECTION, usage.INDEXES),)


def collections(models: Iterable[ReadModel[Any]] = CATALOG) -> list[Collection]:
    return [c for model in models for c in model.collections]


def erasable() -> list[Collection]:
    """Every collection erasure sweeps: the read models' and :data:`UNPROJECTED`."""
    return [*collections(), *UNPROJECTED]


async def ensure_indexes(db: Db, models: Iterable[ReadModel[Any]] = CATALOG) -> None:
    """Create the indexes of ``models`` (idempotent, any replica may call it). Called once when a service opens
    its core, so no handler needs a first-use check; the indexes serve queries, none enforces uniqueness, so a
    read model also works before they exist."""
    for collection in collections(models):
        await db[collection.name].create_indexes(list(collection.indexes))


async def drop(db: Db, model: ReadModel[Any]) -> None:
    """Forget ``model``'s rows (before a replay of the log); its indexes are made again."""
    for name in model.collection_names:
        await db[name].drop()
    await ensure_indexes(db, [model])


class ReadModelPorts(Protocol):
    """What a service is given instead of a database: the port of each read model it uses."""

    def of(self, model: ReadModel[P]) -> P: ...


class MongoReadModelPorts:
    """The MongoDB adapters, one per read model (made on first use, then the same one)."""

    def __init__(self, db: Db, cipher: FieldCipher) -> None:
        self._db = db
        self._cipher = cipher
        self._made: dict[str, Any] = {}

    def of(self, model: ReadModel[P]) -> P:
        if model.name not in self._made:
            self._made[model.name] = model.mongo(self._db, self._cipher)
        port: P = self._made[model.name]
        return port


class DeclaredPorts:
    """The ports of the read models a service declares (``ServiceDefinition.read_models``), and no other: a
    service that asks for one it did not declare fails when its router is built, at start."""

    def __init__(self, ports: ReadModelPorts, declared: Iterable[ReadModel[Any]], service: str) -> None:
        self._ports = ports
        self._declared = frozenset(model.name for model in declared)
        self._service = service

    def of(self, model: ReadModel[P]) -> P:
        if model.name not in self._declared:
            raise LookupError(f"{self._service} uses the {model.name} read model without declaring it")
        return self._ports.of(model)


class FakeReadModelPorts:
    """The in-memory fakes, one per read model, so a test reads back what the service wrote."""

    def __init__(self) -> None:
        self._made: dict[str, Any] = {}

    def of(self, model: ReadModel[P]) -> P:
        if model.name not in self._made:
            self._made[model.name] = model.fake() if model.fake is not None else _NoFake(model.name)
        port: P = self._made[model.name]
        return port


class _NoFake:
    """Stands for a read model without an in-memory fake: a router may be built with it, a call fails."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        raise LookupError(f"the {self._name} read model has no in-memory fake: test {attribute} on a database")
