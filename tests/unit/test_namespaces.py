"""Who may write and who sees a memory of a namespace (``mnemo/shared/namespaces.py``): the guardrail, pure."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mnemo.shared.namespaces import Viewer, read_refusal, write_refusal

IDS = st.sampled_from(["u1", "u2", "bard", "kestrel", "a:b", "x y"])


@given(user=IDS, other=IDS, engine=st.booleans())
def test_a_player_namespace_is_written_by_its_own_user_only_with_or_without_the_engine_right(user, other, engine):
    refused = write_refusal(f"player:{other}", user, engine=engine)
    assert (refused is None) == (other == user)


@given(user=IDS, owner=IDS, kind=st.sampled_from(["campaign", "character"]))
def test_campaign_and_character_namespaces_take_the_engine_right(user, owner, kind):
    assert write_refusal(f"{kind}:{owner}", user, engine=True) is None
    refused = write_refusal(f"{kind}:{owner}", user, engine=False)
    assert refused is not None
    assert "engine" in refused


def test_a_malformed_namespace_is_refused_as_bad_input():
    for bad in ("player:", "guild:g1", "player", ":u1", "player:   "):
        with pytest.raises(ValueError, match="namespace"):
            write_refusal(bad, "u1", engine=True)


def test_a_search_names_its_own_player_namespace_any_campaign_and_its_own_character_only():
    assert read_refusal("player:u1", "u1", None) is None
    assert read_refusal("campaign:kestrel", "u1", None) is None
    assert read_refusal("character:bard", "u1", "bard") is None
    assert read_refusal("player:u2", "u1", "bard") is not None
    assert read_refusal("character:bard", "u1", None) is not None
    assert read_refusal("character:bard", "u1", "elise") is not None


def test_a_viewer_sees_its_own_namespace_whole_and_the_rest_only_for_everyone_or_its_character():
    player = Viewer("t1", "u1", None, ("kestrel",))
    assert player.namespaces() == ["player:u1", "campaign:kestrel"]
    assert player.sees("player:u1", ["bard"])
    assert player.sees("player:u1", ["*"])
    assert player.sees("campaign:kestrel", ["*"])
    assert not player.sees("campaign:kestrel", ["bard"])
    assert not player.sees("campaign:other", ["*"])
    assert not player.sees("player:u2", ["*"])
    bard = Viewer("t1", "u1", "bard", ("kestrel",))
    assert bard.namespaces() == ["player:u1", "campaign:kestrel", "character:bard"]
    assert bard.sees("player:u1", ["bard"])
    assert not bard.sees("player:u1", ["elise"])
    assert bard.sees("character:bard", ["*"])
    assert not bard.sees("character:elise", ["*"])


@given(user=st.text(min_size=1, max_size=8))
def test_any_user_id_the_contract_allows_sees_its_own_namespace_without_parsing_it(user):
    """A user id is any 1-256 characters (" " too): its own namespace is built, not named, so it is never
    refused as malformed (schemathesis found a search by user " " failing as an internal error)."""
    viewer = Viewer("t1", user)
    assert viewer.audiences(f"player:{user}") is None
    assert viewer.sees(f"player:{user}", ["*"])
