"""Presence-aware summaries: no summary tells a character about a message it did not witness.

A bot witnessed a message when it is in its ``bot_ids`` or the message names no bot (the rule the
context-assembler applies to the messages themselves, ``mnemo.shared.presence.bot_may_see``); a persona when it is the
message's ``persona_id`` or the message names no persona.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.summarizer.domain import AudiencePart, RangeMessage, SummaryRange, presence_parts, summary_id
from mnemo.shared.events.recorded import EVERYONE
from mnemo.shared.presence import bot_may_see

T0 = datetime(2026, 3, 1, tzinfo=UTC)


def msg(i: int, bots: tuple[str, ...] = (), persona: str | None = None) -> RangeMessage:
    return RangeMessage(f"m{i}", i, "user", "Ana", f"text {i}.", T0 + timedelta(minutes=i), bots, persona)


def ids(part: AudiencePart) -> list[str]:
    return [m.message_id for m in part.messages]


def test_everyone_present_throughout_gives_one_summary_for_them():
    messages = [msg(i, ("bard", "rook"), "ana") for i in range(5)]
    [main] = presence_parts(messages)
    assert main.audience == ("bard", "rook", "ana")
    assert main.character_id is None
    assert ids(main) == ["m0", "m1", "m2", "m3", "m4"]


def test_a_character_who_leaves_gets_its_own_summary_of_what_it_saw():
    messages = [msg(0, ("bard", "rook"), "ana"), msg(1, ("bard", "rook"), "ana"), msg(2, ("bard",), "ana")]
    main, rook = presence_parts(messages)
    assert main.audience == ("bard", "ana"), "rook missed m2: not in the main summary's audience"
    assert ids(main) == ["m0", "m1", "m2"]
    assert (rook.audience, rook.character_id) == (("rook",), "rook")
    assert ids(rook) == ["m0", "m1"], "never m2, the message said while rook was away"


def test_no_presence_information_means_everyone():
    [main] = presence_parts([msg(0), msg(1)])
    assert main.audience == (EVERYONE,)


def test_no_scene_information_means_every_bot_even_with_personas():
    [main] = presence_parts([msg(0, (), "ana"), msg(1), msg(2, (), "ben")])
    assert main.audience == (EVERYONE,), "every bot may be shown each message, so their summary too"


def test_messages_naming_nobody_do_not_restrict_the_audience():
    messages = [msg(0, ("bard",)), msg(1), msg(2, ("bard",))]
    [main] = presence_parts(messages)
    assert main.audience == ("bard",)
    assert ids(main) == ["m0", "m1", "m2"]


def test_missing_information_restricts_only_its_own_kind():
    # The platform names the persona on user messages and the bot on bot replies only.
    messages = [msg(0, (), "ana"), msg(1, ("bard",)), msg(2, (), "ana"), msg(3, ("bard",))]
    [main] = presence_parts(messages)
    assert main.audience == ("bard", "ana")
    assert ids(main) == ["m0", "m1", "m2", "m3"]


def test_a_persona_switch_splits_the_personas_only():
    main, ana, ben = presence_parts([msg(0, ("bard",), "ana"), msg(1, ("bard",)), msg(2, ("bard",), "ben")])
    assert main.audience == ("bard",)
    assert (ana.audience, ids(ana)) == (("ana",), ["m0", "m1"])
    assert (ben.audience, ids(ben)) == (("ben",), ["m1", "m2"])


def test_nobody_present_throughout_gives_no_main_summary():
    bard, rook = presence_parts([msg(0, ("bard",)), msg(1), msg(2, ("rook",))])
    assert (bard.audience, ids(bard)) == (("bard",), ["m0", "m1"])
    assert (rook.audience, ids(rook)) == (("rook",), ["m1", "m2"])


def test_per_character_ids_are_distinct_and_deterministic():
    rng = SummaryRange(0, 4)
    main = summary_id("t", "u", "c", rng, "short_term")
    rook = summary_id("t", "u", "c", rng, "short_term", "rook")
    assert len({main, rook, summary_id("t", "u", "c", rng, "short_term", "bard")}) == 3
    assert rook == summary_id("t", "u", "c", rng, "short_term", "rook")


BOTS = ["bard", "rook", "sage"]
PERSONAS = ["ana", "ben"]
presence = st.lists(
    st.tuples(
        st.sets(st.sampled_from(BOTS), max_size=3),  # bots in the scene
        st.one_of(st.none(), st.sampled_from(PERSONAS)),  # the persona used
    ),
    min_size=1,
    max_size=25,
)


def witnessed(character: str, m: RangeMessage) -> bool:
    if character in BOTS:
        return bot_may_see(character, m.bot_ids)  # the system's rule for showing a bot a message
    return m.persona_id is None or m.persona_id == character


@settings(max_examples=300, deadline=None)
@given(presence)
def test_property_every_audience_member_witnessed_every_message(pattern):
    messages = [msg(i, tuple(sorted(bots)), persona) for i, (bots, persona) in enumerate(pattern)]
    by_id = {m.message_id: m for m in messages}
    parts = presence_parts(messages)
    for part in parts:
        assert part.audience, "never an empty audience"
        for member in part.audience:
            if member == EVERYONE:
                assert not any(m.bot_ids for m in messages), "everyone only when no bot is named"
                assert len(parts) == 1
                continue
            for mid in ids(part):
                assert witnessed(member, by_id[mid]), f"{member} never saw {mid}"
        if part.character_id is None:
            assert ids(part) == [m.message_id for m in messages], "the main summary covers the whole range"
        else:
            assert part.audience == (part.character_id,)
    assert len({p.character_id for p in parts}) == len(parts), "one summary per character at most"
    # Nothing is lost: each character can be shown a summary of every message it was named in.
    for c in BOTS + PERSONAS:
        seen = {m.message_id for m in messages if c in m.witnesses}
        mine = {mid for p in parts if c in p.audience or EVERYONE in p.audience for mid in ids(p)}
        assert seen <= mine
