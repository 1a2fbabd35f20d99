"""Pure context assembly: the token budget shrinks parts in their documented order, names what must never go
silently, and holds with any token counter."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble, reachable_history
from mnemo.services.context_assembler.assemble.budget import Budget
from mnemo.services.context_assembler.assemble.draft import Draft
from mnemo.services.context_assembler.assemble.render import AT_DEPTH
from mnemo.services.context_assembler.items import ChatLine, KnowledgeItem, SummaryItem
from tests.budget_checks import assert_newest_history, assert_within_budget
from tests.context_assembler.unit.scene import BOT, PERSONA, SENTENCE, bot_line, lore_entry, user_line


def full_input(min_history: int = 2) -> AssemblyInput:
    return AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        lore=[
            lore_entry(1, f"Constant lore: {SENTENCE}. " * 3, detail="constant", order=10, constant=True),
            lore_entry(2, f"Keyword lore: {SENTENCE}.", detail="key: storm", order=50),
        ],
        knowledge=[KnowledgeItem(f"f{i}", f"Fact {i}: {SENTENCE}.") for i in range(2)],
        memories=[
            *[SummaryItem(f"s{i}", f"Memory {i}: {SENTENCE}.", 0.9 - i / 10, first_index=i) for i in range(2)],
            *[SummaryItem(f"l{i}", f"Legacy {i}: {SENTENCE}.", 0.8 - i / 10, kind="legacy_memory") for i in range(2)],
        ],
        retrieved=[user_line(f"r{i}", i, f"Old {i}: {SENTENCE}.", persona=None, score=0.7) for i in range(2)],
        history=[bot_line(f"h{i}", 10 + i, f"Now {i}: {SENTENCE}.") for i in range(6)],
        min_history=min_history,
    )


def kept(reply) -> dict[str, int]:
    ids = [s.id for s in reply.sources]
    hist = sum(1 for i in ids if i.startswith("h"))
    return {
        "history": hist,
        "retrieved": sum(1 for i in ids if i.startswith("r")),
        "memories": sum(1 for i in ids if i.startswith("s")),
        "legacy_memories": sum(1 for i in ids if i.startswith("l")),
        "lore": int("book.2" in ids),
        "knowledge": sum(1 for i in ids if i.startswith("f")),
        "constant_lore": int("book.1" in ids),
    }


def cut_order(inp: AssemblyInput) -> list[str]:
    """Step the budget down one token at a time; the parts in the order they first lose an item."""
    full = assemble(AssemblyInput(**{**inp.__dict__, "max_tokens": 100_000}))
    everything = kept(full)
    order: list[str] = []
    for budget in range(full.token_count, 63, -1):
        reply = assemble(AssemblyInput(**{**inp.__dict__, "max_tokens": budget}))
        assert reply.token_count <= budget or budget < 64
        now = kept(reply)
        for part, n in now.items():
            if n < everything[part] and part not in order:
                order.append(part)
        if now["history"] < inp.min_history and "history_floor" not in order:
            order.append("history_floor")
    return order


def test_budget_cuts_history_then_the_scored_items_by_value_then_floor_lore_constant_lore():
    # Lines of about the same length: retrieved 0.7, legacy 0.8 / 0.7, memories 0.9 / 0.8, facts unjudged (1.0).
    assert cut_order(full_input(min_history=2)) == [
        "history",
        "retrieved",
        "legacy_memories",
        "memories",
        "knowledge",
        "history_floor",
        "lore",
        "constant_lore",
    ]


def test_the_scored_sections_compete_by_value_not_by_a_fixed_order():
    inp = full_input(min_history=2)
    relevant_turns = [replace(r, score=0.95) for r in inp.retrieved]
    weak = [replace(m, score=0.2) for m in inp.memories]
    judged = [replace(f, score=0.5) for f in inp.knowledge]
    flipped = AssemblyInput(**{**inp.__dict__, "retrieved": relevant_turns, "memories": weak, "knowledge": judged})
    order = cut_order(flipped)
    assert order[0] == "history"
    assert order[-3:] == ["history_floor", "lore", "constant_lore"]
    assert order[1:-3] == ["memories", "legacy_memories", "knowledge", "retrieved"], (
        "the weak memories go first, the relevant turns last"
    )


def test_without_a_history_floor_the_order_is_history_scored_items_lore():
    order = cut_order(full_input(min_history=0))
    assert order == ["history", "retrieved", "legacy_memories", "memories", "knowledge", "lore", "constant_lore"]


def fixed_tokens() -> int:
    return assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=PERSONA)).token_count


def test_system_and_persona_survive_every_cut():
    reply = assemble(AssemblyInput(**{**full_input().__dict__, "max_tokens": fixed_tokens()}))
    assert [s.name for s in reply.sections] == ["system", "persona"]
    past = assemble(AssemblyInput(**{**full_input().__dict__, "max_tokens": fixed_tokens() - 10}))
    assert [s.name for s in past.sections] == ["system", "persona"]
    assert past.token_count == fixed_tokens(), "whole, even past the budget"


def test_a_constant_entry_and_facts_that_cannot_fit_are_named_in_degraded():
    inp = full_input()
    reply = assemble(AssemblyInput(**{**inp.__dict__, "max_tokens": fixed_tokens(), "degraded": ("vector_index",)}))
    assert reply.degraded == ["vector_index", "lore:1", "knowledge:f0", "knowledge:f1"]
    non_constant_only = AssemblyInput(
        **{**inp.__dict__, "knowledge": (), "lore": inp.lore[1:], "max_tokens": fixed_tokens()}
    )
    assert assemble(non_constant_only).degraded == [], "a keyword entry or a memory left out is not degraded"


def test_a_fact_the_search_found_unrelated_goes_silently_a_related_one_is_named():
    facts = [KnowledgeItem("related", f"Fact: {SENTENCE}.", score=0.6), KnowledgeItem("unrelated", "x", score=0.0)]
    reply = assemble(
        AssemblyInput(bot_id="bot-1", bot=BOT, persona=PERSONA, knowledge=facts, max_tokens=fixed_tokens())
    )
    assert reply.degraded == ["knowledge:related"]


def test_more_than_five_missing_facts_are_counted():
    facts = [KnowledgeItem(f"f{i}", f"Fact {i}: {SENTENCE}.") for i in range(9)]
    reply = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None, knowledge=facts, max_tokens=64))
    kept = [s.id for s in reply.sources if s.kind == "knowledge"]
    assert kept == ["f0", "f1"], "newest facts first, as many as fit"
    assert reply.degraded == [f"knowledge:f{i}" for i in range(2, 7)] + ["knowledge:+2"]


class CharCounter:
    """One token per character: a stand-in tokenizer that counts very differently from the estimator."""

    def count(self, text: str) -> int:
        return len(text)


def test_the_configured_counter_counts_every_section_and_bounds_the_budget():
    inp = AssemblyInput(**{**full_input().__dict__, "counter": CharCounter(), "max_tokens": 900})
    reply = assemble(inp)
    assert all(s.tokens == len(s.text) for s in reply.sections)
    assert reply.token_count <= 900
    with_estimator = assemble(AssemblyInput(**{**full_input().__dict__, "max_tokens": 900}))
    assert len(reply.sources) < len(with_estimator.sources), "characters are more tokens than the estimate"
    reach = reachable_history("bot-1", BOT, PERSONA, full_input().history, 300, counter=CharCounter())
    assert len(reach) < len(reachable_history("bot-1", BOT, PERSONA, full_input().history, 300))


_text = st.text(alphabet=st.sampled_from("abc xyz.!漢\n"), min_size=1, max_size=120)


@settings(max_examples=200, deadline=None)
@given(
    lore=st.lists(st.tuples(_text, st.booleans(), st.integers(0, 7), st.integers(0, 6), st.integers(0, 2)), max_size=6),
    facts=st.lists(_text, max_size=8),
    memories=st.lists(st.tuples(_text, st.floats(0, 1), st.booleans()), max_size=6),
    hist=st.lists(st.tuples(_text, st.sampled_from(["p-a", "p-b", None])), max_size=20),
    max_tokens=st.integers(64, 1500),
    min_history=st.integers(0, 6),
)
def test_budget_holds_and_only_constant_lore_and_facts_left_out_are_named(
    lore, facts, memories, hist, max_tokens, min_history
):
    items = [
        lore_entry(i, t, position=p, depth=d, role=r, constant=c, book="b", detail="x")
        for i, (t, c, p, d, r) in enumerate(lore)
    ]
    history = [
        ChatLine(f"h{i}", i, "user" if p else "assistant", "N", t, persona_id=p, persona_name=(p or "")[-1:])
        for i, (t, p) in enumerate(hist)
    ]
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        lore=items,
        knowledge=[KnowledgeItem(f"f{i}", t) for i, t in enumerate(facts)],
        memories=[
            SummaryItem(f"s{i}", t, sc, kind="legacy_memory" if leg else "summary")
            for i, (t, sc, leg) in enumerate(memories)
        ],
        history=history,
        max_tokens=max_tokens,
        min_history=min_history,
    )
    reply = assemble(inp)
    assert_within_budget(reply, max_tokens)
    shown = assert_newest_history(reply, len(hist))  # no retrieved messages here: every message source
    reachable = reachable_history("bot-1", BOT, PERSONA, history, max_tokens, items)
    assert {f"h{i}" for i in shown} <= {h.message_id for h in reachable}
    kept_ids = {s.id for s in reply.sources}
    lost_constants = [
        f"lore:{i.uid}" for i in sorted(items, key=lambda i: -i.order) if i.constant and i.ident not in kept_ids
    ]
    lost_facts = [f.fact_id for f in inp.knowledge if f.fact_id not in kept_ids]
    named = [f"knowledge:{f}" for f in lost_facts[:5]] + (
        [f"knowledge:+{len(lost_facts) - 5}"] if len(lost_facts) > 5 else []
    )
    assert reply.degraded == lost_constants + named
    assert reply.messages[0].content == "\n\n".join(s.text for s in reply.sections if s.name != "history")


def fill_one_by_one(budget: Budget, limit: int | None) -> bool:
    """The history fill as it was before the bisection: one message at a time, newest first."""
    history, kept = budget.draft.inp.history, budget.draft.history
    for line in reversed(history[: len(history) - len(kept)]):
        if limit is not None and len(kept) >= limit:
            return True
        if not budget.offer("history", kept, line):
            return False
    return True


@settings(max_examples=150, deadline=None)
@given(
    lengths=st.lists(st.integers(min_value=0, max_value=120), min_size=0, max_size=45),
    depths=st.lists(st.integers(min_value=0, max_value=50), max_size=3),
    max_tokens=st.integers(min_value=0, max_value=1500),
    already=st.integers(min_value=0, max_value=6),
    limit=st.one_of(st.none(), st.integers(min_value=0, max_value=50)),
)
def test_history_bisection_keeps_what_the_one_by_one_fill_kept(
    lengths: list[int], depths: list[int], max_tokens: int, already: int, limit: int | None
) -> None:
    """Whatever the lines, at-depth lore, budget, lines already kept and limit: the same run, the same counts
    and the same answer as adding one message at a time."""
    history = [user_line(f"h{i}", i, ("word " * n).strip(), persona=None) for i, n in enumerate(lengths)]
    lore = [
        lore_entry(i, f"Depth lore {i}: {SENTENCE}.", position=AT_DEPTH, depth=d, order=10, detail="k")
        for i, d in enumerate(depths)
    ]
    results = []
    for fill in (lambda b: b.fill_history(limit), lambda b: fill_one_by_one(b, limit)):
        inp = AssemblyInput("bot-1", BOT, PERSONA, history=history, lore=lore, max_tokens=max_tokens)
        budget = Budget(Draft(inp, []))
        budget.draft.lore.extend(lore)
        budget.draft.history.extend(list(reversed(history))[: min(already, len(history))])
        answer = fill(budget)
        results.append((answer, [h.message_id for h in budget.draft.history], dict(budget.section_tokens)))
    assert results[0] == results[1]


def test_a_memory_whose_cited_turns_are_all_shown_already_goes_in_last():
    turns = [user_line(f"r{i}", i, f"Old {i}: {SENTENCE}.", persona=None, score=0.95) for i in range(2)]
    copies = [
        SummaryItem("copy", f"Both old turns: {SENTENCE}.", 0.9, message_ids=("r0", "r1")),
        SummaryItem("of-history", f"The newest turn: {SENTENCE}.", 0.9, message_ids=("h5",)),
        SummaryItem("legacy-copy", f"Legacy: {SENTENCE}.", 0.9, message_ids=("r1",), kind="legacy_memory"),
    ]
    news = [
        SummaryItem("more", f"An old turn and another: {SENTENCE}.", 0.5, message_ids=("r0", "x9")),
        SummaryItem("uncited", f"Cites nothing: {SENTENCE}.", 0.5),
    ]
    fact = KnowledgeItem("fact", f"Fact: {SENTENCE}.", message_ids=("r0",), score=0.5)
    inp = AssemblyInput(**{**full_input().__dict__, "retrieved": turns, "memories": news, "knowledge": [fact]})
    without_copies = assemble(AssemblyInput(**{**inp.__dict__, "max_tokens": 10_000}))
    tight = AssemblyInput(**{**inp.__dict__, "memories": [*copies, *news], "max_tokens": without_copies.token_count})
    ids = {s.id for s in assemble(tight).sources}
    assert {"r0", "r1", "h5", "more", "uncited", "fact"} <= ids, "the weaker new memories and the fact beat copies"
    assert not {"copy", "of-history", "legacy-copy"} & ids, "their cited turns are all in the reply already"
    roomy = {s.id for s in assemble(AssemblyInput(**{**tight.__dict__, "max_tokens": 10_000})).sources}
    assert {"copy", "of-history", "legacy-copy"} <= roomy, "with room to spare they still go in, last"


def test_the_room_a_shown_memory_would_take_goes_to_the_next_item():
    turn = user_line("r0", 0, f"Old: {SENTENCE}.", persona=None, score=0.95)
    # The copy is shorter and scores higher: without holding it back it would go first and leave no room.
    copy = SummaryItem("copy", f"Old: {SENTENCE}.", 0.9, message_ids=("r0",))
    other = SummaryItem("other", f"Something else entirely: {SENTENCE}.", 0.8, message_ids=("r7",))
    base = AssemblyInput(bot_id="bot-1", bot=BOT, persona=PERSONA, retrieved=[turn], memories=[copy, other])
    alone = assemble(AssemblyInput(**{**base.__dict__, "memories": [other]}))
    reply = assemble(AssemblyInput(**{**base.__dict__, "max_tokens": alone.token_count}))
    assert [s.id for s in reply.sources if s.kind == "summary"] == ["other"]
