"""Turning active books into a `CompiledLore`: priority order (spec §2), decorators (§3.7), macros, key sets.

Compiling is the expensive, cacheable part: it depends on the books, the global match settings and the macro
values (`{{char}}`, `{{user}}`), not on the chat. Activation then only scans text.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from mnemo.services.context_assembler.lore.engine.matcher import KeySet, normalise
from mnemo.shared.lore.keys import SafeRegex, compile_key_regex, parse_regex_key
from mnemo.shared.lore.model import Lorebook, LoreEntry, WorldInfoSettings

Source = Literal["global", "character", "chat", "persona"]
_MACRO = re.compile(r"\{\{\s*([A-Za-z_][\w.-]*)\s*\}\}")
# The extra texts an entry may opt into, in SillyTavern's haystack order.
EXTRA_FLAGS = (
    ("match_persona_description", "persona_description"),
    ("match_character_description", "character_description"),
    ("match_character_personality", "character_personality"),
    ("match_character_depth_prompt", "character_depth_prompt"),
    ("match_scenario", "scenario"),
    ("match_creator_notes", "creator_notes"),
)


@dataclass(frozen=True)
class ActiveBook:
    """A book taking part in a scan, with where it comes from (which decides its priority)."""

    book_id: str
    book: Lorebook
    source: Source = "character"


@dataclass(frozen=True)
class Key:
    """A key ready to test: `plain` (normalised text), `regex` (on RE2; JavaScript's `y` is anchored in its
    pattern), `always` (whitespace-only quirk) or `never` (empty, or a regex RE2 cannot run: refused)."""

    raw: str
    kind: Literal["plain", "regex", "always", "never"]
    text: str = ""
    regex: SafeRegex | None = None


@dataclass
class CompiledEntry:
    index: int
    world: str
    entry: LoreEntry
    ident: str  # "<book>.<uid>": identity for activation and timed effects
    hash: str  # changes when the entry is edited, which ends its timed effects
    primary: list[Key]
    secondary: list[Key]
    content: str
    decorator: Literal["activate", "dont_activate"] | None
    scope: tuple[int | None, tuple[str, ...]]  # (own scan depth, extra texts): entries sharing one haystack
    mode: tuple[bool, bool]  # (case sensitive, whole words)
    groups: list[str]
    always_check: bool  # cannot be found through the key index (constant, regex keys, decorators, ...)
    tokens: int | None = None  # content tokens by the default estimator, counted once per compiled book


@dataclass
class CompiledLore:
    entries: list[CompiledEntry]
    settings: WorldInfoSettings
    keysets: dict[tuple[tuple[int | None, tuple[str, ...]], tuple[bool, bool]], KeySet] = field(default_factory=dict)
    # (scope, mode) -> normalised key -> indices of entries having it as a primary key
    key_index: dict[tuple[object, ...], dict[str, list[int]]] = field(default_factory=dict)
    always: list[int] = field(default_factory=list)
    delay_levels: list[int] = field(default_factory=list)
    by_ident: dict[str, CompiledEntry] = field(default_factory=dict)


def expand_macros(text: str, macros: Mapping[str, str]) -> str:
    """Replace `{{name}}` (case-insensitive) with its value; unknown macros are left as written."""
    if "{{" not in text or not macros:
        return text
    lowered = {k.lower(): v for k, v in macros.items()}
    return _MACRO.sub(lambda m: lowered.get(m.group(1).lower(), m.group(0)), text)


def parse_decorators(content: str) -> tuple[Literal["activate", "dont_activate"] | None, str]:
    """SillyTavern knows only `@@activate` and `@@dont_activate`; other `@@` lines are dropped from content.

    A `@@@name` line is a fallback used only when the decorator before it was unknown. When every line starts
    with `@@`, SillyTavern leaves the content (and its decorators) untouched, and so do we.
    """
    if not content.startswith("@@"):
        return None, content
    lines = content.split("\n")
    body_at = next((i for i, line in enumerate(lines) if not line.startswith("@@")), None)
    if body_at is None:
        return None, content
    found: Literal["activate", "dont_activate"] | None = None
    previous_known = True
    for line in lines[:body_at]:
        fallback = line.startswith("@@@")
        if fallback and previous_known:
            continue
        name = (line[3:] if fallback else line[2:]).strip().split(" ", 1)[0]
        previous_known = name in ("activate", "dont_activate")
        if name == "activate":
            found = "activate"
        elif name == "dont_activate":
            found = "dont_activate"
    return found, "\n".join(lines[body_at:])


def sorted_entries(books: Sequence[ActiveBook], strategy: int) -> list[tuple[ActiveBook, LoreEntry]]:
    """Priority order: chat lore, persona lore, then character/global by strategy; `order` descending, stable."""

    def block(source: Source) -> list[tuple[ActiveBook, LoreEntry]]:
        return [(b, e) for b in books if b.source == source for e in sorted(b.book.entries, key=lambda x: x.uid)]

    def by_order(items: list[tuple[ActiveBook, LoreEntry]]) -> list[tuple[ActiveBook, LoreEntry]]:
        return sorted(items, key=lambda pair: -pair[1].order)

    glob, char = block("global"), block("character")
    if strategy == 0:
        main = by_order(glob + char)
    elif strategy == 2:
        main = by_order(glob) + by_order(char)
    else:
        main = by_order(char) + by_order(glob)
    return by_order(block("chat")) + by_order(block("persona")) + main


def compile_lore(
    books: Sequence[ActiveBook], settings: WorldInfoSettings | None = None, macros: Mapping[str, str] | None = None
) -> CompiledLore:
    settings = settings or WorldInfoSettings()
    macros = macros or {}
    lore = CompiledLore(entries=[], settings=settings)
    levels: set[int] = set()
    for index, (active, entry) in enumerate(sorted_entries(books, settings.character_strategy)):
        mode = (
            entry.case_sensitive if entry.case_sensitive is not None else settings.case_sensitive,
            entry.match_whole_words if entry.match_whole_words is not None else settings.match_whole_words,
        )
        scope = (entry.scan_depth, tuple(name for flag, name in EXTRA_FLAGS if getattr(entry, flag)))
        decorator, body = parse_decorators(entry.content)
        primary = [_key(k, macros, mode[0]) for k in entry.key]
        secondary = [_key(k, macros, mode[0]) for k in entry.keysecondary]
        keyset = lore.keysets.setdefault((scope, mode), KeySet(case_sensitive=mode[0], whole_words=mode[1]))
        for key in primary + secondary:
            if key.kind == "plain":
                keyset.add(key.text)
        index_map = lore.key_index.setdefault((scope, mode), {})
        for key in primary:
            if key.kind == "plain":
                index_map.setdefault(key.text, []).append(index)
        always = entry.constant or decorator is not None or any(k.kind in ("regex", "always") for k in primary)
        ident = f"{active.book_id}.{entry.uid}"
        digest = hashlib.sha1(f"{active.book_id}\0{entry.model_dump_json()}".encode()).hexdigest()[:16]
        lore.entries.append(
            CompiledEntry(
                index=index,
                world=active.book_id,
                entry=entry,
                ident=ident,
                hash=digest,
                primary=primary,
                secondary=secondary,
                content=expand_macros(body, macros),
                decorator=decorator,
                scope=scope,
                mode=mode,
                groups=entry.groups,
                always_check=always,
            )
        )
        if always:
            lore.always.append(index)
        if entry.delay_until_recursion:
            levels.add(entry.delay_until_recursion)
    lore.by_ident = {ce.ident: ce for ce in lore.entries}
    for keyset in lore.keysets.values():
        keyset.compile()
    lore.delay_levels = sorted(levels)
    return lore


def _key(raw: str, macros: Mapping[str, str], case_sensitive: bool) -> Key:
    expanded = expand_macros(raw, macros)
    if not expanded:
        return Key(raw=raw, kind="never")
    parsed = parse_regex_key(expanded)
    if parsed is not None:
        compiled = compile_key_regex(*parsed)
        if compiled.regex is not None:
            return Key(raw=raw, kind="regex", regex=compiled.regex)
        if not compiled.plain:
            return Key(raw=raw, kind="never")  # refused: it never runs, on RE2 or on Python's `re`
    trimmed = expanded.strip()
    if not trimmed:
        # SillyTavern quirk kept on purpose (it is documented behaviour, not a named bug): a whitespace-only key
        # passes the non-empty test, trims to "" and matches any text. The importer warns about such keys.
        return Key(raw=raw, kind="always")
    return Key(raw=raw, kind="plain", text=normalise(trimmed, case_sensitive))
