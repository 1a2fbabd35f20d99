"""The only place NATS subjects, JetStream stream names, durable and queue names are built.

Naming: ``mnemo.<area>.<entity>.<fact>.v<N>`` for events, ``mnemo.rpc.<area>.<verb>.v<N>`` for
request-reply. The version comes last so ``mnemo.chat.message.created.>`` selects every version.
Stream and durable names cannot contain dots, so they are UPPER_SNAKE and snake respectively.
"""

from __future__ import annotations

from typing import Final

PREFIX: Final = "mnemo"

# --- Public inbound events (the platform publishes; captured by the CHAT stream) -----------------
MESSAGE_CREATED: Final = "mnemo.chat.message.created.v1"
MESSAGE_EDITED: Final = "mnemo.chat.message.edited.v1"
MESSAGE_DELETED: Final = "mnemo.chat.message.deleted.v1"
BOT_UPSERTED: Final = "mnemo.chat.bot.upserted.v1"
PERSONA_UPSERTED: Final = "mnemo.chat.persona.upserted.v1"
MESSAGE_SWIPE_SELECTED: Final = "mnemo.chat.message.swipe_selected.v1"
CONVERSATION_FORKED: Final = "mnemo.chat.conversation.forked.v1"
CHAT_INBOUND: Final = (
    MESSAGE_CREATED,
    MESSAGE_EDITED,
    MESSAGE_DELETED,
    BOT_UPSERTED,
    PERSONA_UPSERTED,
    MESSAGE_SWIPE_SELECTED,
    CONVERSATION_FORKED,
)

#: The keyed (v2) chat subjects: ``mnemo.chat.<entity>.<fact>.v2.<tenant>.<key>`` (``mnemo_client.wire.keyed``),
#: the key being the conversation, the bot or the persona; the stream maps them into the ingest partitions.
CHAT_KEYED: Final = "mnemo.chat.*.*.v2.*.*"
#: The v1 chat subjects, which name no tenant or conversation: ingest's v1 router moves them to the keyed form.
CHAT_V1: Final = "mnemo.chat.*.*.v1"
#: What the v1 router's durable reads: every chat subject the stream did not map into a partition, that is the v1
#: subjects and anything else published under ``mnemo.chat.`` (``.v2`` without tenant and key, ``.v0``, ``.V1``...),
#: which it dead-letters as an unknown subject instead of leaving it unread in the stream.
CHAT_UNPARTITIONED: Final = "mnemo.chat.>"


def keyed(v1_subject: str, tenant_token: str, key_token: str) -> str:
    """The keyed (v2) subject of a v1 chat subject, for tokens already escaped (``subject_token``)."""
    return f"{v1_subject.removesuffix('.v1')}.v2.{tenant_token}.{key_token}"


def v1_of(keyed_subject: str) -> str:
    """The v1 subject of the same event: ``mnemo.chat.message.created.v2.t.c`` -> ``mnemo.chat.message.created.v1``."""
    return ".".join(keyed_subject.split(".")[:4]) + ".v1"


# --- Public request-reply -----------------------------------------------------------------------
CONTEXT_ASSEMBLE: Final = "mnemo.rpc.context.assemble.v1"
LORE_IMPORT: Final = "mnemo.rpc.lore.import.v1"
LORE_EXPORT: Final = "mnemo.rpc.lore.export.v1"
LORE_LIST: Final = "mnemo.rpc.lore.list.v1"
LORE_TEST_ACTIVATION: Final = "mnemo.rpc.lore.test_activation.v1"
LORE_ATTACH: Final = "mnemo.rpc.lore.attach.v1"
LORE_DETACH: Final = "mnemo.rpc.lore.detach.v1"
LORE_BOOK_CREATE: Final = "mnemo.rpc.lore.book.create.v1"
LORE_BOOK_DELETE: Final = "mnemo.rpc.lore.book.delete.v1"
LORE_BOOK_RENAME: Final = "mnemo.rpc.lore.book.rename.v1"
LORE_ENTRY_CREATE: Final = "mnemo.rpc.lore.entry.create.v1"
LORE_ENTRY_UPDATE: Final = "mnemo.rpc.lore.entry.update.v1"
LORE_ENTRY_DELETE: Final = "mnemo.rpc.lore.entry.delete.v1"
LORE_DOCUMENT_IMPORT: Final = "mnemo.rpc.lore.document.import.v1"
LORE_DOCUMENT_GET: Final = "mnemo.rpc.lore.document.get.v1"
LORE_DOCUMENT_LIST: Final = "mnemo.rpc.lore.document.list.v1"
LORE_DOCUMENT_DELETE: Final = "mnemo.rpc.lore.document.delete.v1"
MEMORY_PROMOTE: Final = "mnemo.rpc.memory.promote.v1"
MEMORY_UNPROMOTE: Final = "mnemo.rpc.memory.unpromote.v1"
MEMORY_CONVERT_TO_LORE: Final = "mnemo.rpc.memory.convert_to_lore.v1"
MEMORY_DELETE: Final = "mnemo.rpc.memory.delete.v1"
MEMORY_EDIT: Final = "mnemo.rpc.memory.edit.v1"
MEMORY_LIST: Final = "mnemo.rpc.memory.list.v1"
#: Tokens and vector status of listed items: the context-assembler's, beside the vector index.
MEMORY_INDEX_STATUS: Final = "mnemo.rpc.memory.index_status.v1"
# The memory API (docs/memory-api.md). Writes to campaign and character namespaces take the engine's right,
# which is the right to publish on the ``engine`` subjects (granted per NATS user or gateway API key).
MEMORY_REMEMBER: Final = "mnemo.rpc.memory.remember.v1"
MEMORY_SEARCH: Final = "mnemo.rpc.memory.search.v1"
MEMORY_UPDATE: Final = "mnemo.rpc.memory.update.v1"
MEMORY_FORGET: Final = "mnemo.rpc.memory.forget.v1"
MEMORY_HISTORY: Final = "mnemo.rpc.memory.history.v1"
MEMORY_ENGINE_REMEMBER: Final = "mnemo.rpc.memory.engine.remember.v1"
MEMORY_ENGINE_UPDATE: Final = "mnemo.rpc.memory.engine.update.v1"
MEMORY_ENGINE_FORGET: Final = "mnemo.rpc.memory.engine.forget.v1"
MEMORY_ENGINE_HISTORY: Final = "mnemo.rpc.memory.engine.history.v1"
#: The memory API's calls for code acting for one player (the ``player`` NATS user, ``mnemo mcp``).
MEMORY_PLAYER_CALLS: Final = (MEMORY_REMEMBER, MEMORY_SEARCH, MEMORY_UPDATE, MEMORY_FORGET, MEMORY_HISTORY)
#: The engine's twins (``mnemo/shared/namespaces.py``).
MEMORY_ENGINE_CALLS: Final = (MEMORY_ENGINE_REMEMBER, MEMORY_ENGINE_UPDATE, MEMORY_ENGINE_FORGET, MEMORY_ENGINE_HISTORY)
PRIVACY_ERASE_USER: Final = "mnemo.rpc.privacy.erase_user.v1"
PRIVACY_ERASE_TENANT: Final = "mnemo.rpc.privacy.erase_tenant.v1"
PRIVACY_EXPORT_USER: Final = "mnemo.rpc.privacy.export_user.v1"
CONVERSATION_LIST: Final = "mnemo.rpc.conversation.list.v1"
CONVERSATION_TIMELINE: Final = "mnemo.rpc.conversation.timeline.v1"
CHAT_IMPORT: Final = "mnemo.rpc.chat.import.v1"
KNOWLEDGE_FACT_LIST: Final = "mnemo.rpc.knowledge.fact.list.v1"
KNOWLEDGE_FACT_ADD: Final = "mnemo.rpc.knowledge.fact.add.v1"
KNOWLEDGE_FACT_EDIT: Final = "mnemo.rpc.knowledge.fact.edit.v1"
KNOWLEDGE_FACT_RETRACT: Final = "mnemo.rpc.knowledge.fact.retract.v1"
KNOWLEDGE_FACT_HISTORY: Final = "mnemo.rpc.knowledge.fact.history.v1"
# Operators only (``--secure``: the ``admin`` user; the platform is denied ``mnemo.rpc.ops.>``; no gateway route).
OPS_USAGE: Final = "mnemo.rpc.ops.usage.v1"

# --- Public outbound events (core NATS: follow them while an import runs; the get request answers the same) --
#: A document's import state (``mnemo_client.wire.document_contract.DocumentState``) at each step of its import.
LORE_DOCUMENT_STATUS: Final = "mnemo.lore.document.status.v1"
#: The JetStream Object Store bucket uploads go to; object names start with the tenant id and a ``/``.
UPLOADS_BUCKET: Final = "MNEMO_UPLOADS"

# --- Recorded events: what the event log's relay publishes after a durable append ----------------
LOG_PREFIX: Final = "mnemo.log"


def log_subject(event_type: str) -> str:
    """Subject a recorded event is relayed on, e.g. ``mnemo.log.message.recorded.v1``.

    ``event_type`` is the registry name (``message.recorded``); the schema version is not part of the
    subject because upcasting happens on read, consumers always see the current version.
    """
    if not event_type or " " in event_type or event_type.startswith(".") or event_type.endswith("."):
        raise ValueError(f"invalid event type {event_type!r}")
    return f"{LOG_PREFIX}.{event_type}.v1"


def event_type_of(subject: str) -> str:
    """Inverse of :func:`log_subject`."""
    if not subject.startswith(LOG_PREFIX + ".") or not subject.endswith(".v1"):
        raise ValueError(f"not a log subject: {subject!r}")
    return subject[len(LOG_PREFIX) + 1 : -len(".v1")]


LOG_ALL: Final = f"{LOG_PREFIX}.>"

# --- Dead letters -------------------------------------------------------------------------------
DLQ_PREFIX: Final = "mnemo.dlq"


def dead_letter_subject(service: str) -> str:
    """Where a service parks a message it cannot process, with the reason in headers and body."""
    return f"{DLQ_PREFIX}.{service}.v1"


DLQ_ALL: Final = f"{DLQ_PREFIX}.>"

# --- Vector points (``MNEMO_VECTORS__MODE=stream``, see mnemo/shared/vectors/stream.py) -----------------------
POINTS_PREFIX: Final = "mnemo.points"


def point_subject(point_id: str) -> str:
    """Where a point's upsert and its tombstone go: one subject per point, so the stream keeps only the last."""
    if not point_id or "." in point_id or " " in point_id or "*" in point_id or ">" in point_id:
        raise ValueError(f"invalid point id {point_id!r}")
    return f"{POINTS_PREFIX}.point.{point_id}"


def points_deletion_subject(key: str) -> str:
    """Where a deletion by filter goes; ``key`` is the hash of the (single-source) filter, so repeating the same
    deletion replaces the earlier one."""
    if not key.isalnum():
        raise ValueError(f"invalid deletion key {key!r}")
    return f"{POINTS_PREFIX}.deletion.{key}"


#: The reset marker ``mnemo replay`` writes before it purges everything older (followers wipe their shard).
POINTS_RESET: Final = f"{POINTS_PREFIX}.reset"
POINTS_ALL: Final = f"{POINTS_PREFIX}.>"

# --- JetStream streams ----------------------------------------------------------------------------
CHAT_STREAM: Final = "MNEMO_CHAT"
CHAT_STREAM_SUBJECTS: Final = ("mnemo.chat.>",)
LOG_STREAM: Final = "MNEMO_LOG"
LOG_STREAM_SUBJECTS: Final = (LOG_ALL,)
DLQ_STREAM: Final = "MNEMO_DLQ"
DLQ_STREAM_SUBJECTS: Final = (DLQ_ALL,)
POINTS_STREAM: Final = "MNEMO_POINTS"
POINTS_STREAM_SUBJECTS: Final = (POINTS_ALL,)
# Ingest partitions (mnemo/shared/partitions.py, docs/scaling.md): MNEMO_CHAT stores every keyed event under
# ``mnemo.ingest.<count>.<partition>.<entity>.<fact>.v2.<tenant>.<key>``, the partition computed by NATS from the
# tenant and key tokens; one durable and one lease per partition. ``count`` is part of the subject so that a new
# partition count starts a new generation of partitions, consumed once the older one is drained.
INGEST_PARTITIONS_PREFIX: Final = "mnemo.ingest"


def partition_subjects(count: int, partition: int) -> str:
    """What partition ``partition`` of ``count`` holds: the filter of its durable."""
    return f"{INGEST_PARTITIONS_PREFIX}.{count}.{partition}.>"


#: A partition's durable name, ``%`` partition and count (the Helm chart renders its KEDA triggers from it).
PARTITION_DURABLE: Final = "mnemo_ingest_p%d_of_%d"


def partition_durable(count: int, partition: int) -> str:
    """The durable consumer of one partition, e.g. ``mnemo_ingest_p3_of_16`` (a KEDA trigger each)."""
    return PARTITION_DURABLE % (partition, count)


def partition_lease(count: int, partition: int) -> str:
    """The lease key of one partition in the lease bucket: one replica consumes it at a time."""
    return f"ingest_p{partition}_of_{count}"


def public_subject(stored: str) -> str:
    """The keyed subject a partition's message was published on: the stored subject without
    ``mnemo.ingest.<count>.<partition>`` (other subjects are returned as they are)."""
    if not stored.startswith(INGEST_PARTITIONS_PREFIX + "."):
        return stored
    return "mnemo.chat." + stored.split(".", 4)[4]


def destination(subject: str) -> str:
    """A subject without the ids a keyed or partition subject carries (a span's name, never a tenant's id):
    ``mnemo.ingest.16.3.message.created.v2.t1.c1`` -> ``mnemo.ingest.16.3.message.created.v2``."""
    parts = subject.split(".")
    keyed = subject.startswith(INGEST_PARTITIONS_PREFIX + ".") or (len(parts) == 7 and parts[4] == "v2")
    return ".".join(parts[:-2]) if keyed and len(parts) >= 7 else subject


#: The v1 router's durable (filter :data:`CHAT_UNPARTITIONED`) and its lease: one replica routes v1 events at a time.
INGEST_V1_DURABLE: Final = "mnemo_ingest_v1"
INGEST_V1_LEASE: Final = "ingest_v1"
#: Each ingest replica's membership key in the lease bucket (``ingest_members.<id>``, its own subject token, so one
#: ``*`` lists them): partitions are shared among the replicas whose key is alive.
INGEST_MEMBER_PREFIX: Final = "ingest_members."

# Nats-Msg-Id deduplication window; the relay's republish-after-crash happens well inside it.
DUPLICATE_WINDOW_S: Final = 120.0


def durable(service: str, purpose: str = "main") -> str:
    """Durable consumer name of a service; replicas of a service share it (pull consumers scale)."""
    return f"mnemo_{service}_{purpose}".replace("-", "_").replace(".", "_")


def queue_group(service: str) -> str:
    """Core-NATS queue group of a request-reply service: replicas share requests, each answered once."""
    return f"mnemo_{service}".replace("-", "_").replace(".", "_")
