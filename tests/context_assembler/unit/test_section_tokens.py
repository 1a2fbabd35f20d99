"""The budget's incremental section counts (``section_tokens.py``) pack exactly what re-rendering and counting
each whole section packed: the same estimator behind another type takes the old path, the oracle."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble, reachable_history
from mnemo.services.context_assembler.assemble.budget import Budget
from mnemo.services.context_assembler.assemble.draft import Draft
from mnemo.services.context_assembler.assemble.render import lore_section
from mnemo.services.context_assembler.items import KnowledgeItem, RememberedItem, SummaryItem
from mnemo.shared.tokens import EstimatedTokens, estimate_tokens
from tests.context_assembler.unit.scene import BOT, PERSONA, bot_line, lore_entry, user_line


class WholeSectionTokens:
    """The estimator, not as :class:`EstimatedTokens`: every section re-rendered and counted whole."""

    def count(self, text: str) -> int:
        return estimate_tokens(text)


# Words, spaces, newlines, CJK and emoji: every part of the estimator (chars, words, wide characters) can lead.
_text = st.text(alphabet="ab xy\n\t.-灯台🙂é語", max_size=60)
_score = st.floats(0, 1)


@settings(max_examples=200, deadline=None)
@given(
    lore=st.lists(st.tuples(_text, st.booleans(), st.integers(0, 7)), max_size=6),
    facts=st.lists(st.tuples(_text, st.one_of(st.none(), _score)), max_size=8),
    memories=st.lists(st.tuples(_text, _score, st.booleans()), max_size=8),
    remembered=st.lists(
        st.tuples(_text, _score, st.sampled_from(["procedural", "episodic", "semantic", "other"])), max_size=6
    ),
    retrieved=st.lists(st.tuples(_text, st.one_of(st.none(), _score)), max_size=8),
    hist=st.lists(_text, max_size=12),
    max_tokens=st.integers(0, 600),
    min_history=st.integers(0, 5),
    directive=st.booleans(),
    bot_known=st.booleans(),
)
def test_incremental_counts_pack_what_whole_section_counts_packed(
    lore, facts, memories, remembered, retrieved, hist, max_tokens, min_history, directive, bot_known
):
    """Lore positions 0-7 place entries in the system text (before and after the character), the lore section
    and the history; an unknown bot's system text is the neutral one."""
    bot = BOT if bot_known else None
    inputs: dict[str, Any] = {
        "lore": [
            lore_entry(i, t, position=p, constant=c, order=100 - i, book="b", detail="x")
            for i, (t, c, p) in enumerate(lore)
        ],
        "knowledge": [KnowledgeItem(f"f{i}", t, score=s) for i, (t, s) in enumerate(facts)],
        "memories": [
            SummaryItem(f"s{i}", t, s, first_index=i, kind="legacy_memory" if leg else "summary")
            for i, (t, s, leg) in enumerate(memories)
        ],
        "remembered": [RememberedItem(f"m{i}", k, t, s, "why") for i, (t, s, k) in enumerate(remembered)],
        "retrieved": [user_line(f"r{i}", i, t, persona=None, score=s) for i, (t, s) in enumerate(retrieved)],
        "history": [bot_line(f"h{i}", 100 + i, t) for i, t in enumerate(hist)],
    }
    asked: dict[str, Any] = {"max_tokens": max_tokens, "min_history": min_history, "directive": directive}
    counters = (EstimatedTokens(), WholeSectionTokens())
    replies = [assemble(AssemblyInput("bot-1", bot, PERSONA, counter=c, **asked, **inputs)) for c in counters]
    assert replies[0] == replies[1]
    reachable = [
        reachable_history("bot-1", bot, PERSONA, inputs["history"], max_tokens, inputs["lore"], counter)
        for counter in counters
    ]
    assert reachable[0] == reachable[1]


def test_the_same_object_twice_in_a_list_is_counted_as_rendered():
    fact = KnowledgeItem("f1", "the storm wall grows darker")
    same = [
        assemble(AssemblyInput("bot-1", BOT, PERSONA, knowledge=[fact, fact], max_tokens=budget, counter=counter))
        for budget in (30, 40, 60)
        for counter in (EstimatedTokens(), WholeSectionTokens())
    ]
    assert same[0::2] == same[1::2]


@settings(max_examples=300, deadline=None)
@given(
    lore=st.lists(st.tuples(_text, st.integers(0, 7)), max_size=8),
    facts=st.lists(_text, max_size=4),
    bot_known=st.booleans(),
)
def test_every_running_count_is_the_whole_section_counted(lore, facts, bot_known):
    """Count by count, not only the packed result: a count off by a newline rarely changes what fits."""
    entries = [lore_entry(i, t, position=p) for i, (t, p) in enumerate(lore)]
    knowledge = [KnowledgeItem(f"f{i}", t) for i, t in enumerate(facts)]
    inp = AssemblyInput("bot-1", BOT if bot_known else None, PERSONA, lore=entries, knowledge=knowledge)
    budget = Budget(Draft(inp, []))
    offers = [(lore_section(e), budget.draft.lore, e) for e in entries]
    offers += [("knowledge", budget.draft.knowledge, f) for f in knowledge]
    for section, kept, item in offers:
        assert budget.offer(section, kept, item)  # the default budget holds them all
        assert budget.section_tokens[section] == estimate_tokens(budget.draft.render(section)), section
