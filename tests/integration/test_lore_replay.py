"""`mnemo replay` rebuilds the lore state and the lore vectors from the log alone: the book as last changed
(an edited entry with its new text, a deleted entry gone), vectors only for the live vector/hybrid entries, a
deleted book with neither; and replaying twice changes nothing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from mnemo.shared.aggregates.lorebook import BookState, deciders, fold_all
from mnemo.shared.bootstrap import open_core
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import lorebook_stream
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.settings import Settings
from mnemo.shared.vectors.port import VectorFilter
from mnemo_client.wire.lore_contract import LoreBookCreateRequest, LoreEntryCreateRequest, LoreEntryUpdateRequest
from tests.envelopes import recorded
from tests.integration.event_log import replay_twice

pytestmark = pytest.mark.integration
T0 = datetime(2026, 5, 1, tzinfo=UTC)
TENANT, OWNER = "t-lore-replay", "u1"


def book_events(name: str, delete_book: bool) -> tuple[str, list[NewEvent]]:
    """A book with a keyword, a vector and a hybrid entry; the vector one edited, the hybrid one deleted."""
    create = LoreBookCreateRequest(tenant_id=TENANT, owner_user_id=OWNER, name=name, attach_to_bots=["b1"])
    book_id = deciders.book_id_for(create)
    events: list[NewEvent] = []
    state: BookState | None = None

    def take(new: list[NewEvent]) -> None:
        nonlocal state
        stream = lorebook_stream(TENANT, book_id)
        start = state.version if state else 0
        log = [recorded(TENANT, stream, start + i + 1, e.type, e.payload, T0) for i, e in enumerate(new)]
        state = fold_all(state, log)
        events.extend(new)

    take(deciders.create_book(None, create, T0))
    for fields in (
        {"key": ["gate"], "content": "The gate."},
        {"content": "The reef glows.", "activationMode": "vector"},
        {"content": "Storm lore.", "activationMode": "hybrid"},
    ):
        assert state is not None
        req = LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=book_id, entry=fields)
        take(deciders.create_entry(state, req, T0)[1])
    assert state is not None
    edit = LoreEntryUpdateRequest(
        tenant_id=TENANT, user_id=OWNER, lorebook_id=book_id, uid=1, changes={"content": "The reef glows blue."}
    )
    take(deciders.update_entry(state, edit, T0)[1])
    assert state is not None
    take(deciders.delete_entry(state, 2, T0))
    assert state is not None
    take(deciders.rename_book(state, f"{name}, renamed", T0))
    if delete_book:
        assert state is not None
        take(deciders.delete_book(state, T0))
    return book_id, events


async def test_replay_rebuilds_lore_books_and_their_vectors(core_settings: Settings) -> None:
    core = await open_core(core_settings)
    try:
        kept, kept_events = book_events("kept", delete_book=False)
        gone, gone_events = book_events("gone", delete_book=True)
        await core.store.append(lorebook_stream(TENANT, kept), 0, kept_events)
        await core.store.append(lorebook_stream(TENANT, gone), 0, gone_events)
    finally:
        await core.close()

    total = len(kept_events) + len(gone_events)
    await replay_twice(core_settings, total)

    core = await open_core(core_settings, vectors=True)
    try:
        lore = LoreReadModel(core.db, core.cipher)
        state = await lore.state(TENANT, kept)
        assert state is not None
        assert [(e.uid, e.content) for e in state.book.entries] == [(0, "The gate."), (1, "The reef glows blue.")]
        assert [r.lorebook_id for r in await lore.attached(TENANT, "b1")] == [kept]
        assert (state.name, state.book.name) == ("kept, renamed", "kept, renamed"), "the rename is replayed"
        deleted = await lore.state(TENANT, gone)
        assert deleted is not None
        assert deleted.deleted
        assert deleted.book.entries == []
        assert core.vectors is not None
        counts = {
            book: await core.vectors.count(VectorFilter.where(tenant_id=TENANT, kind="lore_entry", lorebook_id=book))
            for book in (kept, gone)
        }
        assert counts == {kept: 1, gone: 0}, "only the live vector entry; the hybrid one was deleted"
    finally:
        await core.close()
