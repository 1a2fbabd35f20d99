"""The presence rule: who may be shown a message or anything derived from it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemo.shared.presence import EVERYONE, bot_may_see, message_audience, visible_audience

BOTS = st.sampled_from(["mira", "oren", "tavi", "ysolde"])


def test_a_message_without_bots_is_for_everyone_and_repeats_are_dropped():
    assert message_audience([]) == [EVERYONE]
    assert message_audience(["mira", "oren", "mira"]) == ["mira", "oren"]


@given(bot=BOTS, present=st.lists(BOTS, max_size=4))
def test_a_bot_sees_exactly_what_it_witnessed(bot, present):
    audience = message_audience(present)
    assert bot_may_see(bot, audience) == (bot in present or not present)
    # The vector filter (audience contains one of these values) and the read-side check agree.
    assert bool(set(visible_audience(bot)) & set(audience)) == bot_may_see(bot, audience)
