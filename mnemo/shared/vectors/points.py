"""The vector point schema: the one place writer and readers agree on what a point carries.

The embedding service writes the points; the context assembler and the lore activation read them; ``mnemo
replay`` wipes them by kind. All take the kinds, payload keys, point ids and filters from here, so a renamed key
changes both sides at once (``tests/unit/test_vector_points.py`` holds them together).

Payloads carry ids and filter fields only, never text (it stays encrypted in MongoDB); ``*`` marks filters:

- ``message`` (one point per chunk): ``tenant_id*, user_id*, conversation_id*, kind*, message_id*,
  source_id, model, chunk`` and, with the message's scene, ``bot_ids, audience*, persona_id, author_id,
  role, index, created_at*``.
- ``summary``: ``tenant_id*, user_id*, conversation_id, kind*, source_id, summary_id*, summary_type,
  audience*, message_ids, participants, first_index, last_index, created_at, model, chunk``.
- ``legacy_memory``: ``tenant_id*, user_id*, conversation_id, kind*, source_id, legacy_id*, memory_id,
  applies_to*, participants, importance, start_at, end_at, created_at, model, chunk``.
- ``lore_entry``: ``tenant_id*, kind*, lorebook_id*, uid*, source_id, model, chunk``.
- ``fact``: ``tenant_id*, user_id, kind*, fact_id*, source_id, character_id, audience*`` (exactly the
  fact's character, never ``*``), ``scope*, model, chunk``.
- ``memory`` (the memory API's): ``tenant_id*, user_id*`` (owner), ``kind*, memory_id*, source_id, namespace*,
  audience*, memory_type*, tags*`` (labels: plain, like ids), ``created_at*`` (occurred), ``model, chunk``.
- ``document_chunk`` (a point per distinct chunk text, id over its hash): ``tenant_id*, kind*, lorebook_id*,
  document_id*, chunk_hash*, source_id, chunk, total_chunks, page, model`` (see ``document_point_id``).

Every point also carries ``analyzer`` (its sparse vector's analyzer version). Filters are applied inside the
vector query, never after it, so a query cannot rank points it may not see.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.presence import visible_audience
from mnemo.shared.vectors.port import Match, VectorFilter

# --- kinds --------------------------------------------------------------------------------------------------
MESSAGE: Final = "message"
SUMMARY: Final = "summary"
LEGACY_MEMORY: Final = "legacy_memory"  # a user's summary turned into lore
LORE_ENTRY: Final = "lore_entry"  # an entry of a lorebook in ``vector`` or ``hybrid`` activation mode
FACT: Final = "fact"  # a character's fact (knowledge)
DOCUMENT_CHUNK: Final = "document_chunk"  # a chunk of an uploaded document (lore of the document kind)
MEMORY: Final = "memory"  # a memory written through the memory API (remember, update)
#: Every kind the embedding service writes (what ``mnemo replay`` wipes before rebuilding).
KINDS: Final = (MESSAGE, SUMMARY, LEGACY_MEMORY, LORE_ENTRY, FACT, DOCUMENT_CHUNK, MEMORY)

# --- payload keys -------------------------------------------------------------------------------------------
TENANT_ID: Final = "tenant_id"
USER_ID: Final = "user_id"
CONVERSATION_ID: Final = "conversation_id"
KIND: Final = "kind"
SOURCE_ID: Final = "source_id"  # the id of the item the point is a chunk of (message, summary, ... id)
CHUNK: Final = "chunk"  # the chunk's place in its item, from 0
MODEL: Final = "model"  # the embedder's model id (``mnemo reindex`` re-embeds points of another model)
ANALYZER: Final = "analyzer"  # the lexical analyzer's version (``mnemo/shared/analyzer.py``), on every kind
# messages
MESSAGE_ID: Final = "message_id"
BOT_IDS: Final = "bot_ids"
PERSONA_ID: Final = "persona_id"
AUTHOR_ID: Final = "author_id"
ROLE: Final = "role"
INDEX: Final = "index"
CREATED_AT: Final = "created_at"  # epoch seconds (float): what time ranges filter on
#: Who may be shown the point (``mnemo/shared/presence.py``): a list, a match means "contains".
AUDIENCE: Final = "audience"
# summaries
SUMMARY_ID: Final = "summary_id"
SUMMARY_TYPE: Final = "summary_type"
MESSAGE_IDS: Final = "message_ids"
PARTICIPANTS: Final = "participants"
FIRST_INDEX: Final = "first_index"
LAST_INDEX: Final = "last_index"
# legacy memories
LEGACY_ID: Final = "legacy_id"
MEMORY_ID: Final = "memory_id"  # a legacy entry's summary; a ``memory`` point's own memory id
APPLIES_TO: Final = "applies_to"  # the bots and personas the memory applies to (a list)
IMPORTANCE: Final = "importance"
START_AT: Final = "start_at"
END_AT: Final = "end_at"
# lore entries
LOREBOOK_ID: Final = "lorebook_id"
UID: Final = "uid"  # the entry's uid in its book (an int)
# document chunks
DOCUMENT_ID: Final = "document_id"
CHUNK_HASH: Final = "chunk_hash"
TOTAL_CHUNKS: Final = "total_chunks"
PAGE: Final = "page"
# facts
FACT_ID: Final = "fact_id"
CHARACTER_ID: Final = "character_id"
SCOPE: Final = "scope"  # ``player:<user>``, ``character:<bot>`` or ``campaign:<id>``
# memories (the memory API)
NAMESPACE: Final = "namespace"  # ``player:<user>``, ``campaign:<id>`` or ``character:<bot>``
MEMORY_TYPE: Final = "memory_type"  # episodic | semantic | declarative | procedural
TAGS: Final = "tags"  # a list: a match means "contains"


def point_id(kind: str, tenant_id: str, user_id: str, conversation_id: str, source_id: str, chunk: int) -> str:
    """The point's id, deterministic so a redelivered event overwrites the same points (the idempotency key);
    ids a kind does not scope by are passed as ``""``."""
    return deterministic_id("vec", kind, tenant_id, user_id, conversation_id, source_id, str(chunk))


def lore_source_id(lorebook_id: str, uid: int) -> str:
    """A lore entry's ``source_id`` (its book and uid)."""
    return f"{lorebook_id}:{uid}"


def document_point_id(tenant_id: str, document_id: str, chunk_hash: str) -> str:
    """A document chunk's point: one per distinct text of the document, whatever its version or place, so an
    unchanged chunk of a new version keeps its point. Its ``chunk``, ``total_chunks`` and ``page`` are those
    of the version that first embedded it; the documents read model holds each version's own."""
    return deterministic_id("vec", DOCUMENT_CHUNK, tenant_id, document_id, chunk_hash)


# --- what the writer deletes ----------------------------------------------------------------------------------
def messages_by_id(tenant_id: str, user_id: str, conversation_id: str, message_ids: Iterable[str]) -> VectorFilter:
    """Every chunk of these messages (and nothing of another tenant, user or conversation)."""
    flt = VectorFilter.where(
        **{TENANT_ID: tenant_id, USER_ID: user_id, CONVERSATION_ID: conversation_id, KIND: MESSAGE}
    )
    return flt.and_(Match(MESSAGE_ID, tuple(message_ids)))


def summaries_by_id(tenant_id: str, user_id: str, conversation_id: str, summary_ids: Iterable[str]) -> VectorFilter:
    """Every chunk of these summaries (and nothing of another tenant, user or conversation)."""
    flt = VectorFilter.where(
        **{TENANT_ID: tenant_id, USER_ID: user_id, CONVERSATION_ID: conversation_id, KIND: SUMMARY}
    )
    return flt.and_(Match(SUMMARY_ID, tuple(summary_ids)))


def legacy_by_id(tenant_id: str, user_id: str, legacy_id: str) -> VectorFilter:
    """Every chunk of one legacy entry (and nothing of another tenant or user)."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, USER_ID: user_id, KIND: LEGACY_MEMORY, LEGACY_ID: legacy_id})


def lore_entries_by_uid(tenant_id: str, lorebook_id: str, uids: Iterable[int] | None = None) -> VectorFilter:
    """Every chunk of these entries of one book (all of the book's with ``uids=None``), and nothing else."""
    flt = VectorFilter.where(**{TENANT_ID: tenant_id, KIND: LORE_ENTRY, LOREBOOK_ID: lorebook_id})
    return flt if uids is None else flt.and_(Match(UID, tuple(sorted(uids))))


def facts_by_id(tenant_id: str, fact_ids: Iterable[str]) -> VectorFilter:
    """Every point of these facts of one tenant (and nothing else)."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, KIND: FACT}).and_(Match(FACT_ID, tuple(sorted(fact_ids))))


def memories_by_id(tenant_id: str, memory_ids: Iterable[str]) -> VectorFilter:
    """Every point of these memories of one tenant (and nothing else)."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, KIND: MEMORY}).and_(Match(MEMORY_ID, tuple(sorted(memory_ids))))


def document_chunks(tenant_id: str, document_id: str, keep_hashes: Iterable[str] = ()) -> VectorFilter:
    """Every chunk point of one document, except those whose hash is in ``keep_hashes``."""
    flt = VectorFilter.where(**{TENANT_ID: tenant_id, KIND: DOCUMENT_CHUNK, DOCUMENT_ID: document_id})
    keep = tuple(sorted(set(keep_hashes)))
    return VectorFilter(flt.must, (Match(CHUNK_HASH, keep),)) if keep else flt


def all_kinds() -> VectorFilter:
    """Every point the embedding service wrote, of every tenant (what ``mnemo replay`` rebuilds)."""
    return VectorFilter(must=(Match(KIND, KINDS),))


def made_by(model: str, analyzer: str) -> VectorFilter:
    """Every point made by ``model`` with ``analyzer`` (``mnemo reindex`` re-embeds when others exist)."""
    return VectorFilter(must=(Match(KIND, KINDS), Match(MODEL, (model,)), Match(ANALYZER, (analyzer,))))


# --- what the readers search ----------------------------------------------------------------------------------
def witnessed_messages(
    tenant_id: str, user_id: str, conversation_id: str, bot_id: str, exclude_message_ids: Sequence[str] = ()
) -> VectorFilter:
    """This conversation's messages ``bot_id`` witnessed (``audience``), minus ``exclude_message_ids``."""
    flt = VectorFilter.where(
        **{TENANT_ID: tenant_id, USER_ID: user_id, CONVERSATION_ID: conversation_id, KIND: MESSAGE}
    ).and_(Match(AUDIENCE, visible_audience(bot_id)))
    if exclude_message_ids:
        flt = VectorFilter(flt.must, (Match(MESSAGE_ID, tuple(exclude_message_ids)),))
    return flt


def visible_summaries(tenant_id: str, user_id: str, bot_id: str) -> VectorFilter:
    """The user's summaries of any conversation whose ``audience`` admits ``bot_id``."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, USER_ID: user_id, KIND: SUMMARY}).and_(
        Match(AUDIENCE, visible_audience(bot_id))
    )


def applicable_legacy(tenant_id: str, user_id: str, targets: Sequence[str]) -> VectorFilter:
    """The user's legacy memories that apply to one of ``targets`` (bot and persona ids)."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, USER_ID: user_id, KIND: LEGACY_MEMORY}).and_(
        Match(APPLIES_TO, tuple(targets))
    )


def character_facts(tenant_id: str, character_id: str, scopes: Sequence[str]) -> VectorFilter:
    """The character's own facts (``audience`` is exactly it: never ``*``) in one of ``scopes``."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, KIND: FACT}).and_(
        Match(AUDIENCE, (character_id,)), Match(SCOPE, tuple(scopes))
    )


def visible_memories(tenant_id: str, namespaces: Sequence[str], audiences: Sequence[str] | None) -> VectorFilter:
    """The memories of ``namespaces`` whose ``audience`` holds one of ``audiences`` (None: any), of one tenant
    (``mnemo/shared/namespaces.py`` decides both for a viewer)."""
    flt = VectorFilter.where(**{TENANT_ID: tenant_id, KIND: MEMORY}).and_(Match(NAMESPACE, tuple(namespaces)))
    return flt if audiences is None else flt.and_(Match(AUDIENCE, tuple(audiences)))


def lore_books(tenant_id: str, lorebook_ids: Iterable[str]) -> VectorFilter:
    """The lore entries of these books of one tenant."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, KIND: LORE_ENTRY}).and_(
        Match(LOREBOOK_ID, tuple(sorted(lorebook_ids)))
    )


def document_books(tenant_id: str, lorebook_ids: Iterable[str]) -> VectorFilter:
    """The document chunks of these books (each document belongs to one book) of one tenant."""
    return VectorFilter.where(**{TENANT_ID: tenant_id, KIND: DOCUMENT_CHUNK}).and_(
        Match(LOREBOOK_ID, tuple(sorted(lorebook_ids)))
    )
