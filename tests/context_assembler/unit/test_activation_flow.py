"""Rules that need more than one entry table: book priority, the budget cut, timed effects across turns."""

from __future__ import annotations

from mnemo.services.context_assembler.lore.engine.activation import token_budget
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.engine.timed import TimedState
from mnemo.shared.lore.model import Position
from tests.context_assembler.unit.activation_helpers import activated, book, scan, uids

WORDS = " ".join(["word"] * 40)  # 40 words -> 54 estimated tokens


def test_2_chat_lore_gets_budget_before_character_lore() -> None:
    char = book({"constant": True, "order": 999, "content": WORDS}, name="char")
    chat = book({"constant": True, "order": 1, "content": WORDS}, name="chat")
    books = [ActiveBook("char", char, "character"), ActiveBook("chat", chat, "chat")]
    result = scan(books, ["z"], max_context=300)  # budget 75: room for one entry
    assert [e.ident for e in result.entries] == ["chat.0"]


def test_2_character_first_strategy_beats_global_order() -> None:
    glob = book({"constant": True, "order": 999, "content": WORDS}, name="g")
    char = book({"constant": True, "order": 1, "content": WORDS}, name="c")
    books = [ActiveBook("g", glob, "global"), ActiveBook("c", char, "character")]
    assert [e.ident for e in scan(books, ["z"], max_context=300).entries] == ["c.0"]
    evenly = scan(books, ["z"], max_context=300, settings={"character_strategy": 0})
    assert [e.ident for e in evenly.entries] == ["g.0"]


def test_3_4_budget_is_percent_of_context_rounded_and_capped() -> None:
    assert token_budget(25, 1000, 0) == 250
    assert token_budget(25, 1002, 0) == 251  # 250.5 rounds up like Math.round
    assert token_budget(25, 1000, 100) == 100
    assert token_budget(1, 10, 0) == 1


def test_3_4_greedy_cut_drops_the_first_over_budget_and_everything_after() -> None:
    entries = [
        {"constant": True, "order": 30, "content": WORDS},
        {"constant": True, "order": 20, "content": WORDS},
        {"constant": True, "order": 10, "content": "tiny"},
    ]
    result = scan(book(*entries), ["z"], max_context=400)  # budget 100: the second entry crosses it
    assert activated(result) == {0}
    assert result.overflowed


def test_3_4_ignore_budget_entries_still_inserted_after_overflow() -> None:
    entries = [
        {"constant": True, "order": 30, "content": WORDS},
        {"constant": True, "order": 20, "content": WORDS},
        {"constant": True, "order": 10, "content": WORDS, "ignoreBudget": True},
    ]
    assert activated(scan(book(*entries), ["z"], max_context=400)) == {0, 2}


def test_3_4_probability_is_reproducible_from_the_seed() -> None:
    entries = [{"key": ["x"], "probability": 50} for _ in range(30)]
    first = scan(book(*entries), ["x"], seed="conv-1:7")
    again = scan(book(*entries), ["x"], seed="conv-1:7")
    other = scan(book(*entries), ["x"], seed="conv-1:8")
    assert uids(first) == uids(again)
    assert 0 < len(first.entries) < 30
    assert uids(first) != uids(other)


def test_3_9_sticky_then_cooldown_timeline() -> None:
    """The spec's example: sticky 3, cooldown 2, activated at L=k: active k..k+2, off k+3 and k+4, free at k+5."""
    lore = book({"key": ["trigger"], "sticky": 3, "cooldown": 2})
    state = TimedState()
    seen = []
    for turn in range(1, 7):
        # One more message each turn, always mentioning the key: only the timed effects decide.
        result = scan(lore, ["trigger"] * turn, timed=state)
        seen.append(bool(result.entries))
        state = result.timed
    assert seen == [True, True, True, False, False, True]


def test_3_9_regenerate_at_same_length_undoes_sticky() -> None:
    lore = book({"key": ["trigger"], "sticky": 5})
    first = scan(lore, ["trigger"])
    assert first.timed.sticky
    again = scan(lore, ["nothing"], timed=first.timed)  # same message count: the chat did not advance
    assert activated(again) == set()


def test_3_9_sticky_entry_needs_no_key_and_skips_probability() -> None:
    lore = book({"key": ["trigger"], "sticky": 3, "probability": 100})
    first = scan(lore, ["trigger"])
    later = scan(lore, ["trigger", "unrelated"], timed=first.timed)
    assert [e.why.kind for e in later.entries] == ["sticky"]


def test_3_8_sticky_member_wins_its_group() -> None:
    lore = book(
        {"key": ["a"], "group": "g", "sticky": 3}, {"key": ["b"], "group": "g", "groupOverride": True, "order": 999}
    )
    first = scan(lore, ["a"])
    assert activated(first) == {0}
    later = scan(lore, ["a", "b"], timed=first.timed)
    assert activated(later) == {0}


def test_4_at_depth_groups_by_depth_and_role() -> None:
    lore = book(
        {"constant": True, "position": 4, "depth": 0, "role": 1, "content": "u"},
        {"constant": True, "position": 4, "depth": 2, "role": 0, "content": "s"},
        {"constant": True, "position": 4, "depth": 0, "role": 1, "order": 5, "content": "u2"},
    )
    placements = scan(lore, ["z"]).placements
    assert [(p.position, p.depth, p.role, p.content) for p in placements] == [
        (Position.AT_DEPTH, 2, 0, "s"),
        (Position.AT_DEPTH, 0, 1, "u2\nu"),
    ]


def test_4_outlet_descending_and_named() -> None:
    lore = book(
        {"constant": True, "position": 7, "outletName": "O", "order": 1, "content": "low"},
        {"constant": True, "position": 7, "outletName": "O", "order": 9, "content": "high"},
        {"constant": True, "position": 7, "content": "nameless"},
    )
    [outlet] = scan(lore, ["z"]).placements
    assert (outlet.outlet_name, outlet.content) == ("O", "high\nlow")


def test_why_names_the_key_and_secondary_keys() -> None:
    lore = book({"key": ["zzz", "Dragon"], "keysecondary": ["fire", "ice"], "selective": True})
    [entry] = scan(lore, ["the dragon breathes fire"]).entries
    assert (entry.why.kind, entry.why.key, entry.why.secondary) == ("key", "Dragon", ("fire",))
