"""Timed effects and extra scan texts in the context's lore scan (pure): the conversation's stored state and
its real length go in, the new state comes out (spec §3.9), over a history window of fixed size."""

from __future__ import annotations

from mnemo.services.context_assembler.items import BotProfile, ChatLine, PersonaProfile
from mnemo.services.context_assembler.lore.activate import activate_lore_state, scan_texts, unversioned, versioned
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook, compile_lore
from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.shared.lore.model import Lorebook, LoreEntry, WorldInfoSettings

BOOK = Lorebook(
    name="Timed",
    entries=[
        LoreEntry(uid=1, key=["storm"], content="A storm front is coming.", sticky=3, cooldown=2),
        LoreEntry(uid=2, key=["ruins"], content="The ruins are old.", delay=5),
        LoreEntry(uid=3, key=["gneiss"], content="Gneiss is banded rock.", match_persona_description=True),
    ],
)
LORE = compile_lore([ActiveBook("bk@1", BOOK, "character")], WorldInfoSettings(), {})


def window(last: int, texts: dict[int, str]) -> list[ChatLine]:
    """The 3 newest messages of a chat whose newest has index ``last``: the window never grows."""
    return [ChatLine(f"m{i}", i, "user", "Mira", texts.get(i, f"small talk {i}")) for i in range(last - 2, last + 1)]


def turn(last: int, state: TimedState, texts: dict[int, str]) -> tuple[set[int], dict[int, str], TimedState]:
    result = activate_lore_state(
        LORE, window(last, texts), "", max_tokens=4000, seed=f"c:{last + 1}", timed=state, message_count=last + 1
    )
    return {i.uid for i in result.items}, {i.uid: i.detail for i in result.items}, result.timed


def test_sticky_outlives_the_key_then_cooldown_blocks_it_then_it_fires_again():
    texts = {10: "A storm is coming", 13: "storm again", 15: "storm once more"}
    fired, why, state = turn(10, TimedState(), texts)  # the chat has 11 messages: sticky for messages 11-13
    assert fired == {1}
    assert why[1] == "key: storm"
    assert "bk@1.1" in state.sticky
    fired, why, state = turn(12, state, texts)
    assert fired == {1}, "still sticky, though the key left the scanned depth (messages 12 and 11)"
    assert why[1] == "sticky"
    fired, _, state = turn(13, state, texts)
    assert fired == set(), "sticky over at 14 messages; the 2-message cooldown blocks the key of message 13"
    assert "bk@1.1" in state.cooldown
    fired, why, _ = turn(15, state, texts)
    assert fired == {1}, "cooldown over"
    assert why[1] == "key: storm"


def test_the_same_turn_asked_twice_is_a_regenerate_not_a_new_message():
    texts = {10: "A storm is coming"}
    _, _, state = turn(10, TimedState(), texts)
    again, _, state_again = turn(10, state, texts)
    assert again == {1}
    assert state_again == state, "no double start on a regenerate"


def test_delay_counts_the_whole_chat_not_the_window():
    early = activate_lore_state(LORE, window(2, {2: "the ruins"}), "", max_tokens=4000, seed="c:3", message_count=3)
    late = activate_lore_state(LORE, window(9, {9: "the ruins"}), "", max_tokens=4000, seed="c:10", message_count=10)
    assert 2 not in {i.uid for i in early.items}, "delay 5: not before the chat has 5 messages"
    assert 2 in {i.uid for i in late.items}


def test_persona_description_is_scanned_only_by_entries_that_opt_in():
    persona = PersonaProfile("p", "Mira", "A geologist who loves gneiss.")
    texts = scan_texts(BotProfile("b", "Ada", "Guide visitors."), persona)
    assert texts == {"persona_description": "A geologist who loves gneiss.", "character_description": "Guide visitors."}
    with_persona = activate_lore_state(LORE, window(4, {}), "", max_tokens=4000, seed="s", scan_data=texts)
    without = activate_lore_state(LORE, window(4, {}), "", max_tokens=4000, seed="s")
    assert {i.uid for i in with_persona.items} == {3}
    assert {i.uid for i in without.items} == set()


def test_stored_records_survive_a_new_version_of_their_book():
    _, _, state = turn(10, TimedState(), {10: "A storm is coming"})
    stored = unversioned(state)
    assert set(stored.sticky) == {"bk.1"}
    edited = [ActiveBook("bk@2", BOOK, "character"), ActiveBook("other@7", BOOK, "character")]
    assert set(versioned(stored, edited).sticky) == {"bk@2.1"}
    assert unversioned(versioned(stored, edited)) == stored
