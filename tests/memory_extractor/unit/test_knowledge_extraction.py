"""Fact extraction without I/O: the fallback patterns, who learns, presence runs and LLM update filtering."""

from __future__ import annotations

from datetime import UTC, datetime

from mnemo.services.memory_extractor.facts import pattern_candidates, pattern_statements, runs_of_presence
from mnemo.services.memory_extractor.llm_knowledge import (
    MAX_FACT_CHARS,
    MAX_FACTS_PER_CHARACTER,
    PROMPT,
    PROMPTS,
    candidates_from_updates,
    character_names,
    extraction_ask,
    high_level_facts,
)
from mnemo.services.memory_extractor.schemas import KnowledgeUpdates
from mnemo.shared.aggregates.knowledge import normalise, present_characters, subject_of
from mnemo.shared.events.recorded import MessageRecorded
from mnemo.shared.llm.port import Completion


def msg(
    content: str,
    *,
    message_id: str = "m1",
    index: int = 0,
    author_id: str | None = "p1",
    author_name: str = "Ana",
    bot_ids: tuple[str, ...] = ("b1", "b2"),
    persona_id: str | None = "p1",
    conv: str = "c1",
) -> MessageRecorded:
    return MessageRecorded(
        user_id="u1",
        conversation_id=conv,
        message_id=message_id,
        role="user",
        author_id=author_id,
        author_name=author_name,
        content=content,
        created_at=datetime(2026, 1, 2, tzinfo=UTC),
        bot_ids=list(bot_ids),
        persona_id=persona_id,
        index=index,
        tokens=5,
    )


def texts(author: str, content: str) -> list[str]:
    return [t for t, *_ in pattern_statements(author, content)]


def test_patterns_write_standalone_statements_about_the_author():
    assert texts("Ana", "Hi! My name is Ana Silva and I live in Port Vell, near the docks.") == [
        "Ana's name is Ana Silva.",
        "Ana lives in Port Vell.",
    ]
    assert texts("Ana", "I'm a smuggler. I own two ships. I'm from Lisbon!") == [
        "Ana is a smuggler.",
        "Ana has two ships.",
        "Ana is from Lisbon.",
    ]
    assert texts("Ana", "My brother is a thief.") == ["Ana's brother is a thief."]
    assert texts("Ana", "The secret is the key is under the red stone.") == [
        "Ana said the secret is the key is under the red stone."
    ]
    assert texts("Bard", "Mira is a captain of the guard.") == ["Mira is a captain of the guard."]


def test_patterns_ignore_what_is_not_a_fact():
    assert texts("Ana", "I am tired. I have to go. It is cold. Hello there, how are you?") == []
    assert texts("Ana", "") == []


def test_the_most_confident_statement_wins_per_subject():
    assert texts("Ana", "Hi, I'm Ana. My name is Ana Silva.") == ["Ana's name is Ana Silva."]


def test_subjects_key_what_a_fact_is_about():
    assert subject_of("Ana lives in Port Vell.") == "ana:home"
    assert subject_of("Ana lives in Rome.") == "ana:home"
    assert subject_of("Ana's name is Ana Silva.") == "ana:name"
    assert subject_of("Ana's brother is a thief.") == "ana:brother"
    assert subject_of("Mira is a captain.") == "mira:identity"
    assert subject_of("Ana has two ships.") == "ana:has:two ships"
    assert subject_of("It rained all night!").startswith("fact:")
    assert normalise("  The KEY, is here! ") == "the key is here"


def test_every_character_present_but_the_author_learns():
    m = msg("I live in Port Vell.")
    cands = pattern_candidates(m)
    assert [(c.character_id, c.character_kind) for c in cands] == [("b1", "bot"), ("b2", "bot")]
    assert {c.text for c in cands} == {"Ana lives in Port Vell."}
    assert all(c.message_ids == ("m1",) and c.method == "pattern" and c.user_id == "u1" for c in cands)
    absent = pattern_candidates(msg("The secret is the moon.", bot_ids=("b1",)))
    assert "b2" not in {c.character_id for c in absent}, "b2 was not in the scene"
    bot_says = pattern_candidates(msg("I live in a tower.", author_id="b1", author_name="Bard"))
    assert {c.character_id for c in bot_says} == {"b2", "p1"}


def test_fact_ids_are_deterministic_and_depend_on_revision_tenant_and_character():
    [a, b] = pattern_candidates(msg("I live in Port Vell."))
    assert a.fact_id("t1") == pattern_candidates(msg("I live in Port Vell."))[0].fact_id("t1")
    assert a.fact_id("t1") != b.fact_id("t1")
    assert a.fact_id("t1") != a.fact_id("t2")
    [edited, _] = pattern_candidates(msg("I live in Port Vell."), revision="edit-1")
    assert edited.fact_id("t1") != a.fact_id("t1")
    p = a.payload("t1")
    assert (p.scope, p.subject, p.fact_type) == ("player:u1", "ana:home", "declarative")


def test_presence_runs_split_when_someone_leaves_and_per_conversation():
    ms = [
        msg("a", message_id="m0", index=0),
        msg("b", message_id="m1", index=1),
        msg("c", message_id="m2", index=2, bot_ids=("b1",)),
        msg("x", message_id="n0", index=0, conv="c2"),
        msg("d", message_id="m3", index=3),
    ]
    runs = [[m.message_id for m in r] for r in runs_of_presence(ms)]
    assert runs == [["m0", "m1"], ["m2"], ["m3"], ["n0"]]
    assert present_characters(msg("a", bot_ids=("b1", "b1"), persona_id="b1")) == {"b1": "bot"}


def completion(updates: list[dict[str, object]]) -> Completion[KnowledgeUpdates]:
    value = KnowledgeUpdates.model_validate({"updates": updates})
    return Completion(value=value, model="m-1", prompt_version="extract_knowledge.v1")


def test_llm_updates_for_absent_or_unknown_characters_are_dropped():
    run = [msg("psst", message_id="m5", index=5, bot_ids=("b1",))]
    out = candidates_from_updates(
        run,
        completion(
            [
                {"character_id": "b1", "learned_facts": ["The key is under the stone.", "The key is under the stone."]},
                {"character_id": "b2", "learned_facts": ["The key is under the stone."]},
                {"character_id": "ghost", "learned_facts": ["x"]},
                {"character_id": "p1", "learned_facts": []},
            ]
        ),
    )
    assert [(c.character_id, c.text) for c in out] == [("b1", "The key is under the stone.")]
    assert out[0].method == "llm:m-1"
    assert out[0].prompt_version == "extract_knowledge.v1"
    assert out[0].message_ids == ("m5",)


def test_llm_run_credits_only_characters_present_for_every_message():
    run = [msg("a", message_id="m0"), msg("b", message_id="m1", bot_ids=("b1",))]
    out = candidates_from_updates(run, completion([{"character_id": "b2", "learned_facts": ["f"]}]))
    assert out == []


def test_prompt_lists_present_characters_with_names_and_the_transcript():
    run = [msg("My name is Ana.", author_id="p1"), msg("Welcome.", author_id="b1", author_name="Bard", index=1)]
    assert character_names(run) == {"b1": "Bard", "b2": "b2", "p1": "Ana"}
    ask = extraction_ask(run)
    [chat] = ask.messages
    assert ask.prompt_version == "extract_knowledge.v2"
    assert ask.schema is KnowledgeUpdates
    assert "- b1: Bard" in chat.content
    assert "- p1: Ana" in chat.content
    assert "Ana: My name is Ana." in chat.content


def test_the_prompt_asks_for_high_level_facts_and_v1_stays_as_released():
    ask = extraction_ask([msg("My brother Tomas smuggles for the Red Hand.")])
    [chat] = ask.messages
    assert ask.prompt_version == "extract_knowledge.v2"
    assert "at a high level" in chat.content
    assert "Fold the details of one thing into one fact" in chat.content
    assert "Not the lines of dialogue" in chat.content
    v1 = PROMPTS.load(PROMPT, version=1)
    assert "high level" not in v1.text, "a released prompt never changes: v2 is a new file"


def test_high_level_facts_tidy_the_answer_and_drop_what_the_prompt_excludes():
    run = [msg("I live in Port Vell, near the docks."), msg("Mira is a captain of the guard.", index=1)]
    answer = [
        "- Ana lives in Port Vell.",
        "2.  Ana   has a cat named Bo.",
        '"I live in Port Vell, near the docks."',  # a quote of the transcript: dialogue, not a fact
        "\u201cnear the docks\u201d",  # part of a line, quoted
        "Mira is a captain of the guard.",  # a narrator's line as it stands is a fact
        '"Mira keeps a ledger of debts."',  # quoted, but not in the transcript: kept without the quotes
        "ana lives in port vell",  # a repeat, whatever the case and punctuation
        "Ana " + "remembers " * (MAX_FACT_CHARS // 10),  # a retelling, not a fact
        "   ",
    ]
    assert high_level_facts(answer, run) == [
        "Ana lives in Port Vell.",
        "Ana has a cat named Bo.",
        "Mira is a captain of the guard.",
        "Mira keeps a ledger of debts.",
    ]
    many = [f"Fact number {i}." for i in range(MAX_FACTS_PER_CHARACTER + 5)]
    assert high_level_facts(many, run) == many[:MAX_FACTS_PER_CHARACTER]


def test_a_character_named_twice_in_one_answer_learns_each_fact_once():
    run = [msg("psst", message_id="m5", index=5, bot_ids=("b1",))]
    out = candidates_from_updates(
        run,
        completion(
            [
                {"character_id": "b1", "learned_facts": ["The key is under the stone."]},
                {"character_id": "b1", "learned_facts": ["the key is under the stone", "Ana fears the dark."]},
            ]
        ),
    )
    assert [(c.character_id, c.text) for c in out] == [
        ("b1", "The key is under the stone."),
        ("b1", "Ana fears the dark."),
    ]
