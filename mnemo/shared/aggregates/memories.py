"""The memories aggregate: a memory's stream (``memory/<tenant>/<memory>``) folded into its versions, and its
deciders, the events that remember, update and forget it (pure: no I/O, no clock: ``now`` and the memory id
are given; the memory service's memory API calls them). ``EVENTS`` names the stream's payload classes.

Who may do what is ``mnemo/shared/namespaces.py``: a call that may not write the namespace is ``NamespaceForbidden``,
except that another player's memory is ``RememberedNotFound`` (its ids look unknown). Idempotency: remembering with an
``idempotency_key`` derives the memory id from the tenant, the user and the key, so a retry finds the stream
and answers as the first call did; forgetting has one event id per memory; an update that changes nothing
appends nothing (a retried update finds its values already there).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope, NewEvent, deterministic_id, new_id
from mnemo.shared.events.recorded import (
    MEMORY_FORGOTTEN,
    MEMORY_REMEMBERED,
    MEMORY_UPDATED,
    MemoryForgotten,
    MemoryRemembered,
    MemoryUpdated,
    memory_stream,
    new_event,
)
from mnemo.shared.events.recorded.memories import MemorySnapshot
from mnemo.shared.namespaces import write_refusal
from mnemo.shared.titles import short_title
from mnemo_client.wire.memory_api_contract import (
    MemoryRememberRequest,
    MemoryUpdateRequest,
    MemoryVersion,
    namespace_kind,
)

#: The payload classes of a memory's stream.
EVENTS = (MemoryRemembered, MemoryUpdated, MemoryForgotten)

#: The fields of a version an update may change (the namespace, owner and character never change).
CHANGEABLE = ("title", "content", "memory_type", "tags", "assets", "metadata", "occurred_at")


class RememberedNotFound(LookupError):
    """No such memory for this caller (or it was forgotten)."""


class NamespaceForbidden(PermissionError):
    """The caller may not write (or read) this namespace."""


class VersionConflict(Exception):
    """``expected_version`` is not the memory's version."""


class MemoryRequestRefused(ValueError):
    """A request the memory's state refuses (an idempotency key that made another memory, a character
    namespace with another character): ``bad_request`` with the reason."""


def memory_id_for(tenant_id: str, user_id: str, idempotency_key: str | None) -> str:
    """Derived from the key (a retry finds the same memory), random without one."""
    return new_id() if idempotency_key is None else deterministic_id("memory", tenant_id, user_id, idempotency_key)


@dataclass
class Memory:
    """A memory's stream folded: its versions (oldest first), the current state, and whether it was forgotten."""

    memory_id: str
    first: MemoryRemembered
    current: MemorySnapshot
    version: int
    versions: list[MemoryVersion] = field(default_factory=list)
    forgotten: bool = False

    @property
    def namespace(self) -> str:
        return self.first.owner_namespace

    @property
    def owner(self) -> str:
        return self.first.user_id


def fold(events: list[EventEnvelope]) -> Memory | None:
    """A ``memory/<tenant>/<memory>`` stream as a :class:`Memory`; None for an empty stream."""
    memory: Memory | None = None
    for env in events:
        if env.type == MEMORY_REMEMBERED.name:
            first = MEMORY_REMEMBERED.parse(env.payload)
            memory = Memory(first.memory_id, first, first, env.version)
            memory.versions.append(_version(env.version, "remembered", first, first.remembered_at))
        elif memory is not None and env.type == MEMORY_UPDATED.name:
            updated = MEMORY_UPDATED.parse(env.payload)
            memory.current, memory.version = updated, env.version
            memory.versions.append(_version(env.version, "updated", updated, updated.updated_at))
        elif memory is not None and env.type == MEMORY_FORGOTTEN.name:
            gone = MEMORY_FORGOTTEN.parse(env.payload)
            memory.forgotten, memory.version = True, env.version
            memory.versions.append(
                MemoryVersion(
                    version=env.version,
                    change="forgotten",
                    by_user_id=gone.by_user_id,
                    at=gone.forgotten_at,
                    reason=gone.reason,
                )
            )
    return memory


def _version(version: int, change: str, s: MemorySnapshot, at: datetime) -> MemoryVersion:
    return MemoryVersion.model_validate(
        {
            "version": version,
            "change": change,
            "by_user_id": s.by_user_id,
            "at": at,
            "content": s.content,
            "title": s.title,
            "type": s.memory_type,
            "tags": s.tags,
            "assets": s.assets,
            "metadata": s.metadata,
            "occurred_at": s.occurred_at,
        }
    )


def check_write(namespace: str, user_id: str, *, engine: bool) -> None:
    """NamespaceForbidden, with what would allow it, unless this call may write ``namespace``."""
    if (why := write_refusal(namespace, user_id, engine=engine)) is not None:
        raise NamespaceForbidden(why)


def check_access(memory: Memory | None, user_id: str, *, engine: bool, write: bool) -> Memory:
    """The memory if this call may read it (``write``: change it); another player's is RememberedNotFound."""
    if memory is None:
        raise RememberedNotFound("no such memory")
    kind, owner = namespace_kind(memory.namespace)
    if kind == "player" and owner != user_id:
        raise RememberedNotFound("no such memory")
    if kind != "player" and not engine:
        verb = "changing" if write else "reading the history of"
        raise NamespaceForbidden(
            f"{verb} a `{kind}:` memory takes the engine's right: mnemo.rpc.memory.engine.<verb>.v1"
        )
    return memory


def remembered_event(tenant_id: str, memory_id: str, req: MemoryRememberRequest, now: datetime) -> NewEvent:
    """The ``memory.remembered`` event of a new memory (the namespace was checked)."""
    kind, owner = namespace_kind(req.owner_namespace)
    if kind == "character" and req.bot_id not in (None, owner):
        raise MemoryRequestRefused(
            f"a `character:{owner}` memory is that character's: bot_id must be {owner!r} or absent"
        )
    payload = MemoryRemembered(
        memory_id=memory_id,
        user_id=req.user_id,
        by_user_id=req.user_id,
        owner_namespace=req.owner_namespace,
        memory_type=req.type,
        title=req.title or short_title(req.content),
        content=req.content,
        tags=list(dict.fromkeys(req.tags)),
        assets=[a.model_dump(mode="json") for a in req.assets],
        metadata=dict(req.metadata),
        bot_id=req.bot_id,
        conversation_id=req.conversation_id,
        occurred_at=req.occurred_at or now,
        idempotency_key=req.idempotency_key,
        remembered_at=now,
    )
    stream = memory_stream(tenant_id, memory_id)
    return new_event(payload, tenant_id=tenant_id, event_id=deterministic_id(stream, "remembered"), occurred_at=now)


def same_request(memory: Memory, req: MemoryRememberRequest) -> bool:
    """Whether a retried remember asks for what the memory was first made with."""
    first = memory.first
    asked: dict[str, Any] = {
        "owner_namespace": req.owner_namespace,
        "memory_type": req.type,
        "content": req.content,
        "bot_id": req.bot_id,
        "tags": list(dict.fromkeys(req.tags)),
    }
    return all(getattr(first, k) == v for k, v in asked.items())


def updated_event(tenant_id: str, memory: Memory, req: MemoryUpdateRequest, now: datetime) -> NewEvent | None:
    """The ``memory.updated`` event of ``req`` (the whole new state), or None when nothing would change."""
    if req.expected_version is not None and req.expected_version != memory.version:
        raise VersionConflict(f"the memory is at version {memory.version}, not {req.expected_version}")
    current = memory.current
    changes: dict[str, Any] = {
        "title": req.title,
        "content": req.content,
        "memory_type": req.type,
        "tags": None if req.tags is None else list(dict.fromkeys(req.tags)),
        "assets": None if req.assets is None else [a.model_dump(mode="json") for a in req.assets],
        "metadata": None if req.metadata is None else dict(req.metadata),
        "occurred_at": req.occurred_at,
    }
    given = {k: v for k, v in changes.items() if v is not None}
    if req.content is not None and req.title is None and current.title == short_title(current.content):
        given["title"] = short_title(req.content)  # a derived title follows the text it was derived from
    before = current.model_dump(mode="json")
    after = MemorySnapshot.model_validate({**current.model_dump(), **given, "by_user_id": req.user_id})
    if all(after.model_dump(mode="json")[k] == before[k] for k in CHANGEABLE):
        return None
    payload = MemoryUpdated(**after.model_dump(), updated_at=now)
    return new_event(
        payload, tenant_id=tenant_id, event_id=new_id(), occurred_at=now
    )  # two updates of one version both have their say: the second conflicts and retries


def forgotten_event(tenant_id: str, memory: Memory, by_user_id: str, reason: str | None, now: datetime) -> NewEvent:
    payload = MemoryForgotten(
        memory_id=memory.memory_id,
        user_id=memory.owner,
        by_user_id=by_user_id,
        owner_namespace=memory.namespace,
        reason=reason,
        forgotten_at=now,
    )
    return new_event(
        payload,
        tenant_id=tenant_id,
        event_id=deterministic_id(memory_stream(tenant_id, memory.memory_id), "forgotten"),
        occurred_at=now,
    )


def redacted(versions: list[MemoryVersion]) -> list[MemoryVersion]:
    """The versions of a forgotten memory: who changed it and when, none of what it said."""
    keep = {"version", "change", "by_user_id", "at", "reason"}
    return [MemoryVersion.model_validate(v.model_dump(include=keep)) for v in versions]
