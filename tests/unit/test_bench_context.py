"""The pure helpers of ``make bench-context`` (bench/context_data.py): what the benchmark loads must be what it
claims (a 400-entry book from a real file, a history ingest would have recorded, near-duplicate vectors)."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from bench.context_data import (
    bulk_envelopes,
    lore_keys,
    lorebook_of_size,
    lorebook_parts,
    perturb,
    user_messages,
)
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared.aggregates.conversation import ConversationState, fold
from mnemo.shared.events.recorded import MessageRecorded

FIXTURE = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "lorebooks" / "chub-wi_lythora-station.json"


def small_book() -> dict[str, object]:
    return {
        "entries": {
            "0": {"uid": 0, "key": ["Alpha"], "content": "first", "constant": False},
            "1": {"uid": 1, "key": ["Beta", "B"], "content": "second", "constant": True},
            "2": {"uid": 2, "key": ["Gamma"], "content": "third", "disable": True},
        }
    }


def test_book_grows_to_size_with_distinct_uids_and_varied_copies() -> None:
    book = lorebook_of_size(small_book(), 8)
    entries = list(book["entries"].values())
    assert len(entries) == 8
    assert [e["uid"] for e in entries] == list(range(8))
    assert entries[0]["key"] == ["Alpha"]
    assert entries[3]["key"] == ["Alpha (variant 1)"]
    assert entries[6]["content"] == "first (variant 2)"
    assert entries[4]["constant"] is True  # a copy keeps its settings


def test_book_is_cut_when_the_file_is_larger() -> None:
    assert len(lorebook_of_size(small_book(), 2)["entries"]) == 2


def test_an_empty_book_is_refused() -> None:
    with pytest.raises(ValueError, match="no entries"):
        lorebook_of_size({"entries": {}}, 3)


def test_parts_hold_every_entry_once() -> None:
    book = lorebook_of_size(small_book(), 10)
    parts = lorebook_parts(book, 4)
    assert len(parts) == 4
    uids = [e["uid"] for p in parts for e in p["entries"].values()]
    assert sorted(uids) == list(range(10))
    assert lorebook_parts(book, 1) == [book]


@pytest.mark.skipif(not FIXTURE.exists(), reason="the shared lorebook fixtures are not beside the project")
def test_a_real_book_grown_and_cut_still_imports_entry_for_entry() -> None:
    book = lorebook_of_size(json.loads(FIXTURE.read_text()), 20)
    imported = [import_lorebook(part) for part in lorebook_parts(book, 2)]
    assert sum(len(r.book.entries) for r in imported) == 20


def test_lore_keys_skip_constant_and_disabled_entries() -> None:
    assert lore_keys(small_book()) == ["Alpha"]


def test_user_messages_mix_questions_and_lore_lines() -> None:
    out = user_messages(["When did you move?", "Who is Sam?"], ["Rathalos"], 40, random.Random(1))
    assert len(out) == 40
    assert sum("Rathalos" in m for m in out) == 20
    assert {"When did you move?", "Who is Sam?"} <= set(out)
    assert user_messages(["q"], [], 0, random.Random(1)) == []


def test_perturbed_vectors_are_unit_length_and_near_the_original() -> None:
    rng = np.random.default_rng(3)
    base = rng.normal(size=384).astype(np.float32)
    base /= np.linalg.norm(base)
    moved = perturb(base, rng, 0.01)
    assert abs(float(np.linalg.norm(moved)) - 1.0) < 1e-5
    cosine = float(moved @ base)
    assert 0.95 < cosine < 0.999


def test_bulk_conversation_folds_like_an_ingested_one() -> None:
    texts = ["hello there", "hi, how are you?", "fine"]
    start = datetime(2022, 1, 1, tzinfo=UTC)
    envelopes = bulk_envelopes("t1", "u1", "c1", "bot-1", "persona-1", texts, start)
    assert [e.version for e in envelopes] == [1, 2, 3]
    messages = [MessageRecorded.model_validate(e.payload) for e in envelopes]
    assert [m.index for m in messages] == [0, 1, 2]
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[1].author_id == "bot-1"
    state = fold(ConversationState.initial("t1", "u1", "c1"), envelopes)
    assert state.message_count == 3
    assert state.version == 3
    assert state.present_bot_ids == ["bot-1"]
    again = bulk_envelopes("t1", "u1", "c1", "bot-1", "persona-1", texts, start)
    assert [e.event_id for e in again] == [e.event_id for e in envelopes]  # a reload is idempotent
