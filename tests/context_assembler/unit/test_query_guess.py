"""The query guessed before the history is read (``gather/guess.py``): the real query whenever the
conversation's participants are those of its previous request, nothing when it cannot know."""

from __future__ import annotations

from mnemo.services.context_assembler.gather.guess import QueryGuess
from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.search.query import query_text
from mnemo_client.wire.contract import ContextAssembleRequest

HISTORY = [
    ChatLine("m1", 1, "user", "Kate Miller", "We sailed to the harbour at dawn."),
    ChatLine("m2", 2, "assistant", "Nebraas", "The storm followed us all the way."),
]


def req(message: str, tenant: str = "t", conversation: str = "c") -> ContextAssembleRequest:
    return ContextAssembleRequest(
        tenant_id=tenant, user_id="u", conversation_id=conversation, bot_id="b", user_message=message
    )


def test_an_unknown_conversation_is_not_guessed() -> None:
    assert QueryGuess().guess(req("What did Kate say about the storm?")) is None


def test_after_a_request_the_guess_is_the_query_the_history_gives() -> None:
    guess = QueryGuess()
    guess.learn(req("hello there friend"), HISTORY)
    for message in ("What did Kate say about the storm?", "Where is Nebraas's map of the harbour?"):
        assert guess.guess(req(message)) == query_text(req(message), HISTORY)
    assert guess.guess(req("What did Kate say about the storm?")) == "What did say about the storm?"


def test_a_follow_up_needs_the_history_and_is_not_guessed() -> None:
    guess = QueryGuess()
    guess.learn(req("hello there friend"), HISTORY)
    assert guess.guess(req("Why?")) is None


def test_names_are_kept_per_tenant_and_conversation() -> None:
    guess = QueryGuess()
    guess.learn(req("hello there friend"), HISTORY)
    assert guess.guess(req("What did Kate say about the storm?", tenant="other")) is None
    assert guess.guess(req("What did Kate say about the storm?", conversation="c2")) is None


def test_the_oldest_conversation_is_forgotten_past_the_size() -> None:
    guess = QueryGuess(size=2)
    for conversation in ("c1", "c2", "c3"):
        guess.learn(req("hello there friend", conversation=conversation), HISTORY)
    assert guess.guess(req("What did Kate say about the storm?", conversation="c1")) is None
    assert guess.guess(req("What did Kate say about the storm?", conversation="c3")) is not None
