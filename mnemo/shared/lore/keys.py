"""Key syntax shared by the importer and the engine: `/regex/flags` detection, and compilation on RE2.

SillyTavern decides a key is a regex with `parseRegexFromString`: `/` + pattern without unescaped `/` + `/` +
flags from `gimsuy`. Anything else, including `/开始旅行`, is plain text. A key is user-written and scanned
against long chat text, so it runs on RE2 (linear time, releases the GIL while it scans), never on Python's
backtracking `re`: :mod:`mnemo.shared.lore.js_regex` converts the JavaScript syntax, and a pattern RE2 cannot
express is refused (:func:`regex_key_problem` tells the importer why; the engine never matches it). A
pattern JavaScript itself rejects stays a plain key, as in SillyTavern.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import re2

from mnemo.shared.lore.js_regex import Invalid, Unsupported, to_re2

_REGEX_KEY = re.compile(r"^/((?:\\.|[^/\\])+?)/([gimsuy]*)$", re.DOTALL)
ASCII_WORD = "A-Za-z0-9_"
MAX_REGEX_CHARS = 4096  # a longer key is refused: RE2's memory bound would refuse most of them anyway
_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a refused key is reported to the importer, not printed by RE2 on stderr


def parse_regex_key(key: str) -> tuple[str, str] | None:
    """(pattern, flags) when the trimmed key is a JavaScript regex literal, else None."""
    m = _REGEX_KEY.match(key.strip())
    if m is None:
        return None
    flags = m.group(2)
    if len(set(flags)) != len(flags):  # `new RegExp` rejects repeated flags: a plain key then.
        return None
    return m.group(1), flags


class SafeRegex:
    """A key's pattern compiled on RE2; tests UTF-8 text (see :func:`haystack_bytes`)."""

    __slots__ = ("_rx", "source")

    def __init__(self, compiled: Any, source: str) -> None:
        self._rx, self.source = compiled, source

    def test(self, haystack: bytes) -> bool:
        return self._rx.search(haystack) is not None


def haystack_bytes(text: str) -> bytes:
    """Text as RE2 scans it: encoded once per haystack, however many keys test it (lone surrogates kept as
    bytes RE2 never matches, rather than failing the scan)."""
    return text.encode("utf-8", "surrogatepass")


@dataclass(frozen=True)
class KeyRegex:
    """A regex key compiled: ``regex`` when usable; else ``plain`` (not a JavaScript regex: SillyTavern
    matches it as text) or ``refused`` (valid JavaScript that RE2 cannot express: it never matches)."""

    regex: SafeRegex | None = None
    plain: bool = False
    refused: str | None = None


@lru_cache(maxsize=4096)
def compile_key_regex(pattern: str, flags: str) -> KeyRegex:
    if len(pattern) > MAX_REGEX_CHARS:
        return KeyRegex(refused=f"it is longer than {MAX_REGEX_CHARS} characters")
    try:
        source = to_re2(pattern, flags)
    except Invalid as exc:
        return KeyRegex(plain=True, refused=str(exc))
    except Unsupported as exc:
        return KeyRegex(refused=f"{exc} (RE2 has no backtracking)")
    try:
        compiled = re2.compile(source.encode("utf-8"), _OPTIONS)
    except (re2.error, UnicodeEncodeError) as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        return KeyRegex(refused=f"RE2 cannot compile it ({detail})")
    return KeyRegex(regex=SafeRegex(compiled, source))


def regex_key_refusal(key: str) -> str | None:
    """Why a regex key is refused (valid JavaScript RE2 cannot run), or None (usable, plain, or not a regex)."""
    parsed = parse_regex_key(key)
    compiled = compile_key_regex(*parsed) if parsed is not None else None
    if compiled is None or compiled.plain or not compiled.refused:
        return None
    return f"regex {key.strip()!r} refused: {compiled.refused}; this key never matches"


def regex_key_problem(key: str) -> str | None:
    """Why a regex-looking key cannot be used as a regex (so the importer can warn), or None."""
    parsed = parse_regex_key(key)
    if parsed is None:
        return None
    compiled = compile_key_regex(*parsed)
    if compiled.plain:
        return f"regex {key.strip()!r} is not a valid regex ({compiled.refused}); it will be matched as plain text"
    return regex_key_refusal(key)
