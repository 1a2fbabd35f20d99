"""Summaries cite the turns they carry: an extractive summary's sentences, a consolidation's kept sentences, and
old events (recorded before citations) still read, citing everything they cover."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.summarizer.consolidation import child_sentences, joined_with_citations
from mnemo.services.summarizer.domain import (
    RangeMessage,
    Sentence,
    SummarizerSettings,
    SummaryRange,
    compose_summary,
    render_summary,
    sentences_of,
)
from mnemo.services.summarizer.extractive import render_cited
from mnemo.shared.events.recorded import SUMMARY_CREATED, Citation, SummaryCreated

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def msg(i: int, content: str, name: str = "Ana", role: str = "user") -> RangeMessage:
    return RangeMessage(f"m{i}", i, role, name, content, T0 + timedelta(minutes=i), ("bot-a",), "p-1")


def cited_text(text: str, citations: list[Citation]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in citations:
        out.setdefault(c.message_id, []).append(text[c.start : c.end])
    return out


def test_each_rendered_sentence_cites_its_message_at_its_place_in_the_text():
    messages = [msg(0, "One. Two."), msg(1, "Three.", name="Bram", role="assistant"), msg(2, "Four.")]
    picked = [Sentence(0, 0, "One."), Sentence(0, 1, "Two."), Sentence(1, 2, "Three."), Sentence(2, 3, "Four.")]
    text, citations = render_cited(messages, picked)
    assert text == render_summary(messages, picked) == "Ana: One. Two. Bram: Three. Ana: Four."
    assert cited_text(text, citations) == {"m0": ["One.", "Two."], "m1": ["Three."], "m2": ["Four."]}


def test_an_extractive_summary_cites_only_the_messages_whose_sentences_it_kept():
    # max_tokens fits about one sentence: the summary holds one message's words and cites that one alone.
    messages = [msg(i, f"The caravan reached the oasis {i} at dusk.") for i in range(4)]
    sentences = sentences_of(messages, 100)
    vectors = [[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.95, 0.05]]
    summary = compose_summary(
        summary_id="s",
        user_id="u",
        conversation_id="c",
        rng=SummaryRange(0, 3),
        messages=messages,
        sentences=sentences,
        vectors=vectors,
        settings=SummarizerSettings(max_tokens=12),
    )
    cited = summary.cited_message_ids()
    assert summary.message_ids == ["m0", "m1", "m2", "m3"], "it still covers the whole range"
    assert 0 < len(cited) < 4
    for m in cited:
        assert messages[int(m[1:])].content in summary.text


def test_an_event_recorded_before_citations_cites_everything_it_covers():
    payload = {
        "summary_id": "s",
        "user_id": "u",
        "conversation_id": "c",
        "summary_type": "short_term",
        "text": "Ana: hello.",
        "importance": 3,
        "participants": ["bot-a"],
        "start_at": T0.isoformat(),
        "end_at": T0.isoformat(),
        "message_ids": ["m0", "m1"],
        "first_index": 0,
        "last_index": 1,
        "method": "llm:x",
    }
    old = SUMMARY_CREATED.parse(payload)
    assert old.citations == []
    assert old.cited_message_ids() == ["m0", "m1"]


def child(n: int, messages: list[RangeMessage], cite: bool = True) -> SummaryCreated:
    picked = [Sentence(i, i, m.content) for i, m in enumerate(messages)]
    text, citations = render_cited(messages, picked)
    return SummaryCreated(
        summary_id=f"s{n}",
        user_id="u",
        conversation_id="c",
        summary_type="short_term",
        text=text,
        importance=3,
        participants=["bot-a"],
        start_at=T0,
        end_at=T0,
        message_ids=[m.message_id for m in messages],
        first_index=messages[0].index,
        last_index=messages[-1].index,
        method="extractive" if cite else "llm:x",
        citations=citations if cite else [],
    )


def test_a_consolidation_cites_the_turns_of_the_sentences_it_kept():
    a = child(0, [msg(0, "The bridge fell."), msg(1, "Nobody was hurt.", name="Bram")])
    b = child(1, [msg(2, "We rebuilt it in May."), msg(3, "It holds now.", name="Bram")])
    sentences = child_sentences([a, b], 100)
    kept = [s for s in sentences if "bridge" in s.text or "May" in s.text]
    text, citations = joined_with_citations([a, b], kept)
    assert text == "Ana: The bridge fell. Ana: We rebuilt it in May."
    assert cited_text(text, citations) == {"m0": ["Ana: The bridge fell."], "m2": ["Ana: We rebuilt it in May."]}


def test_a_sentence_kept_from_an_uncited_child_cites_all_that_child_covers():
    llm = child(0, [msg(0, "A storm came."), msg(1, "The roof leaked.")], cite=False)
    cited = child(1, [msg(2, "Then the sun.")])
    sentences = child_sentences([llm, cited], 100)
    text, citations = joined_with_citations([llm, cited], sentences)
    assert {c.message_id for c in citations} == {"m0", "m1", "m2"}
    assert text.startswith(llm.text)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.sampled_from(["Go.", "Wait here", "Why?", "Yes! Sure.", "a b c.", "…", "Ok"]), min_size=1, max_size=3
        ),
        min_size=1,
        max_size=4,
    ),
    st.data(),
)
def test_consolidated_citations_always_point_inside_the_text_at_a_kept_child_message(texts, data):
    children = []
    index = 0
    for n, group in enumerate(texts):
        messages = []
        for content in group:
            messages.append(msg(index, content, name="Ana" if index % 2 else "Bram"))
            index += 1
        children.append(child(n, messages))
    sentences = child_sentences(children, 100)
    kept = data.draw(st.lists(st.sampled_from(sentences), unique=True)) if sentences else []
    kept.sort(key=lambda s: s.order)
    text, citations = joined_with_citations(children, kept)
    covered = {m for c in children for m in c.message_ids}
    for c in citations:
        assert 0 <= c.start < c.end <= len(text)
        assert c.message_id in covered
    assert bool(citations) == bool(kept)
