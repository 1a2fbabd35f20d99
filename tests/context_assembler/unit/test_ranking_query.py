"""The search query (mnemo/services/context_assembler/search/query.py): the user's message first, participants'
names out, the history only for a short follow-up."""

from __future__ import annotations

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.query import (
    HISTORY_WEIGHT,
    participant_names,
    query_sparse,
    query_text,
    without_names,
)
from mnemo.shared.sparse import term_id
from mnemo_client.wire.contract import ContextAssembleRequest

HISTORY = [
    ChatLine("m1", 1, "user", "Kate Miller", "I went hiking near the lighthouse", persona_name="Kate"),
    ChatLine("m2", 2, "assistant", "Elise", "Which trail did you take?"),
]


def req(message: str) -> ContextAssembleRequest:
    return ContextAssembleRequest(tenant_id="t", user_id="u", conversation_id="c", bot_id="b", user_message=message)


def test_participant_names_are_first_names_of_authors_and_personas() -> None:
    assert participant_names(HISTORY) == {"kate", "elise"}
    assert participant_names([ChatLine("m", 1, "user", "Al", "hi")]) == set()  # too short to trust


def test_names_are_taken_out_unless_nothing_would_be_left() -> None:
    names = {"kate", "elise"}
    assert without_names("What are Kate's hobbies, Elise?", names) == "What are hobbies, ?"
    assert without_names("Kate?", names) == "Kate?"
    assert without_names("katerina and elisenda", names) == "katerina and elisenda"  # whole words only
    assert without_names("anything", set()) == "anything"


def test_a_standalone_question_is_searched_alone_without_names() -> None:
    assert query_text(req("Where did Kate go hiking last week?"), HISTORY) == "Where did go hiking last week?"


def test_a_follow_up_takes_its_topic_from_the_history_at_a_lower_weight() -> None:
    text = query_text(req("Why the lighthouse?"), HISTORY)
    assert text == "I went hiking near the lighthouse Which trail did you take? Why the lighthouse?"
    sparse = query_sparse(req("Why the lighthouse?"), text)
    weights = dict(zip(sparse.indices, sparse.values, strict=True))
    assert weights[term_id("lighthous")] == 1.0  # the user's own word
    assert weights[term_id("hik")] == HISTORY_WEIGHT < 1.0  # a word only the history brings


def test_an_empty_message_searches_the_last_user_message() -> None:
    assert query_text(req(""), HISTORY) == "I went hiking near the lighthouse"


def test_the_pool_keeps_fused_ranks_and_drops_what_the_read_model_did_not_return() -> None:
    from mnemo.services.context_assembler.search.hits import candidates, created_at_by_key
    from mnemo.services.context_assembler.search.ranking import Candidate
    from mnemo.shared.vectors.port import ScoredPoint

    points = [
        ScoredPoint("p1", 0.9, {"message_id": "m2", "created_at": 200.0}),
        ScoredPoint("p2", 0.8, {"message_id": "gone", "created_at": 150.0}),
        ScoredPoint("p3", 0.7, {"message_id": "m1"}),
    ]
    created = created_at_by_key(points, "message_id")
    assert created == {"m2": 200.0, "gone": 150.0}
    lines = {line.message_id: line for line in HISTORY}
    assert candidates(["m2", "gone", "m1"], lines, created) == [
        Candidate("m2", 1, 2, 200.0, "Elise", "Which trail did you take?"),
        Candidate("m1", 3, 1, None, "Kate Miller", "I went hiking near the lighthouse"),
    ]
