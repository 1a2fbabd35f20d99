"""Pure context assembly: section order, sources, and the token budget rules."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.assemble.assembly import AssemblyInput, assemble, reachable_history
from mnemo.services.context_assembler.items import BotProfile, ChatLine, KnowledgeItem, PersonaProfile, SummaryItem
from mnemo.shared.tokens import estimate_tokens
from mnemo_client.wire.contract import ContextAssembleReply
from tests.budget_checks import assert_newest_history, assert_within_budget

BOT = BotProfile("bot-1", "Captain Mirelle", "You are a weary airship captain. Speak tersely.")
PERSONA = PersonaProfile("p-1", "Tobin", "A young stowaway with a secret.", ("curious", "nimble"))


def line(i: int, text: str | None = None, role: str = "user", score: float | None = None) -> ChatLine:
    name = "Tobin" if role == "user" else "Captain Mirelle"
    return ChatLine(f"m{i}", i, role, name, text or f"message number {i} about the voyage north", score)


def history(n: int) -> list[ChatLine]:
    return [line(i, role="user" if i % 2 == 0 else "assistant") for i in range(n)]


def names(reply) -> list[str]:
    return [s.name for s in reply.sections]


def test_all_sections_in_injection_order_with_sources():
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        memories=[SummaryItem("s1", "Tobin hid in the cargo hold.", 0.8123, ("m0", "m1"), 0)],
        retrieved=[line(3, "The map shows a storm wall.", "assistant", 0.71)],
        history=history(20)[10:],
        max_tokens=8000,
    )
    reply = assemble(inp)
    assert names(reply) == ["system", "persona", "memories", "retrieved", "history"]
    assert reply.sections[0].text.startswith("You are Captain Mirelle.")
    assert "Tobin" in reply.sections[1].text
    assert "curious, nimble" in reply.sections[1].text
    assert "[81% relevant] Tobin hid in the cargo hold." in reply.sections[2].text
    assert "[71% relevant] Captain Mirelle (assistant): The map shows a storm wall." in reply.sections[3].text
    kinds = [(s.kind, s.id) for s in reply.sources]
    assert kinds[:4] == [("system", "bot-1"), ("persona", "p-1"), ("summary", "s1"), ("message", "m3")]
    assert [s.id for s in reply.sources[4:]] == [f"m{i}" for i in range(10, 20)]
    summary = reply.sources[2]
    assert summary.message_ids == ["m0", "m1"]
    assert summary.score == 0.8123
    assert reply.sources[3].message_ids == ["m3"]
    assert reply.sources[3].score == 0.71
    assert reply.sources[4].score is None
    assert reply.token_count == sum(s.tokens for s in reply.sections)
    assert all(s.tokens == estimate_tokens(s.text) for s in reply.sections)
    assert reply.context == "\n\n".join(s.text for s in reply.sections)
    assert reply.degraded == []


def test_unknown_bot_gets_neutral_system_text_and_no_persona_section():
    reply = assemble(AssemblyInput(bot_id="b", bot=None, persona=None, history=history(2), degraded=["bot_profile"]))
    assert names(reply) == ["system", "history"]
    assert "roleplay" in reply.sections[0].text
    assert reply.degraded == ["bot_profile"]


def test_history_is_trimmed_oldest_first_and_stays_contiguous():
    hist = history(60)
    full = assemble(AssemblyInput(bot_id="b", bot=BOT, persona=PERSONA, history=hist, max_tokens=100_000))
    budget = full.token_count // 2
    reply = assemble(AssemblyInput(bot_id="b", bot=BOT, persona=PERSONA, history=hist, max_tokens=budget))
    kept = [int(s.id[1:]) for s in reply.sources if s.kind == "message"]
    assert 0 < len(kept) < 60
    assert kept == list(range(60 - len(kept), 60)), "the newest messages, contiguous, in order"
    assert reply.token_count <= budget


def test_system_and_persona_are_never_cut_even_past_the_budget():
    long_prompt = BotProfile("b", "Sage", "Remember every rule. " * 200)
    reply = assemble(AssemblyInput(bot_id="b", bot=long_prompt, persona=PERSONA, history=history(5), max_tokens=64))
    assert names(reply) == ["system", "persona"]
    assert reply.sections[0].text.endswith("Remember every rule.")
    assert reply.token_count > 64  # only system + persona, whole


def test_recent_history_floor_comes_before_memories_then_older_history():
    memories = [SummaryItem(f"s{i}", "An important memory of the long voyage. " * 6, 0.9 - i / 100) for i in range(3)]
    inp = AssemblyInput(bot_id="b", bot=BOT, persona=None, memories=memories, history=history(30), min_history=4)
    base = assemble(AssemblyInput(bot_id="b", bot=BOT, persona=None, history=history(30)[-4:], max_tokens=100_000))
    # Room for system + the 4 newest messages + about one memory, not for all history.
    budget = base.token_count + 90
    reply = assemble(AssemblyInput(**{**inp.__dict__, "max_tokens": budget}))
    kept = [s.id for s in reply.sources if s.kind == "message"]
    assert kept[-4:] == ["m26", "m27", "m28", "m29"]
    assert [s.id for s in reply.sources if s.kind == "summary"] == ["s0"], "best memory first"
    assert reply.token_count <= budget


def test_memories_skip_an_item_too_big_and_keep_a_smaller_one():
    big = SummaryItem("big", "word " * 400, 0.95)
    small = SummaryItem("small", "Tobin owes the captain a debt.", 0.5)
    reply = assemble(AssemblyInput(bot_id="b", bot=BOT, persona=None, memories=[big, small], max_tokens=120))
    assert [s.id for s in reply.sources if s.kind == "summary"] == ["small"]


def test_degraded_is_deduplicated_and_passed_through():
    reply = assemble(AssemblyInput(bot_id="b", bot=BOT, persona=None, degraded=["vector_index", "vector_index"]))
    assert reply.degraded == ["vector_index"]


_text = st.text(alphabet=st.sampled_from("abc xyz.!漢字\n"), min_size=0, max_size=300)


@settings(max_examples=200, deadline=None)
@given(
    system=_text,
    persona=st.none() | _text,
    memories=st.lists(st.tuples(_text, st.floats(0, 1)), max_size=6),
    retrieved=st.lists(st.tuples(_text, st.floats(0, 1)), max_size=6),
    hist=st.lists(_text, max_size=25),
    max_tokens=st.integers(64, 3000),
    min_history=st.integers(0, 8),
    facts=st.lists(_text, max_size=6),
)
def test_total_never_exceeds_budget_unless_system_and_persona_alone_do(
    system, persona, memories, retrieved, hist, max_tokens, min_history, facts
):
    inp = AssemblyInput(
        bot_id="b",
        bot=BotProfile("b", "Bot", system),
        persona=PersonaProfile("p", "P", persona) if persona is not None else None,
        memories=[SummaryItem(f"s{i}", t, sc) for i, (t, sc) in enumerate(memories)],
        retrieved=[ChatLine(f"r{i}", i, "user", "U", t, sc) for i, (t, sc) in enumerate(retrieved)],
        history=[ChatLine(f"h{i}", 100 + i, "assistant", "Bot", t) for i, t in enumerate(hist)],
        knowledge=[KnowledgeItem(f"f{i}", t) for i, t in enumerate(facts)],
        max_tokens=max_tokens,
        min_history=min_history,
    )
    reply = assemble(inp)
    if not assert_within_budget(reply, max_tokens):
        assert [s.name for s in reply.sections] == ["system", "persona"][: len(reply.sections)]
    assert_newest_history(reply, len(hist))


def test_reachable_history_is_the_newest_run_that_fits_the_room_left():
    """Retrieval searches only older messages than these, so the window must be exactly what could fit."""
    hist = history(40)
    reachable = reachable_history("bot-1", BOT, PERSONA, hist, 600)
    assert 0 < len(reachable) < 40
    assert reachable == hist[-len(reachable) :]
    more = reachable_history("bot-1", BOT, PERSONA, hist, 6000)
    assert more == hist


@settings(max_examples=150, deadline=None)
@given(n=st.integers(0, 40), max_tokens=st.integers(64, 2000), min_history=st.integers(0, 8))
def test_assembled_history_never_reaches_past_the_reachable_window(n, max_tokens, min_history):
    """A message outside reachable_history is never shown as history, so retrieving it never duplicates."""
    hist = history(n)
    reachable = {h.message_id for h in reachable_history("bot-1", BOT, PERSONA, hist, max_tokens)}
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        memories=[],
        retrieved=[],
        history=hist,
        max_tokens=max_tokens,
        min_history=min_history,
    )
    shown = {s.id for s in assemble(inp).sources if s.kind == "message"}
    assert shown <= reachable


def test_knowledge_section_names_the_speaking_bot_and_follows_the_memories():
    inp = AssemblyInput(
        bot_id="bot-1",
        bot=BOT,
        persona=PERSONA,
        knowledge=[KnowledgeItem("f2", "Tobin is a stowaway.", ("m4",)), KnowledgeItem("f1", "The map is fake.")],
        memories=[
            SummaryItem("s1", "Tobin hid in the cargo hold.", 0.8, ("m0",), 0),
            SummaryItem("l1", "Long ago Tobin saved the ship.", 0.6, kind="legacy_memory"),
        ],
        history=history(4),
    )
    reply = assemble(inp)
    assert names(reply) == ["system", "persona", "legacy_memories", "memories", "knowledge", "history"]
    assert reply.sections[2].text == "Long-term memories:\n- [60% relevant] Long ago Tobin saved the ship."
    assert reply.sections[3].text == "Memories of past conversations:\n- [80% relevant] Tobin hid in the cargo hold."
    assert reply.sections[4].text == "What Captain Mirelle knows:\n- Tobin is a stowaway.\n- The map is fake."
    kinds = [(s.kind, s.id) for s in reply.sources if s.kind in ("knowledge", "summary", "legacy_memory")]
    assert kinds == [("legacy_memory", "l1"), ("summary", "s1"), ("knowledge", "f2"), ("knowledge", "f1")]
    assert next(s for s in reply.sources if s.id == "f2").message_ids == ["m4"]


def test_the_history_floor_comes_before_the_facts_and_an_unjudged_fact_before_a_memory():
    fact = KnowledgeItem("f1", "Tobin carries a sealed letter for the queen. " * 3)
    memory = SummaryItem("s1", "Tobin hid in the cargo hold. " * 6, 0.9)
    with_floor = assemble(AssemblyInput(bot_id="bot-1", bot=BOT, persona=None, history=history(2)))
    room = with_floor.token_count + estimate_tokens("What Captain Mirelle knows:\n- " + fact.text) + 2

    def at(max_tokens: int) -> ContextAssembleReply:
        return assemble(
            AssemblyInput(
                bot_id="bot-1",
                bot=BOT,
                persona=None,
                knowledge=[fact],
                memories=[memory],
                history=history(2),
                max_tokens=max_tokens,
                min_history=2,
            )
        )

    reply = at(room)
    assert names(reply) == ["system", "knowledge", "history"], "the fact took the room the memory wanted"
    assert reply.degraded == []
    floor_only = at(with_floor.token_count + 2)
    assert names(floor_only) == ["system", "history"], "the newest messages are a floor, the fact competes"
    assert floor_only.degraded == ["knowledge:f1"], "a fact no search judged is never left out silently"
