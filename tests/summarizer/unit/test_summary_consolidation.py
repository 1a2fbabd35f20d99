"""Consolidation and staleness (pure): live set, which summaries fold, the folded payload, the bound."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.summarizer import llm_summary
from mnemo.services.summarizer.consolidation import child_sentences
from mnemo.services.summarizer.domain import RangeMessage, sentences_of
from mnemo.services.summarizer.schemas import SummaryOutput
from mnemo.services.summarizer.settings import SummarizerSettings
from mnemo.shared.aggregates.summaries import (
    consolidated_payload,
    consolidation_id,
    due_batch,
    fold_live,
    recompute_id,
    retirement,
    stale_by,
)
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import SummaryCreated, SummaryType, summary_stream
from tests.envelopes import numbered

T0 = datetime(2026, 3, 1, tzinfo=UTC)
DEFAULTS = SummarizerSettings()


def summary(
    n: int,
    *,
    audience: tuple[str, ...] = ("bard",),
    kind: SummaryType = "short_term",
    importance: int = 3,
    text: str | None = None,
) -> SummaryCreated:
    return SummaryCreated(
        summary_id=f"s{n}",
        user_id="u",
        conversation_id="c",
        summary_type=kind,
        text=text or f"Event {n} happened. It mattered.",
        importance=importance,
        participants=["bard", f"p{n % 2}"],
        start_at=T0 + timedelta(minutes=10 * n),
        end_at=T0 + timedelta(minutes=10 * n + 9),
        message_ids=[f"m{10 * n + i}" for i in range(10)],
        first_index=10 * n,
        last_index=10 * n + 9,
        method="extractive",
        audience=list(audience),
    )


def envelope(version: int, type_: str, payload: dict[str, object], causation: str | None = None) -> EventEnvelope:
    return numbered("t", summary_stream("t", "u", "c"), version, type_, payload, T0, causation=causation)


def test_fold_live_drops_retired_summaries():
    created = [envelope(i + 1, "summary.created", summary(i).model_dump(mode="json")) for i in range(3)]
    _, retired = retirement(summary(1), "consolidated", "sx", T0)
    live = fold_live([*created, envelope(4, "summary.retired", retired.model_dump(mode="json"))])
    assert sorted(live.by_id) == ["s0", "s2"]
    assert live.version == 4


def test_nothing_folds_within_the_bound():
    assert due_batch([summary(i) for i in range(DEFAULTS.max_active)], DEFAULTS) is None


def test_the_oldest_batch_of_an_over_full_group_folds():
    live = [summary(i) for i in reversed(range(DEFAULTS.max_active + 1))]
    batch = due_batch(live, DEFAULTS)
    assert batch is not None
    assert [s.summary_id for s in batch] == ["s0", "s1", "s2", "s3"]


def test_groups_are_per_audience_and_level():
    mixed = [summary(i, audience=("bard",) if i % 2 else ("rook",)) for i in range(12)]
    mixed += [summary(100 + i, kind="consolidated") for i in range(5)]
    assert due_batch(mixed, DEFAULTS) is None, "6 + 6 short_term and 5 consolidated: no group over 8"


def test_consolidated_payload():
    children = [summary(2, importance=4), summary(0, importance=7), summary(1)]
    cid = consolidation_id("t", "u", "c", [c.summary_id for c in children])
    merged = consolidated_payload(summary_id=cid, children=children, text="Merged.", method="extractive")
    assert merged.summary_type == "consolidated"
    assert merged.consolidates == ["s0", "s1", "s2"], "oldest first"
    assert merged.message_ids == [f"m{i}" for i in range(30)]
    assert (merged.first_index, merged.last_index) == (0, 29)
    assert (merged.start_at, merged.end_at) == (T0, T0 + timedelta(minutes=29))
    assert merged.importance == 7
    assert merged.audience == ["bard"]
    assert merged.participants == ["bard", "p0", "p1"]
    folded_again = consolidated_payload(summary_id="x", children=[merged], text="Again.", method="extractive")
    assert folded_again.summary_type == "long_term"
    long_again = consolidated_payload(summary_id="y", children=[folded_again], text="Again.", method="extractive")
    assert long_again.summary_type == "long_term"


def test_ids_are_deterministic():
    assert consolidation_id("t", "u", "c", ["a", "b"]) == consolidation_id("t", "u", "c", ["a", "b"])
    assert consolidation_id("t", "u", "c", ["a", "b"]) != consolidation_id("t2", "u", "c", ["a", "b"])
    assert recompute_id("t", "u", "c", "s1", "e9") != recompute_id("t", "u", "c", "s1", "e10")


def test_child_sentences_keep_child_order():
    children = [summary(1, text="Later. Still later."), summary(0, text="First.")]
    assert [s.text for s in child_sentences(children, 10)] == ["First.", "Later.", "Still later."]
    assert len(child_sentences(children, 2)) == 2


def test_stale_by_finds_covering_summaries_made_before_the_change():
    s0, s1 = summary(0), summary(1)
    redo = summary(2).model_copy(update={"summary_id": "redo", "message_ids": ["m3"]})
    live = fold_live(
        [
            envelope(1, "summary.created", s0.model_dump(mode="json"), causation="rec-5"),
            envelope(2, "summary.created", s1.model_dump(mode="json"), causation="rec-25"),
            envelope(3, "summary.created", redo.model_dump(mode="json"), causation="edit-30"),
            envelope(4, "summary.created", summary(3).model_dump(mode="json")),  # unknown cause
        ]
    )
    versions = {"rec-5": 5, "rec-25": 25, "edit-30": 30}
    assert [s.summary_id for s in stale_by(live, "m3", 40, versions)] == ["s0", "redo"]
    assert [s.summary_id for s in stale_by(live, "m3", 30, versions)] == ["s0"], "a redelivered edit-30"
    assert [s.summary_id for s in stale_by(live, "m3", 4, versions)] == [], "made after the change"
    assert [s.summary_id for s in stale_by(live, "m31", 4, versions)] == ["s3"], "unknown cause: stale"
    assert stale_by(live, "m999", 40, versions) == []


def simulate(n: int, audiences: list[tuple[str, ...]], s: SummarizerSettings) -> int:
    """Add ``n`` short-term summaries (cycling audiences), folding after each as the handler does; the most
    live summaries seen after any step."""
    live: list[SummaryCreated] = []
    worst = 0
    for i in range(n):
        live.append(summary(i, audience=audiences[i % len(audiences)]))
        while (batch := due_batch(live, s)) is not None:
            ids = {c.summary_id for c in batch}
            live = [x for x in live if x.summary_id not in ids]
            live.append(consolidated_payload(summary_id=f"c{i}-{len(live)}", children=batch, text="m", method="x"))
        worst = max(worst, len(live))
    return worst


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 600), st.integers(1, 3), st.integers(2, 9), st.data())
def test_property_live_count_stays_within_three_levels_of_max_active(n, n_audiences, max_active, data):
    batch = data.draw(st.integers(2, max_active + 1))
    s = SummarizerSettings(max_active=max_active, consolidate_batch=batch)
    audiences = [(f"c{k}",) for k in range(n_audiences)]
    assert simulate(n, audiences, s) <= 3 * max_active * n_audiences


def test_consolidate_prompt_renders_and_shows_its_output_shape():
    assert llm_summary.PROMPTS.available()["consolidate"][0] == 1
    ask = llm_summary.consolidation_ask(["Ana found a map.", "Ana sailed east."])
    assert ask.prompt_version == "consolidate.v1"
    text = ask.messages[0].content
    assert "[1] Ana found a map." in text
    assert "[2] Ana sailed east." in text
    example = json.loads(re.findall(r"^\{.*\}$", text, flags=re.MULTILINE)[-1])
    assert set(example) == set(SummaryOutput.model_fields)
    assert llm_summary.PROMPTS.load("consolidate", 1).variables == {"summaries"}


def test_sentences_over_the_limit_are_spread_over_the_whole_span():
    messages = [RangeMessage(f"m{i}", i, "user", "Ana", f"Line {i}. More {i}.", T0) for i in range(100)]
    picked = sentences_of(messages, 20)
    assert len(picked) == 20
    assert picked[0].text == "Line 0."
    assert picked[-1].message_pos >= 90, "the end of the span is sampled too"
    assert [s.order for s in picked] == list(range(20))
    assert len(sentences_of(messages[:3], 20)) == 6, "under the limit: every sentence"
