"""Lore management, pure parts: the decisions on a book's state (owner rule, uids, retries) and the fold that
rebuilds the state from the log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mnemo.shared.aggregates.lorebook import BookState, VersionGap, deciders, fold, fold_all
from mnemo.shared.aggregates.lorebook.deciders import BadRequest, LoreNotFound
from mnemo.shared.events.envelope import EventEnvelope, NewEvent
from mnemo.shared.events.recorded import bot_stream, conversation_stream, lorebook_stream
from mnemo.shared.lore.model import Lorebook, LoreEntry
from mnemo_client.wire.lore_contract import (
    ConversationRef,
    LoreAttachRequest,
    LoreBookCreateRequest,
    LoreDetachRequest,
    LoreEntryCreateRequest,
    LoreEntryUpdateRequest,
)
from tests.envelopes import recorded

T0 = datetime(2026, 5, 1, tzinfo=UTC)
TENANT, OWNER, BOOK = "t1", "u-owner", "book-1"


def log_of(events: list[NewEvent], start: int = 1) -> list[EventEnvelope]:
    """New events as the log would return them, at versions ``start``.."""
    stream = lorebook_stream(TENANT, BOOK)
    return [recorded(e.tenant_id, stream, start + i, e.type, e.payload, T0) for i, e in enumerate(events)]


def replay(events: list[NewEvent], state: BookState | None = None) -> BookState:
    out = fold_all(state, log_of(events, (state.version if state else 0) + 1))
    assert out is not None
    return out


def created_book(*entries: dict[str, Any]) -> BookState:
    req = LoreBookCreateRequest(
        tenant_id=TENANT, owner_user_id=OWNER, name="World", lorebook_id=BOOK, attach_to_bots=["bot-a"]
    )
    state = replay(deciders.create_book(None, req, T0))
    for fields in entries:
        entry_req = LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, entry=fields)
        _, events = deciders.create_entry(state, entry_req, T0)
        state = replay(events, state)
    return state


def update(state: BookState, at: int, user: str = OWNER, **changes: Any) -> tuple[LoreEntry, list[NewEvent]]:
    req = LoreEntryUpdateRequest(tenant_id=TENANT, user_id=user, lorebook_id=BOOK, uid=at, changes=changes)
    return deciders.update_entry(deciders.owned(state, user, BOOK), req, T0)


def test_created_book_with_entries_folds_to_the_book_and_its_attachment() -> None:
    state = created_book({"key": ["Ada"], "content": "Ada is a pilot."}, {"content": "The sea.", "uid": 7})
    assert state.owner_user_id == OWNER
    assert state.name == "World"
    assert [(e.uid, e.content) for e in state.book.entries] == [(0, "Ada is a pilot."), (7, "The sea.")]
    assert state.targets == [bot_stream(TENANT, "bot-a")]
    assert state.version == 4  # created, attached, two entries


def test_next_uid_follows_the_largest_and_a_taken_uid_is_refused_unless_identical() -> None:
    state = created_book({"content": "a", "uid": 5})
    entry, events = deciders.create_entry(
        state, LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, entry={"content": "b"}), T0
    )
    assert entry.uid == 6
    assert len(events) == 1
    same = LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, entry={"uid": 5, "content": "a"})
    assert deciders.create_entry(state, same, T0)[1] == [], "an identical retry records nothing"
    other = LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, entry={"uid": 5, "content": "x"})
    with pytest.raises(BadRequest, match="uid 5"):
        deciders.create_entry(state, other, T0)


def test_update_takes_camel_or_snake_case_and_keeps_other_fields() -> None:
    state = created_book({"key": ["Ada"], "content": "old", "order": 50})
    entry, events = update(state, 0, content="new", activationMode="vector", ignore_budget=True)
    assert (entry.content, entry.activation_mode, entry.ignore_budget, entry.order, entry.key) == (
        "new",
        "vector",
        True,
        50,
        ["Ada"],
    )
    after = replay(events, state)
    assert after.entry(0) == entry
    assert update(after, 0, content="new")[1] == [], "a change to the same value records nothing"


def test_sillytavern_vectorized_sets_the_mode_as_an_import_does_unless_the_mode_is_given() -> None:
    state = created_book(
        {"content": "a", "vectorized": True}, {"content": "b", "vectorized": True, "activationMode": "vector"}
    )
    assert [e.activation_mode for e in state.book.entries] == ["hybrid", "vector"]
    assert update(state, 0, vectorized=False)[0].activation_mode == "keyword"


@pytest.mark.parametrize(
    ("changes", "problem"),
    [
        ({"activationMode": "semantic"}, "activationMode"),
        ({"no_such_field": 1}, "no_such_field"),
        ({"uid": 9}, "uid"),
        ({"content": "x" * (deciders.MAX_CONTENT_CHARS + 1)}, "longer"),
    ],
)
def test_invalid_changes_are_bad_requests_naming_the_field(changes: dict[str, Any], problem: str) -> None:
    state = created_book({"content": "c"})
    with pytest.raises(BadRequest, match=problem):
        update(state, 0, **changes)


def test_only_the_owner_may_change_a_book_and_others_cannot_tell_it_exists() -> None:
    state = created_book({"content": "c"})
    with pytest.raises(LoreNotFound):
        update(state, 0, user="u-stranger", content="mine now")
    with pytest.raises(LoreNotFound):
        deciders.owned(None, OWNER, BOOK)
    with pytest.raises(LoreNotFound, match="no entry 3"):
        update(state, 3, content="x")


def test_deleted_entry_and_book_fold_away_and_repeat_deletes_record_nothing() -> None:
    state = created_book({"content": "a"}, {"content": "b"})
    gone = replay(deciders.delete_entry(state, 0, T0), state)
    assert [e.uid for e in gone.book.entries] == [1]
    assert deciders.delete_entry(gone, 0, T0) == []
    deleted = replay(deciders.delete_book(gone, T0), gone)
    assert deleted.deleted
    assert (deleted.book.entries, deleted.targets, deleted.name) == ([], [], "")
    assert deciders.delete_book(deleted, T0) == []
    with pytest.raises(LoreNotFound):
        deciders.owned(deleted, OWNER, BOOK)
    assert deciders.owned(deleted, OWNER, BOOK, allow_deleted=True) is deleted


def test_a_rename_folds_into_the_book_and_its_export_name_and_keeps_the_rest() -> None:
    state = created_book({"content": "a"})
    events = deciders.rename_book(state, "Harbour lore", T0)
    renamed = replay(events, state)
    assert [e.type for e in events] == ["lorebook.renamed"]
    assert (renamed.name, renamed.book.name, renamed.version) == ("Harbour lore", "Harbour lore", state.version + 1)
    assert (renamed.book.entries, renamed.targets, renamed.owner_user_id) == (
        state.book.entries,
        state.targets,
        OWNER,
    )
    assert deciders.rename_book(renamed, "Harbour lore", T0) == [], "the same name again records nothing"
    with pytest.raises(LoreNotFound):
        deciders.owned(renamed, "u-stranger", BOOK)


def test_detach_removes_only_the_named_targets() -> None:
    state = created_book()
    conv = ConversationRef(user_id="u2", conversation_id="c2")
    attach = LoreAttachRequest(tenant_id=TENANT, lorebook_id=BOOK, bot_ids=["bot-b"], conversation=conv)
    state = replay([deciders.attach_event(attach, T0)], state)
    assert state.targets == sorted(
        [bot_stream(TENANT, "bot-a"), bot_stream(TENANT, "bot-b"), conversation_stream(TENANT, "u2", "c2")]
    )
    detach = LoreDetachRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, bot_ids=["bot-a", "bot-x"])
    after = replay(deciders.detach(state, detach, T0), state)
    assert after.targets == [bot_stream(TENANT, "bot-b"), conversation_stream(TENANT, "u2", "c2")]
    only_conv = LoreDetachRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, conversation=conv)
    assert replay(deciders.detach(after, only_conv, T0), after).targets == [bot_stream(TENANT, "bot-b")]


def test_event_ids_depend_on_the_version_decided_on_so_a_retry_is_deduplicated() -> None:
    state = created_book({"content": "a"})
    first = update(state, 0, content="b")[1]
    retry = update(state, 0, content="b")[1]
    assert [e.event_id for e in first] == [e.event_id for e in retry]
    later = replay(first, state)
    back = update(later, 0, content="a")[1]
    assert back[0].event_id != first[0].event_id


def test_folding_a_prefix_gives_the_book_as_it_was_then() -> None:
    state = created_book({"content": "v1"})
    history = log_of(update(state, 0, content="v2")[1], state.version + 1)
    v1 = fold_all(None, [])
    assert v1 is None
    now = fold(state, history[0])
    assert now.entry(0) is not None
    assert now.entry(0).content == "v2"  # type: ignore[union-attr]
    assert state.entry(0).content == "v1"  # type: ignore[union-attr]
    assert fold_all(now, history) == now, "events at or below the state's version are ignored"
    with pytest.raises(VersionGap):  # events that do not follow the state are never folded over a gap
        fold_all(None, history)


def test_a_new_life_after_an_erased_one_folds_from_its_create() -> None:
    """The first 3 events of the stream can no longer be read (the owner was erased); a create at version 4
    decided on a deleted book at version 3 starts the book anew, and only then."""
    req = LoreBookCreateRequest(tenant_id=TENANT, owner_user_id="u-new", name="Again", lorebook_id=BOOK)
    erased = BookState(TENANT, BOOK, deleted=True, version=3)
    events = deciders.create_book(erased, req, T0)
    anew = fold_all(None, log_of(events, 4))
    assert anew is not None
    assert (anew.owner_user_id, anew.name, anew.deleted, anew.version) == ("u-new", "Again", False, 4)
    assert {e.event_id for e in events}.isdisjoint(e.event_id for e in deciders.create_book(None, req, T0))
    entry = LoreEntryCreateRequest(tenant_id=TENANT, user_id="u-new", lorebook_id=BOOK, entry={"content": "x"})
    with pytest.raises(VersionGap):  # a gap before anything but a create or an import is still refused
        fold_all(None, log_of(deciders.create_entry(anew, entry, T0)[1], 6))


def test_a_created_entry_drops_the_original_raw_entry_of_its_uid() -> None:
    state = BookState(
        TENANT,
        BOOK,
        owner_user_id=OWNER,
        book=Lorebook(entries=[]),
        original={"entries": {"3": {"uid": 3, "unknownKey": 1}, "4": {"uid": 4}}},
        version=1,
    )
    req = LoreEntryCreateRequest(tenant_id=TENANT, user_id=OWNER, lorebook_id=BOOK, entry={"uid": 3})
    after = replay(deciders.create_entry(state, req, T0)[1], state)
    assert after.original == {"entries": {"4": {"uid": 4}}}
