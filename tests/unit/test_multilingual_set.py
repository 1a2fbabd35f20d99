"""The multilingual retrieval set of bench-multilingual: deterministic, with known evidence, non-Latin scripts."""

from __future__ import annotations

import unicodedata

from bench.multilingual_data import build_chats


def scripts(text: str) -> set[str]:
    return {unicodedata.name(ch, "?").split()[0] for ch in text if ch.isalpha()}


def test_the_default_set_has_enough_questions_each_with_its_evidence() -> None:
    chats = build_chats(30)
    assert [c.key for c in chats] == ["ml-zh", "ml-ja", "ml-ko", "ml-ru"]
    assert sum(len(c.questions) for c in chats) >= 300
    for chat in chats:
        turns = {t.dia_id: t for t in chat.turns}
        assert len(chat.questions) == 120
        for q in chat.questions:
            (evidence,) = q.evidence
            assert turns[evidence].role == "user"
        # The last turns (the history window of the run) hold no evidence.
        assert not {q.evidence[0] for q in chat.questions} & {t.dia_id for t in chat.turns[-4:]}
    letters = {c.key: scripts(" ".join(t.text for t in c.turns)) for c in chats}
    assert {"CJK"} <= letters["ml-zh"]
    assert {"HIRAGANA", "CJK"} <= letters["ml-ja"]
    assert "HANGUL" in letters["ml-ko"]
    assert "CYRILLIC" in letters["ml-ru"]


def test_the_set_is_the_same_on_every_build() -> None:
    a, b = build_chats(5, ("zh",)), build_chats(5, ("zh",))
    assert [(t.dia_id, t.text) for t in a[0].turns] == [(t.dia_id, t.text) for t in b[0].turns]
    assert [q.text for q in a[0].questions] == [q.text for q in b[0].questions]
