"""Regex keys on RE2: JavaScript syntax converted, what RE2 cannot express refused, invalid ones plain text.

The expected results are JavaScript's (`new RegExp(pattern, flags).test(text)`), checked by hand against
the ECMAScript rules the conversion names; a refused key is reported, never compiled on Python's `re`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.shared.lore.js_regex import to_re2
from mnemo.shared.lore.keys import (
    compile_key_regex,
    haystack_bytes,
    parse_regex_key,
    regex_key_problem,
    regex_key_refusal,
)


def js_test(key: str, text: str) -> bool:
    parsed = parse_regex_key(key)
    assert parsed is not None, key
    compiled = compile_key_regex(*parsed)
    assert compiled.regex is not None, compiled
    return compiled.regex.test(haystack_bytes(text))


@pytest.mark.parametrize(
    ("key", "text", "matches"),
    [
        ("/Dra+gon/", "a Draaagon!", True),
        ("/dragon/", "DRAGON", False),
        ("/dragon/i", "DRAGON", True),
        # `.` stops at every JavaScript line break, not only \n; `s` lets it cross them
        ("/a.b/", "a\rb", False),
        ("/a.b/", "a\u2028b", False),
        ("/a.b/s", "a\rb", True),
        ("/a.b/", "a-b", True),
        # `$` without `m` is the end of the text only (Python's `$` would also match before a final \n)
        ("/end$/", "the end\n", False),
        ("/end$/m", "the end\nmore", True),
        ("/^start/", "x\nstart", False),
        ("/^start/m", "x\nstart", True),
        # \s is JavaScript's whitespace (no-break space, ideographic space, BOM...)
        ("/a\\sb/", "a\u00a0b", True),
        ("/a\\sb/", "a\u3000b", True),
        ("/a\\Sb/", "a\u00a0b", False),
        ("/[\\s]x/", "\ufeffx", True),
        # \w, \d and \b are ASCII-only in JavaScript, as in RE2
        ("/\\bcaf\\b/", "café", True),
        ("/\\w+é/", "café", True),
        ("/^\\d+$/", "١٢٣", False),
        # escapes JavaScript reads differently
        ("/\\u00e9/", "é", True),
        ("/\\uD83D\\uDE00/", "hi 😀", True),
        ("/\\u{1F600}/u", "hi 😀", True),
        ("/\\x41/", "A", True),
        ("/\\cJ/", "a\nb", True),
        ("/\\//", "a/b", True),
        ("/a\\qb/", "aqb", True),  # without `u` an unknown escape is the letter itself
        ("/\\p{L}+/u", "żółw", True),
        ("/x{/", "x{", True),  # a `{` that starts no quantifier is a literal
        ("/a{2,3}/", "caab", True),
        # classes: `[^]` is any character, `[]` none, [\s\S] anything, a `-` next to a class escape a literal
        ("/a[^]b/", "a\nb", True),
        ("/a[]b/", "ab", False),
        ("/<[\\s\\S]*>/", "<\n>", True),
        ("/[a-\\d]/", "-", True),
        ("/[\\b]/", "\b", True),
        ("/[\\S]/", "   ", False),
        ("/[x\\S]/", " y ", True),
        # named groups, sticky flag (only at the start), the engine's message separator
        ("/(?<name>ab)+/", "xabab", True),
        ("/ab/y", "xab", False),
        ("/ab/y", "abx", True),
        ("/\\x01Bot:[^\\x01]*?hello/", "\x01User: x\n\x01Bot: well hello", True),
        # lookarounds converted: what a test can tell of them is kept
        ("/foo(?=bar)/", "foobar", True),
        ("/foo(?=bar)/", "foobaz", False),
        ("/(?<=Mr\\. )Smith/", "Mr. Smith", True),
        ("/(?<=Mr\\. )Smith/", "Ms. Smith", False),
        ("/(?<![a-z])cat(?![a-z])/", "cat!", True),
        ("/(?<![a-z])cat(?![a-z])/", "concat", False),
        ("/(?<![a-z])cat(?![a-z])/", "cats", False),
        ("/cat(?!s)/", "cat", True),
        ("/x|cat(?!s)/", "cats", False),
        ("/cat(?!.)/", "the cat", True),
        ("/cat(?!.)/", "the cat.", False),
        # catastrophic for a backtracking engine; linear here, with the JavaScript answer
        ("/(a+)+$/", "a" * 50_000 + "b", False),
        ("/(a|aa)+c/", "a" * 50_000, False),
        ("/(x+x+)+y/", "x" * 50_000 + "y", True),
    ],
)
def test_a_converted_key_matches_as_javascript_does(key: str, text: str, matches: bool) -> None:
    assert js_test(key, text) is matches


@pytest.mark.parametrize(
    ("key", "why"),
    [
        ("/(a)\\1/", "backreference"),
        ("/(?<q>['\"]).*\\k<q>/", "named backreference"),
        ("/a(?=b)c/", "lookahead"),
        ("/a(?!bc)/", "lookahead"),  # a negative lookahead of more than one character
        ("/a(?!|)/", "lookahead"),  # an empty alternative, not the character `|`
        ("/x(?<!ab)y/", "lookbehind"),
        ("/(?<=a)b/y", "lookbehind"),  # a lookbehind at a sticky start sees nothing before it
        ("/(?=a)*/", "quantified lookaround"),
        ("/a{1001}/", "above 1000"),
        ("/[^\\S]/", "negated character class"),
        ("/\\p{Script=Greek}/u", "RE2 cannot compile"),
        ("/" + "a" * 5000 + "/", "longer than"),
    ],
)
def test_what_re2_cannot_express_is_refused_with_the_reason(key: str, why: str) -> None:
    refusal = regex_key_refusal(key)

    assert refusal is not None
    assert why in refusal
    assert "never matches" in refusal
    assert regex_key_problem(key) == refusal


@pytest.mark.parametrize("key", ["/(ab/", "/a)b/", "/*a/", "/a{3,2}/", "/[z-a]/"])
def test_an_invalid_javascript_regex_is_a_plain_key_as_in_sillytavern(key: str) -> None:
    parsed = parse_regex_key(key)
    assert parsed is not None
    compiled = compile_key_regex(*parsed)

    assert compiled.plain
    assert compiled.regex is None
    assert regex_key_refusal(key) is None
    problem = regex_key_problem(key)
    assert problem is not None
    assert "plain text" in problem


def test_flags_become_re2_flags_and_g_is_ignored() -> None:
    assert to_re2("ab", "gim") == "(?im)ab"
    assert to_re2("ab", "y") == "\\A(?:ab)"


def test_a_plain_or_usable_key_has_no_problem() -> None:
    assert regex_key_problem("dragon") is None
    assert regex_key_problem("/开始旅行") is None
    assert regex_key_problem("/drag(o|0)n/i") is None


REGEX_ALPHABET = "ab.^$|()[]{}*+?\\-/,:=!<>0123456789dswbkuxcpDSWBn éy\u2028"


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=REGEX_ALPHABET, min_size=1, max_size=24), st.sampled_from(["", "i", "u", "s", "my", "gimsuy"]))
def test_any_pattern_compiles_refuses_or_is_plain_and_never_raises(pattern: str, flags: str) -> None:
    compiled = compile_key_regex(pattern, flags)

    assert (compiled.regex is not None) + compiled.plain + (compiled.refused is not None and not compiled.plain) == 1
    if compiled.regex is not None:
        compiled.regex.test(haystack_bytes("ab" * 500 + "\ud800 é\n"))


# Tokens both languages read alike (a lone backslash would not be: Python's `\a` is BEL, JavaScript's `a`).
TOKENS = ["a", "b", "|", "(", ")", "*", "+", "?", "[", "[^", "]", "^", "-", ".", "$", "\\d", "\\w", "\\W", "\\.",
          "\\b", "\\s", "\\S", "{2}", "{1,2}", "(?:", "(?=", "(?!", "(?<=", "(?<!"]  # fmt: skip


@settings(max_examples=1000, deadline=None)
@given(
    st.lists(st.sampled_from(TOKENS), min_size=1, max_size=12).map("".join),
    st.text(alphabet="ab-.x1 \t", max_size=16),
    st.sampled_from(["", "i"]),
)
def test_on_syntax_both_read_alike_re2_answers_as_a_backtracking_engine(pattern: str, text: str, flags: str) -> None:
    """Where JavaScript and Python agree (no line breaks in the text, no `{`, ASCII), a converted key answers
    what Python's `re` answers: the conversion changes the engine, not the meaning. (Python runs here only
    on these tiny patterns, in a test.)"""
    import re
    import warnings

    if "[]" in pattern or "[^]" in pattern:
        return  # JavaScript's empty and any-character classes; Python reads a `]` there as a member
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # Python's notes about possible future set syntax
            expected = re.search(pattern, text, re.IGNORECASE if flags else 0) is not None
    except re.error:
        return
    compiled = compile_key_regex(pattern, flags)
    if compiled.regex is None:
        assert compiled.refused  # Python accepts a few patterns JavaScript rejects; never silently wrong
        return
    assert compiled.regex.test(haystack_bytes(text)) is expected
