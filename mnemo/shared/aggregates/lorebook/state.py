"""The lore state of one book, folded from its stream (``lorebook/<tenant>/<book>``): pure and deterministic.

Contract of :func:`fold`: given the state after version ``n`` (or ``None`` before the first event) and the
event at version ``n + 1``, the state after it. Folding the whole stream gives the book as it is now, and
folding a prefix gives it as it was then, so ``mnemo replay`` rebuilds the read model from the log alone.

- ``lorebook.imported``: the book, its original document, name, owner and format (a re-import after a
  deletion brings the book back; attachments are kept, an import never detaches).
- ``lorebook.created``: an empty book.
- ``lorebook.entry_created`` / ``lorebook.entry_updated``: the entry with that uid is replaced (or appended,
  keeping the book's order). A created entry also drops the original raw entry of the same uid, so export
  cannot mix a deleted entry's unknown keys into a new one.
- ``lorebook.entry_deleted``: the entry and its original raw entry go.
- ``lorebook.attached`` / ``lorebook.detached``: targets (``bot/<tenant>/<bot>``,
  ``conversation/<tenant>/<user>/<conversation>``) are added / removed.
- ``lorebook.renamed``: the book's name (and its ``Lorebook``'s, which export writes) becomes the new one.
- ``lorebook.deleted``: a tombstone: no entries, no original, no name, no targets; the owner stays so that a
  repeated delete by the owner answers ``deleted: false`` instead of ``not_found``.

Events of other types are ignored (the version still advances). A gap before ``lorebook.created`` or
``lorebook.imported`` is a life of the book that can no longer be read (its owner or tenant was erased: the
log skips or hides those events); the fold starts anew at that event (:func:`fold_all`).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    LOREBOOK_ATTACHED,
    LOREBOOK_CREATED,
    LOREBOOK_DELETED,
    LOREBOOK_DETACHED,
    LOREBOOK_ENTRY_CREATED,
    LOREBOOK_ENTRY_DELETED,
    LOREBOOK_ENTRY_UPDATED,
    LOREBOOK_IMPORTED,
    LOREBOOK_RENAMED,
    LorebookEntryWritten,
    bot_stream,
    conversation_stream,
)
from mnemo.shared.lore.model import Lorebook, LoreEntry


@dataclass
class BookState:
    tenant_id: str
    lorebook_id: str
    owner_user_id: str = ""
    name: str = ""
    format: str = ""
    book: Lorebook = field(default_factory=Lorebook)
    original: dict[str, Any] = field(default_factory=dict)
    targets: list[str] = field(default_factory=list)  # sorted attachment targets (stream ids)
    deleted: bool = False
    version: int = 0

    def entry(self, uid: int) -> LoreEntry | None:
        return next((e for e in self.book.entries if e.uid == uid), None)


def targets_of(tenant_id: str, bot_ids: list[str], user_id: str | None, conversation_id: str | None) -> set[str]:
    out = {bot_stream(tenant_id, b) for b in bot_ids}
    if user_id is not None and conversation_id is not None:
        out.add(conversation_stream(tenant_id, user_id, conversation_id))
    return out


def fold(state: BookState | None, env: EventEnvelope) -> BookState:
    """The state after ``env`` (see the module docstring); ``state`` is not modified."""
    s = copy.deepcopy(state) if state is not None else BookState(env.tenant_id, str(env.payload["lorebook_id"]))
    _apply(s, env)
    return s


def fold_all(state: BookState | None, envelopes: list[EventEnvelope]) -> BookState | None:
    """Fold the events newer than ``state`` (by version, in version order); ``state`` is not modified.

    Raises :class:`VersionGap` when the first newer event does not follow ``state`` (events are missing),
    unless a create or an import comes after the gap: the book's life before it was erased, and the fold
    starts anew at the last one."""
    start = state.version if state is not None else 0
    newer = sorted((e for e in envelopes if e.version > start), key=lambda e: e.version)
    if not newer:
        return state
    if newer[0].version != start + 1:
        lives = [i for i, e in enumerate(newer) if e.type in NEW_LIFE]
        if not lives:
            raise VersionGap(f"book state at version {start}, next event at {newer[0].version}")
        state, newer = None, newer[lives[-1] :]
    s = (
        copy.deepcopy(state)
        if state is not None
        else BookState(newer[0].tenant_id, str(newer[0].payload["lorebook_id"]))
    )
    for env in newer:  # one copy for the whole fold: a big book is not copied per event
        _apply(s, env)
    return s


class VersionGap(ValueError):
    """The events given do not continue the state: fold from the stream's start instead."""


def _apply(s: BookState, env: EventEnvelope) -> None:
    s.version = env.version
    on_event = _APPLY.get(env.type)
    if on_event is not None:
        on_event(s, env)


def _on_imported(s: BookState, env: EventEnvelope) -> None:
    imp = LOREBOOK_IMPORTED.parse(env.payload)
    s.owner_user_id, s.name, s.format, s.deleted = imp.owner_user_id, imp.name, imp.format, False
    s.book, s.original = Lorebook.model_validate(imp.book), dict(imp.original)


def _on_created(s: BookState, env: EventEnvelope) -> None:
    created = LOREBOOK_CREATED.parse(env.payload)
    s.owner_user_id, s.name, s.format, s.deleted = created.owner_user_id, created.name, "mnemo", False
    s.book, s.original = Lorebook(name=created.name, description=created.description), {}


def _on_entry_created(s: BookState, env: EventEnvelope) -> None:
    _write_entry(s, LOREBOOK_ENTRY_CREATED.parse(env.payload), drop_raw=True)


def _on_entry_updated(s: BookState, env: EventEnvelope) -> None:
    _write_entry(s, LOREBOOK_ENTRY_UPDATED.parse(env.payload), drop_raw=False)


def _write_entry(s: BookState, written: LorebookEntryWritten, *, drop_raw: bool) -> None:
    """The entry with that uid replaced (or appended); ``drop_raw`` also drops its original raw entry."""
    entry = LoreEntry.model_validate({**written.entry, "uid": written.uid})
    if drop_raw:
        _drop_raw(s, written.uid)
    entries = list(s.book.entries)
    at = next((i for i, e in enumerate(entries) if e.uid == written.uid), None)
    if at is None:
        entries.append(entry)
    else:
        entries[at] = entry
    s.book = s.book.model_copy(update={"entries": entries})


def _on_entry_deleted(s: BookState, env: EventEnvelope) -> None:
    gone = LOREBOOK_ENTRY_DELETED.parse(env.payload)
    _drop_raw(s, gone.uid)
    s.book = s.book.model_copy(update={"entries": [e for e in s.book.entries if e.uid != gone.uid]})


def _on_attached(s: BookState, env: EventEnvelope) -> None:
    a = LOREBOOK_ATTACHED.parse(env.payload)
    s.targets = sorted(set(s.targets) | targets_of(env.tenant_id, a.bot_ids, a.user_id, a.conversation_id))


def _on_detached(s: BookState, env: EventEnvelope) -> None:
    d = LOREBOOK_DETACHED.parse(env.payload)
    s.targets = sorted(set(s.targets) - targets_of(env.tenant_id, d.bot_ids, d.user_id, d.conversation_id))


def _on_renamed(s: BookState, env: EventEnvelope) -> None:
    renamed = LOREBOOK_RENAMED.parse(env.payload)
    s.name, s.book = renamed.name, s.book.model_copy(update={"name": renamed.name})


def _on_deleted(s: BookState, env: EventEnvelope) -> None:
    s.name, s.book, s.original, s.targets, s.deleted = "", Lorebook(), {}, [], True


def _drop_raw(s: BookState, uid: int) -> None:
    raw = s.original.get("entries")
    if isinstance(raw, dict) and str(uid) in raw:
        s.original = {**s.original, "entries": {k: v for k, v in raw.items() if k != str(uid)}}


# Event type -> how it changes the book's state (in place: ``fold`` and ``fold_all`` copy it first); any other
# type only advances the version.
_APPLY: dict[str, Callable[[BookState, EventEnvelope], None]] = {
    LOREBOOK_IMPORTED.name: _on_imported,
    LOREBOOK_CREATED.name: _on_created,
    LOREBOOK_ENTRY_CREATED.name: _on_entry_created,
    LOREBOOK_ENTRY_UPDATED.name: _on_entry_updated,
    LOREBOOK_ENTRY_DELETED.name: _on_entry_deleted,
    LOREBOOK_ATTACHED.name: _on_attached,
    LOREBOOK_DETACHED.name: _on_detached,
    LOREBOOK_RENAMED.name: _on_renamed,
    LOREBOOK_DELETED.name: _on_deleted,
}
LORE_EVENTS = frozenset(_APPLY)  # the lorebook event types: the ones the fold above changes a book with
#: The events a book's life starts with: after an unreadable (erased) earlier life, a new one starts there.
NEW_LIFE = frozenset({LOREBOOK_CREATED.name, LOREBOOK_IMPORTED.name})
