"""The lexical analyzer (``mnemo/shared/analyzer.py``): normalisation, scripts without spaces, stemming on ASCII only."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mnemo.shared.analyzer import bigrams, hiragana_only, naive_terms, normalise, script_class, terms
from mnemo.shared.sparse import document_vector, query_vector


def matches(query: str, document: str) -> bool:
    """Every term of the query is a term of the document (what a lexical search needs to find it)."""
    q = set(query_vector(query).indices)
    return bool(q) and q <= set(document_vector(document).indices)


def test_chinese_sentence_is_bigrams_so_a_word_inside_it_is_found() -> None:
    sentence = "然后我们去玄天宗拜访。"
    assert naive_terms(sentence) == ["然后我们去玄天宗拜访"]  # the old analyzer: one term
    assert terms(sentence) == ["然后", "后我", "我们", "们去", "去玄", "玄天", "天宗", "宗拜", "拜访"]
    assert terms("玄天宗") == ["玄天", "天宗"]
    assert matches("玄天宗", sentence)
    assert not matches("青云门", sentence)


def test_single_cjk_character_is_a_unigram() -> None:
    assert terms("我") == ["我"]
    assert terms("去 玄 天") == ["去", "玄", "天"]


def test_japanese_kana_and_kanji_mix() -> None:
    sentence = "昨日、東京タワーに行きました。"
    got = terms(sentence)
    assert {"東京", "タワ", "ワー"} <= set(got)
    assert matches("東京タワー", sentence)
    assert matches("タワー", sentence)
    assert not matches("大阪城", sentence)
    # Half-width katakana (NFKC) is the same word as full-width.
    assert terms("ﾀﾜｰ") == terms("タワー")


def test_hiragana_only_terms_are_told_apart() -> None:
    assert [t for t in terms("山田さんはどこに住んでいますか") if hiragana_only(t)] == ["さん", "んは", "はど", "どこ", "こに", "んで", "でい", "いま", "ます", "すか"]  # fmt: skip
    assert not any(hiragana_only(t) for t in ("山田", "に住", "住ん", "カタ", "abc", ""))


def test_korean_words_with_particles_match_the_bare_word() -> None:
    sentence = "어제 서울에서 친구를 만났어요"
    assert script_class("서") == "cjk"
    assert matches("서울", sentence)
    assert matches("친구", sentence)
    assert not matches("부산", sentence)


def test_mixed_latin_and_cjk_in_one_word_are_split_by_script() -> None:
    assert terms("iPhone手机") == ["iphon", "手机"]
    assert terms("第3章") == ["第", "3", "章"]


def test_accents_are_stripped_from_latin_letters_only() -> None:
    assert normalise("Café Zürich ÉCOLE") == "cafe zurich ecole"
    assert matches("cafe", "un café noir")
    # Cyrillic й, Japanese が and Devanagari vowel signs are letters there: kept.
    assert normalise("йод") == "йод"
    assert normalise("がっこう") == "がっこう"
    assert terms("नमस्ते दुनिया") == ["नमस्ते", "दुनिया"]


def test_nfkc_and_case_folding() -> None:
    assert normalise("ＡＢＣ１２３") == "abc123"
    assert normalise("ﬁne") == "fine"  # ligature
    assert terms("Straße") == terms("STRASSE")
    assert terms("ΣΟΦΙΑ") == terms("σοφια")


def test_thai_bigrams_keep_vowel_signs_with_their_consonant() -> None:
    got = terms("สวัสดีครับ")
    assert all(len(t) >= 2 for t in got)
    assert "วั" not in got or "วัส" in got  # a vowel sign never starts a term
    assert not any(t[0] in "ัีื่" for t in got)
    assert matches("สวัสดี", "สวัสดีครับ ผมชื่อสมชาย")


def test_english_behaviour_is_unchanged() -> None:
    assert terms("I was hiking with the games") == ["hik", "gam"]
    assert bigrams("ab") == ["ab"]


@given(st.text(max_size=60))
def test_any_text_gives_terms_and_the_query_of_a_document_matches_it(text: str) -> None:
    got = terms(text)
    assert all(t and t == t.strip() for t in got)
    if got:
        assert matches(text, text)
