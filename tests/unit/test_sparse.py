"""The text-to-sparse-vector function: stable term ids, stop words, BM25 saturation."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from mnemo.shared.sparse import (
    AVGDL,
    GRAMMAR_WEIGHT,
    K1,
    document_vector,
    query_vector,
    stem,
    term_id,
    terms_vector,
    tokens,
)


def test_tokens_are_folded_unicode_words_without_stop_words() -> None:
    # Accents are stripped before the English stemmer, so "Café" and "cafe" are one term ("caf").
    assert tokens("The Café in São Paulo, at 7pm!") == ["caf", "sao", "paulo", "7pm"]


def test_stemming_joins_inflections_of_a_word() -> None:
    assert stem("hiking") == stem("hiked") == stem("hikes") == stem("hike")
    assert stem("games") == stem("game")
    assert stem("running") == "run"
    assert stem("stories") == "story"
    assert stem("watches") == "watch"
    assert stem("class") == stem("classes") == "class"
    # Short words, numbers and non-ASCII words are kept as they are.
    assert [stem(w) for w in ("bus", "2023", "são", "was")] == ["bus", "2023", "são", "was"]
    # So a document about hiking matches a question that says "hiked".
    assert set(query_vector("When were you hiked?").indices) <= set(document_vector("I love hiking").indices)


def test_terms_vector_weighs_given_terms() -> None:
    v = terms_vector({"ski": 1.0, "lesson": 0.3, "ignored": 0.0})
    assert dict(zip(v.indices, v.values, strict=True)) == {term_id("ski"): 1.0, term_id("lesson"): 0.3}
    assert v.indices == sorted(v.indices)


def test_term_ids_are_stable_across_processes() -> None:
    # Python's hash() is salted per process; the term id must not be.
    code = "from mnemo.shared.sparse import term_id; print(term_id('pumpernickel'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert int(out) == term_id("pumpernickel")
    assert term_id("pumpernickel") == int.from_bytes(hashlib.blake2b(b"pumpernickel", digest_size=4).digest(), "big")
    assert 0 <= term_id("x") < 2**32


def test_query_vector_weighs_each_distinct_term_once() -> None:
    v = query_vector("cat cat dog the")
    assert sorted(v.indices) == v.indices
    assert sorted(v.indices) == sorted({term_id("cat"), term_id("dog")})
    assert v.values == [1.0, 1.0]


def test_hiragana_only_query_terms_weigh_less_and_documents_keep_them() -> None:
    v = query_vector("田中さんはどこに住んでいますか")
    weights = dict(zip(v.indices, v.values, strict=True))
    assert weights[term_id("どこ")] == weights[term_id("ます")] == GRAMMAR_WEIGHT < 1.0  # grammar, in hiragana
    assert weights[term_id("田中")] == weights[term_id("に住")] == 1.0  # kanji, and a bigram crossing into it
    assert query_vector("カタカナ").values == [1.0, 1.0, 1.0]  # katakana is content (names, loanwords)
    assert term_id("どこ") in document_vector("どこにも行きませんでした").indices  # a query-side weight only


def test_document_vector_saturates_term_frequency() -> None:
    one = document_vector("cat")
    many = document_vector("cat " * 50)
    (w1,), (w50,) = one.values, many.values
    assert w1 > 0
    assert w50 < K1 + 1  # saturation: the weight never passes k1 + 1
    # A document of exactly avgdl tokens with tf = 1 weighs exactly 1 (no length normalisation at avgdl).
    filler = " ".join(f"w{i}" for i in range(int(AVGDL) - 1))
    doc = document_vector("cat " + filler)
    assert doc.values[doc.indices.index(term_id("cat"))] == 1.0


def test_longer_documents_weigh_a_term_less() -> None:
    short = document_vector("cat sat")
    long = document_vector("cat " + " ".join(f"w{i}" for i in range(40)))
    assert short.values[short.indices.index(term_id("cat"))] > long.values[long.indices.index(term_id("cat"))]


def test_no_words_gives_an_empty_falsy_vector() -> None:
    assert not query_vector("?! ... the a")
    assert not document_vector("")


@given(st.text(max_size=200))
def test_vectors_are_well_formed(text: str) -> None:
    for v in (document_vector(text), query_vector(text)):
        assert len(v.indices) == len(v.values) == len(set(v.indices))
        assert v.indices == sorted(v.indices)
        assert all(x > 0 for x in v.values)
    assert document_vector(text) == document_vector(text)
