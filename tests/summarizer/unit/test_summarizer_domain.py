"""Pure summarizer logic: trigger ranges, sentence splitting, centrality (real bundled model), payload."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.summarizer.domain import (
    RangeMessage,
    Sentence,
    SummarizerSettings,
    SummaryRange,
    centrality,
    compose_summary,
    due_range,
    importance,
    participants_of,
    pick_central,
    render_summary,
    sentences_of,
    split_sentences,
    summary_id,
)
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.tokens import estimate_tokens

DEFAULTS = SummarizerSettings()
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def embedder() -> BundledEmbedder:
    return BundledEmbedder(batch_size=16)


def test_defaults_are_five_then_every_twenty():
    assert (DEFAULTS.first_at, DEFAULTS.every) == (5, 20)


def test_trigger_ranges_with_defaults():
    due = {i: due_range(i, DEFAULTS) for i in range(70)}
    closing = {i: r for i, r in due.items() if r is not None}
    assert closing == {
        4: SummaryRange(0, 4),  # the 5th message
        24: SummaryRange(5, 24),  # the 25th
        44: SummaryRange(25, 44),  # the 45th
        64: SummaryRange(45, 64),
    }


def test_trigger_ranges_are_configurable_and_tile_without_gaps():
    s = SummarizerSettings(first_at=3, every=4)
    ranges = [r for i in range(40) if (r := due_range(i, s)) is not None]
    assert ranges[0] == SummaryRange(0, 2)
    covered = [i for r in ranges for i in r.indexes()]
    assert covered == list(range(len(covered))), "consecutive ranges, no gap, no overlap"
    assert all(r.last_index - r.first_index + 1 == 4 for r in ranges[1:])


def test_summary_id_is_deterministic_and_scoped():
    r = SummaryRange(5, 24)
    a = summary_id("t", "u", "c", r, "short_term")
    assert a == summary_id("t", "u", "c", r, "short_term")
    assert a != summary_id("t2", "u", "c", r, "short_term")
    assert a != summary_id("t", "u", "c", SummaryRange(25, 44), "short_term")


def test_split_sentences():
    text = 'The gate is sealed. "Who sealed it?" she asked!  Nobody knows…\nNew line here'
    assert split_sentences(text) == [
        "The gate is sealed.",
        '"Who sealed it?"',
        "she asked!",
        "Nobody knows…",
        "New line here",
    ]
    assert split_sentences("   ") == []


def msg(i: int, content: str, *, bots=("bot-a",), persona="p-1", role="user", name="Ana") -> RangeMessage:
    return RangeMessage(f"m{i}", i, role, name, content, T0 + timedelta(minutes=i), tuple(bots), persona)


def test_centrality_ranks_the_sentence_nearest_the_centroid_first():
    # Three vectors along x with one outlier along y: the x ones are central.
    vectors = [[1.0, 0.0], [0.9, 0.1], [0.95, -0.05], [0.0, 1.0]]
    scores = centrality(vectors)
    assert scores.index(min(scores)) == 3


async def test_pick_central_prefers_on_topic_sentences_with_the_real_model(embedder):
    texts = [
        "The dragon attacked the village at dawn.",
        "Villagers fled as the dragon burned the houses.",
        "My favourite colour is teal.",
        "The dragon's fire destroyed the village granary.",
        "Knights rode out to fight the dragon near the village.",
    ]
    sentences = [Sentence(i, i, t) for i, t in enumerate(texts)]
    vectors = await embedder.embed(texts)
    picked = pick_central(sentences, vectors, max_tokens=40, duplicate_cosine=0.99)
    assert "My favourite colour is teal." not in [s.text for s in picked]
    assert [s.order for s in picked] == sorted(s.order for s in picked), "original order kept"
    assert sum(estimate_tokens(s.text) for s in picked) <= 40


async def test_pick_central_skips_near_duplicates(embedder):
    texts = ["The ship sails at noon.", "The ship sails at noon.", "The crew loads the cargo onto the ship."]
    sentences = [Sentence(i, i, t) for i, t in enumerate(texts)]
    picked = pick_central(sentences, await embedder.embed(texts), max_tokens=200, duplicate_cosine=0.95)
    assert [s.text for s in picked].count("The ship sails at noon.") == 1


def test_pick_central_never_returns_empty_for_one_long_sentence():
    long = Sentence(0, 0, "word " * 500)
    assert pick_central([long], [[1.0, 0.0]], max_tokens=10, duplicate_cosine=0.9) == [long]


def test_render_summary_groups_consecutive_sentences_by_author():
    messages = [msg(0, "a", name="Ana"), msg(1, "b", name="Bram", role="assistant")]
    picked = [Sentence(0, 0, "One."), Sentence(0, 1, "Two."), Sentence(1, 2, "Three.")]
    assert render_summary(messages, picked) == "Ana: One. Two. Bram: Three."


def test_importance_heuristic():
    calm = [msg(i, "we talked about the weather and tea") for i in range(5)]
    dramatic = [
        msg(0, "He swore a promise to avenge the murdered king!"),
        msg(1, "The secret of the cursed crown is blood and poison!", bots=("bot-a", "bot-b")),
        msg(2, "She confessed the truth: the queen never died."),
    ]
    assert importance(calm, participants_of(calm)) == 3
    dramatic_score = importance(dramatic, participants_of(dramatic))
    assert dramatic_score >= 7
    assert 1 <= dramatic_score <= 10


def test_participants_are_bots_and_personas_in_first_appearance_order():
    messages = [msg(0, "x", bots=("b1",), persona=None), msg(1, "y", bots=("b2", "b1"), persona="p9")]
    assert participants_of(messages) == ["b1", "b2", "p9"]


async def test_compose_summary_payload(embedder):
    messages = [
        msg(0, "I found an old map in the cellar. It shows an island to the east."),
        msg(1, "The island is where the pirate treasure was buried.", role="assistant", name="Captain"),
        msg(2, "Then we sail east at dawn to find the treasure."),
        msg(3, "Did you eat breakfast?", role="assistant", name="Captain"),
        msg(4, "We will need a crew and supplies for the voyage to the island."),
    ]
    rng = SummaryRange(0, 4)
    sentences = sentences_of(messages, DEFAULTS.max_sentences)
    vectors = await embedder.embed([s.text for s in sentences])
    sid = summary_id("t", "u", "c", rng, "short_term")
    payload = compose_summary(
        summary_id=sid,
        user_id="u",
        conversation_id="c",
        rng=rng,
        messages=messages,
        sentences=sentences,
        vectors=vectors,
        settings=SummarizerSettings(max_tokens=45),
    )
    assert payload.summary_id == sid
    assert payload.summary_type == "short_term"
    assert payload.method == "extractive"
    assert payload.message_ids == ["m0", "m1", "m2", "m3", "m4"]
    assert (payload.first_index, payload.last_index) == (0, 4)
    assert payload.start_at == T0
    assert payload.end_at == T0 + timedelta(minutes=4)
    assert payload.participants == ["bot-a", "p-1"]
    assert "treasure" in payload.text
    assert "breakfast" not in payload.text
    assert estimate_tokens(payload.text) <= 45 + 10  # author prefixes add a few tokens
