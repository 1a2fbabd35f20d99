"""The lorebook aggregate's deciders: from a book's folded state and a request, the events to record (pure, no
I/O; the lore service calls them on the book's fold).

Owner rule: only the book's ``owner_user_id`` may change it; a request by anyone else, or about a book that
does not exist (or was deleted), raises :class:`LoreNotFound` - the caller cannot tell the two apart.

Idempotency: event ids are derived from the book's stream, what changes and the version the decision was made
on, so a retry after a lost reply either appends nothing (same id) or finds the change already there and
answers ``changed: false`` / ``deleted: false`` without recording anything. An import's ids come from the
book's id (derived from the file's content by the lore service) and the life it starts (``generation``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from pydantic import ValidationError

from mnemo.shared.aggregates.lorebook.state import BookState
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import (
    LorebookAttached,
    LorebookCreated,
    LorebookDeleted,
    LorebookDetached,
    LorebookEntryCreated,
    LorebookEntryDeleted,
    LorebookEntryUpdated,
    LorebookEntryWritten,
    LorebookImported,
    LorebookRenamed,
    RecordedPayload,
    lorebook_stream,
    new_event,
)
from mnemo.shared.lore.keys import regex_key_refusal
from mnemo.shared.lore.model import Lorebook, LoreEntry
from mnemo_client.wire.lore_contract import (
    LoreAttachRequest,
    LoreBookCreateRequest,
    LoreDetachRequest,
    LoreEntryCreateRequest,
    LoreEntryUpdateRequest,
    LoreImportRequest,
)

#: The payload classes of a book's stream (what these deciders build, and what ``state`` folds).
EVENTS = (
    LorebookImported,
    LorebookCreated,
    LorebookEntryCreated,
    LorebookEntryUpdated,
    LorebookEntryDeleted,
    LorebookAttached,
    LorebookDetached,
    LorebookRenamed,
    LorebookDeleted,
)

MAX_CONTENT_CHARS = 200_000

# snake_case field name -> SillyTavern's camelCase alias, so a request may use either spelling.
_ALIASES = {name: (f.alias or name) for name, f in LoreEntry.model_fields.items()}


class LoreNotFound(LookupError):
    """A book, entry, document or uploaded object that does not exist in this tenant, or that the acting user
    does not own: answered ``not_found`` either way."""


class BadRequest(ValueError):
    """The request is well-formed JSON but asks for something invalid (an invalid entry, a taken uid...)."""


def owned(state: BookState | None, user_id: str, lorebook_id: str, *, allow_deleted: bool = False) -> BookState:
    if state is None or state.owner_user_id != user_id or (state.deleted and not allow_deleted):
        raise LoreNotFound(f"no lorebook {lorebook_id!r} of this user in this tenant")
    return state


def _event(state: BookState, kind: str, key: str, payload: RecordedPayload, now: datetime) -> NewEvent:
    stream = lorebook_stream(state.tenant_id, state.lorebook_id)
    return new_event(
        payload,
        event_id=deterministic_id(stream, kind, key, str(state.version)),
        tenant_id=state.tenant_id,
        occurred_at=now,
    )


def book_id_for(req: LoreBookCreateRequest) -> str:
    return req.lorebook_id or deterministic_id("lorebook", req.tenant_id, req.owner_user_id, req.name, "created")


def create_book(state: BookState | None, req: LoreBookCreateRequest, now: datetime) -> list[NewEvent]:
    """The events of a new book; none when the owner's book already exists (a retry)."""
    lorebook_id = book_id_for(req)
    if state is not None and not state.deleted:
        if state.owner_user_id != req.owner_user_id:
            raise BadRequest(f"lorebook_id {lorebook_id!r} is already in use")
        return []
    base = state or BookState(req.tenant_id, lorebook_id)
    created = LorebookCreated(
        lorebook_id=lorebook_id,
        owner_user_id=req.owner_user_id,
        name=req.name,
        description=req.description,
        created_at=now,
    )
    events = [_event(base, "created", "", created, now)]
    if req.attach_to_bots:
        bots = sorted(set(req.attach_to_bots))
        attached = LorebookAttached(lorebook_id=lorebook_id, bot_ids=bots, attached_at=now)
        events.append(_event(base, "attached", ",".join(bots), attached, now))
    return events


def delete_book(state: BookState, now: datetime) -> list[NewEvent]:
    if state.deleted:
        return []
    gone = LorebookDeleted(lorebook_id=state.lorebook_id, at=now)
    return [_event(state, "deleted", "", gone, now)]


def rename_book(state: BookState, name: str, now: datetime) -> list[NewEvent]:
    """The rename's event; none when the book already has that name (a retry, or nothing to change)."""
    if state.name == name:
        return []
    renamed = LorebookRenamed(lorebook_id=state.lorebook_id, owner_user_id=state.owner_user_id, name=name, at=now)
    return [_event(state, "renamed", name, renamed, now)]


def binding(lorebook_id: str, req: LoreAttachRequest | LoreDetachRequest) -> dict[str, Any]:
    """The ``LorebookBinding`` fields of an attach or a detach: the bots once each and sorted (so that a retry
    names them, and the event id, alike), and the one conversation if the request names one."""
    conv = req.conversation
    return {
        "lorebook_id": lorebook_id,
        "bot_ids": sorted(set(req.bot_ids)),
        "user_id": conv.user_id if conv else None,
        "conversation_id": conv.conversation_id if conv else None,
    }


def detach(state: BookState, req: LoreDetachRequest, now: datetime) -> list[NewEvent]:
    detached = LorebookDetached(**binding(state.lorebook_id, req), detached_at=now)
    key = ",".join([*detached.bot_ids, f"{detached.user_id}/{detached.conversation_id}"])
    return [_event(state, "detached", key, detached, now)]


def _camel(fields: dict[str, Any]) -> dict[str, Any]:
    """Field names as SillyTavern writes them; SillyTavern's `vectorized` without `activationMode` sets the
    mode as an import does (`hybrid` when true: keys still work; `keyword` when false)."""
    out = {_ALIASES.get(k, k): v for k, v in fields.items()}
    if "vectorized" in out and "activationMode" not in out and isinstance(out["vectorized"], bool):
        out["activationMode"] = "hybrid" if out["vectorized"] else "keyword"
    return out


def _validated(fields: dict[str, Any]) -> LoreEntry:
    try:
        entry = LoreEntry.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()[:10])
        raise BadRequest(f"invalid entry: {problems}") from exc
    if len(entry.content) > MAX_CONTENT_CHARS:
        raise BadRequest(f"invalid entry: content is longer than {MAX_CONTENT_CHARS} characters")
    for name, keys in (("key", entry.key), ("keysecondary", entry.keysecondary)):
        refusal = next(filter(None, map(regex_key_refusal, keys)), None)
        if refusal:  # an import only warns (a whole file should not fail for one key); a single write refuses
            raise BadRequest(f"invalid entry: {name}: {refusal}")
    return entry


def _written(
    kind: type[LorebookEntryWritten], state: BookState, entry: LoreEntry, now: datetime
) -> LorebookEntryWritten:
    return kind(
        lorebook_id=state.lorebook_id,
        uid=entry.uid,
        entry=entry.model_dump(mode="json"),
        at=now,
        owner_user_id=state.owner_user_id,
    )


def create_entry(state: BookState, req: LoreEntryCreateRequest, now: datetime) -> tuple[LoreEntry, list[NewEvent]]:
    """The new entry (uid: the given one, else one more than the largest) and its event; no event when an
    identical entry with that uid exists (a retry)."""
    fields = _camel(req.entry)
    if "uid" not in fields:
        fields["uid"] = max((e.uid for e in state.book.entries), default=-1) + 1
    entry = _validated(fields)
    existing = state.entry(entry.uid)
    if existing is not None:
        if existing == entry:
            return existing, []
        raise BadRequest(f"uid {entry.uid} is already an entry of this book; use entry.update to change it")
    return entry, [
        _event(state, "entry_created", str(entry.uid), _written(LorebookEntryCreated, state, entry, now), now)
    ]


def update_entry(state: BookState, req: LoreEntryUpdateRequest, now: datetime) -> tuple[LoreEntry, list[NewEvent]]:
    """The entry with ``changes`` applied and its event; no event when nothing changes."""
    current = state.entry(req.uid)
    if current is None:
        raise LoreNotFound(f"no entry {req.uid} in lorebook {state.lorebook_id!r}")
    changes = _camel(req.changes)
    if changes.get("uid", req.uid) != req.uid:
        raise BadRequest("`uid` cannot be changed")
    entry = _validated({**current.model_dump(by_alias=True), **changes})
    if entry == current:
        return current, []
    written = _written(LorebookEntryUpdated, state, entry, now)
    return entry, [_event(state, "entry_updated", str(entry.uid), written, now)]


def delete_entry(state: BookState, uid: int, now: datetime) -> list[NewEvent]:
    """The deletion event; none when the book has no such entry (already deleted)."""
    if state.entry(uid) is None:
        return []
    gone = LorebookEntryDeleted(lorebook_id=state.lorebook_id, uid=uid, at=now)
    return [_event(state, "entry_deleted", str(uid), gone, now)]


class ImportedFile(Protocol):
    """A file the lore service read (its ``ImportResult``): the book, what to keep for export, the warnings."""

    book: Lorebook
    format: str
    original: dict[str, Any]
    warnings: list[Any]  # the service's warning models, recorded as they dump


def import_events(
    req: LoreImportRequest, result: ImportedFile, lorebook_id: str, now: datetime, generation: int = 0
) -> list[NewEvent]:
    """``generation``: 0, or the stream version when the book was deleted and is imported again."""
    stream = lorebook_stream(req.tenant_id, lorebook_id)
    suffix = (str(generation),) if generation else ()
    imported = LorebookImported(
        lorebook_id=lorebook_id,
        owner_user_id=req.owner_user_id,
        name=req.name,
        format=result.format,
        book=result.book.model_dump(mode="json"),
        original=result.original,
        warnings=[w.model_dump(mode="json") for w in result.warnings],
        imported_at=now,
    )
    events = [
        new_event(
            imported,
            event_id=deterministic_id(stream, "imported", *suffix),
            tenant_id=req.tenant_id,
            occurred_at=now,
        )
    ]
    if req.attach_to_bots:
        bots = sorted(set(req.attach_to_bots))
        attached = LorebookAttached(lorebook_id=lorebook_id, bot_ids=bots, attached_at=now)
        events.append(
            new_event(
                attached,
                event_id=deterministic_id(stream, "attached", *bots, *suffix),
                tenant_id=req.tenant_id,
                occurred_at=now,
            )
        )
    return events


def attach_event(req: LoreAttachRequest, now: datetime) -> NewEvent:
    attached = LorebookAttached(**binding(req.lorebook_id, req), attached_at=now)
    return new_event(attached, tenant_id=req.tenant_id, occurred_at=now)
