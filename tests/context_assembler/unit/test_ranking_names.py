"""Misspelt participants' names in a question (mnemo/services/context_assembler/search/names.py), and what the
query and the ranking do with them."""

from __future__ import annotations

from mnemo.services.context_assembler.search.names import spelled_names, variant_of
from mnemo.services.context_assembler.search.query import without_names
from mnemo.services.context_assembler.search.ranking import named_participant


def test_a_close_spelling_of_a_name_is_that_name() -> None:
    assert variant_of("muhammad", "muhhamed")
    assert variant_of("aqib", "akib")
    assert variant_of("kate", "kate")


def test_other_words_are_not_names() -> None:
    assert not variant_of("market", "mark")  # two letters more
    assert not variant_of("paola", "pablo")  # too different
    assert not variant_of("bate", "kate")  # another first letter
    assert not variant_of("emy", "emi")  # too short to judge a misspelling


def test_only_capitalised_words_past_the_first_can_be_misspellings() -> None:
    names = {"muhhamed", "fahim"}
    assert spelled_names("When did Muhammad cancel plans?", names) == {"muhammad": "muhhamed"}
    assert spelled_names("Muhammad, when did you go?", names) == {}  # the first word: maybe not a name
    assert spelled_names("when did muhammad go?", names) == {}  # lower case: an ordinary word as likely
    assert spelled_names("what did fahim and Fahim eat", names) == {"fahim": "fahim"}  # exact: any case


def test_an_ambiguous_spelling_names_no_one() -> None:
    assert spelled_names("Where is Akim now?", {"akib", "akim"}) == {"akim": "akim"}
    assert spelled_names("Where is Akif now?", {"akib", "akim"}) == {}


def test_the_query_loses_misspelt_names_too() -> None:
    assert without_names("When did Muhammad cancel his plans?", {"muhhamed", "fahim"}) == "When did cancel his plans?"


def test_a_misspelt_name_still_says_who_is_asked_about() -> None:
    assert named_participant("What does Muhammad draw?", ["Fahim Khan", "Muhhamed"]) == "Muhhamed"
    assert named_participant("What does muhammad draw?", ["Fahim Khan", "Muhhamed"]) is None
    assert named_participant("What do Fahim and Muhammad play?", ["Fahim Khan", "Muhhamed"]) is None
