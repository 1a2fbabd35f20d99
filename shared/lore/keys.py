"""Key syntax shared by the importer and the engine: `/regex/flags` detection and translation to Python `re`.

SillyTavern decides a key is a regex with `parseRegexFromString`: `/` + pattern without unescaped `/` + `/` +
flags from `gimsuy`. Anything else, including `/开始旅行`, is plain text. JavaScript and Python regexes differ in a
few places; the translation covers the ones lore authors use (named groups, ASCII classes without `u`).
"""

from __future__ import annotations

import re
from functools import lru_cache

_REGEX_KEY = re.compile(r"^/((?:\\.|[^/\\])+?)/([gimsuy]*)$", re.DOTALL)
ASCII_WORD = "A-Za-z0-9_"


def parse_regex_key(key: str) -> tuple[str, str] | None:
    """(pattern, flags) when the trimmed key is a JavaScript regex literal, else None."""
    m = _REGEX_KEY.match(key.strip())
    if m is None:
        return None
    flags = m.group(2)
    if len(set(flags)) != len(flags):  # `new RegExp` rejects repeated flags: a plain key then.
        return None
    return m.group(1), flags


@lru_cache(maxsize=4096)
def compile_js_regex(pattern: str, flags: str) -> re.Pattern[str] | None:
    """A Python regex behaving like `new RegExp(pattern, flags).test`, or None when Python cannot express it."""
    py = re.sub(r"\(\?<([A-Za-z_]\w*)>", r"(?P<\1>", pattern)
    py = re.sub(r"\\k<([A-Za-z_]\w*)>", r"(?P=\1)", py)
    opts = 0
    if "i" in flags:
        opts |= re.IGNORECASE
    if "m" in flags:
        opts |= re.MULTILINE
    if "s" in flags:
        opts |= re.DOTALL
    if "u" not in flags:
        opts |= re.ASCII  # without `u`, JavaScript's \w \d \s \b are ASCII-only
    try:
        return re.compile(py, opts)
    except re.error:
        return None


def regex_key_problem(key: str) -> str | None:
    """Why a regex-looking key cannot be used (so the importer can warn), or None."""
    parsed = parse_regex_key(key)
    if parsed is None:
        return None
    if compile_js_regex(*parsed) is None:
        return f"regex {key.strip()!r} does not compile; it will be matched as plain text"
    return None
