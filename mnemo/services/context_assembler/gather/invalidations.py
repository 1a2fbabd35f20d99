"""Which relayed log events change which kept reads (``cache.py``), and the sources each kept read names.

Subscribed on core NATS with no queue group (every replica hears every event: each keeps its own reads), to
the event kinds below only (never ``message.*``: a conversation's messages are checked by version instead,
``conversations.py``). The relayed body is the stored envelope; only its plain ``type``, ``tenant_id`` and
``stream_id`` are read, nothing is decrypted.
"""

from __future__ import annotations

import json
import logging

from mnemo.services.context_assembler.gather.cache import LogCache, tenant_topic
from mnemo.shared.aggregates.lorebook import LORE_EVENTS
from mnemo.shared.events.envelope import stream_parts
from mnemo.shared.events.recorded import (
    BOT_RECORDED,
    CONVERSATION_FORKED,
    DOCUMENT_EVENTS,
    ERASURE_COMPLETED,
    LORE_TIMED_STATE_RECORDED,
    PERSONA_RECORDED,
    SUMMARY_CREATED,
    SUMMARY_RETIRED,
)
from mnemo.shared.readmodels.knowledge import KNOWLEDGE_EVENTS
from mnemo.shared.subjects import log_subject

log = logging.getLogger(__name__)

_OWN_STREAM = {BOT_RECORDED.name, PERSONA_RECORDED.name, LORE_TIMED_STATE_RECORDED.name}
_SUMMARIES = {SUMMARY_CREATED.name, SUMMARY_RETIRED.name}
#: The relayed subjects the assembler listens to.
SUBJECTS = tuple(
    log_subject(name)
    for name in sorted(
        _OWN_STREAM
        | LORE_EVENTS
        | DOCUMENT_EVENTS
        | KNOWLEDGE_EVENTS
        | _SUMMARIES
        | {CONVERSATION_FORKED.name, ERASURE_COMPLETED.name}
    )
)


def forks_topic(tenant_id: str, user_id: str) -> str:
    """A user's fork families (a new fork changes its family's members)."""
    return f"forks/{tenant_id}/{user_id}"  # as _user_topic("forks", ...) names it


def lore_topic(tenant_id: str) -> str:
    """The tenant's books and where they are attached."""
    return f"lore/{tenant_id}"


def documents_topic(tenant_id: str) -> str:
    return f"documents/{tenant_id}"


def facts_topic(tenant_id: str) -> str:
    return f"facts/{tenant_id}"


def summaries_topic(tenant_id: str, user_id: str) -> str:
    """A user's summaries (created, or retired: consolidated, stale, deleted, made legacy lore)."""
    return f"summaries/{tenant_id}/{user_id}"


def _user_topic(topic: str, tenant_id: str, stream_id: str) -> list[str]:
    """``topic/<tenant>/<user>`` of an event on a ``<kind>/<tenant>/<user>/...`` stream (the tenant's topic
    when the stream names no user: everything of the tenant is dropped rather than something missed)."""
    _kind, parts = stream_parts(stream_id)
    return [f"{topic}/{tenant_id}/{parts[1]}"] if len(parts) >= 2 else [tenant_topic(tenant_id)]


def sources_of(event_type: str, tenant_id: str, stream_id: str) -> list[str]:
    """The sources an event of this kind changes (none for a kind no kept read depends on)."""
    if event_type in _OWN_STREAM:
        return [stream_id]
    if event_type in LORE_EVENTS:
        return [lore_topic(tenant_id)]
    if event_type in DOCUMENT_EVENTS:
        return [documents_topic(tenant_id)]
    if event_type in KNOWLEDGE_EVENTS:
        return [facts_topic(tenant_id)]
    if event_type == CONVERSATION_FORKED.name:  # conversation/<tenant>/<user>/<conversation>
        return _user_topic("forks", tenant_id, stream_id)
    if event_type in _SUMMARIES:  # summaries/<tenant>/<user>/<conversation>
        return _user_topic("summaries", tenant_id, stream_id)
    if event_type == ERASURE_COMPLETED.name:
        return [tenant_topic(tenant_id)]
    return []


def on_relayed(cache: LogCache, body: bytes) -> None:
    """Drop what a relayed event changes. A body that is not an envelope is logged and ignored (it cannot
    name what it changed; the kept reads' ``ttl_s`` bounds what that costs)."""
    try:
        env = json.loads(body)
        sources = sources_of(str(env["type"]), str(env["tenant_id"]), str(env["stream_id"]))
    except (ValueError, KeyError, TypeError) as exc:
        log.warning("relayed event not understood, nothing invalidated: %s: %s", type(exc).__name__, exc)
        return
    for source in sources:
        cache.changed(source)
