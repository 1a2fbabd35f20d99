"""Pure fact extraction: the statements a message holds, as fact candidates for each character present (who
learns, a candidate's subject, id and event are the knowledge aggregate's: ``mnemo.shared.aggregates.knowledge``).

Without an LLM (the fallback), facts come from these documented patterns, applied sentence by sentence and
attributed to the message's ``author_name`` (A); the author itself does not learn what it said:

==============================================  =====================================  ==============
pattern in the message                          fact                                   subject
==============================================  =====================================  ==============
``my name is X`` / ``call me X`` / ``I'm X``    ``A's name is X.``                     ``a:name``
``I am a X`` / ``I'm an X``                     ``A is a X.``                          ``a:identity``
``I am from X`` / ``I'm from X``                ``A is from X.``                       ``a:origin``
``I live in X``                                 ``A lives in X.``                      ``a:home``
``I have/own a X`` (a, an, some, a number)      ``A has a X.``                         ``a:has:x``
``my K is X``                                   ``A's K is X.``                        ``a:k``
``the secret/password/code is X``               ``A said the secret is X.``            (the text)
``Name is X`` (a capitalised name opens it)     ``Name is X.``                         (the text)
==============================================  =====================================  ==============

The subject is derived from the fact's wording (``subject_of``): a newer fact with the same subject supersedes
the older one when read.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from mnemo.shared.aggregates.knowledge import FactCandidate, present_characters, subject_of
from mnemo.shared.events.recorded import FactType, MessageRecorded

PATTERN_METHOD = "pattern"


# --- the fallback patterns ------------------------------------------------------------------------------
_VALUE = r"(?P<v>[^.!?;\n]{1,120})"
_NAME = r"(?P<v>[A-Z][\w'-]*(?: [A-Z][\w'-]*){0,3})"
_NOT_NAMES = frozenset(
    [
        "i",
        "it",
        "this",
        "that",
        "there",
        "he",
        "she",
        "they",
        "we",
        "you",
        "what",
        "who",
        "where",
        "when",
        "why",
        "how",
        "here",
        "my",
        "your",
        "his",
        "her",
        "our",
        "their",
        "the",
        "a",
        "an",
        "and",
        "but",
        "so",
        "yes",
        "no",
        "today",
        "tomorrow",
        "everything",
        "nothing",
        "someone",
        "everyone",
    ]
)


@dataclass(frozen=True)
class _Pattern:
    regex: re.Pattern[str]
    template: str  # format fields: a (author), v (value), k (key)
    fact_type: FactType
    confidence: float
    tags: tuple[str, ...] = ()
    cut_and: bool = True  # cut the value at the first " and "


_PATTERNS: tuple[_Pattern, ...] = (
    _Pattern(re.compile(r"\b(?:my name is|call me) " + _VALUE, re.I), "{a}'s name is {v}.", "declarative", 0.9),
    _Pattern(re.compile(r"\bI(?: am|'m) (?P<v>[A-Z][\w'-]*)(?=[\s,.!?]|$)"), "{a}'s name is {v}.", "declarative", 0.6),
    _Pattern(re.compile(r"\bI(?: am|'m) (?P<art>an?) " + _VALUE, re.I), "{a} is {art} {v}.", "semantic", 0.7),
    _Pattern(re.compile(r"\bI(?: am|'m) from " + _VALUE, re.I), "{a} is from {v}.", "declarative", 0.8),
    _Pattern(re.compile(r"\bI live in " + _VALUE, re.I), "{a} lives in {v}.", "declarative", 0.8),
    _Pattern(
        re.compile(r"\bI (?:have|own) (?P<art>an?|some|two|three|four|five|\d+) " + _VALUE, re.I),
        "{a} has {art} {v}.",
        "declarative",
        0.7,
    ),
    _Pattern(re.compile(r"\bmy (?P<k>[a-z]+(?: [a-z]+)?) is " + _VALUE, re.I), "{a}'s {k} is {v}.", "declarative", 0.8),
    _Pattern(
        re.compile(r"\bthe (?P<k>secret|password|code) is " + _VALUE, re.I),
        "{a} said the {k} is {v}.",
        "declarative",
        0.9,
        tags=("secret",),
        cut_and=False,
    ),
    _Pattern(re.compile(r"^" + _NAME.replace("?P<v>", "?P<x>") + r" is " + _VALUE), "{x} is {v}.", "semantic", 0.6),
)


def _clip(value: str, cut_and: bool) -> str:
    value = value.strip().strip("\"'").strip()
    if cut_and:
        value = re.split(r",| and | but | because ", value, maxsplit=1)[0].strip()
    return value.rstrip(",:;-").strip()


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+|\n+", text) if s.strip()]


def pattern_statements(author: str, content: str) -> list[tuple[str, FactType, float, tuple[str, ...]]]:
    """(text, type, confidence, tags) of every pattern match in ``content``; one per subject (the most confident, then the first)."""
    author = author.strip() or "Someone"
    found: dict[str, tuple[str, FactType, float, tuple[str, ...]]] = {}
    for sentence in sentences(content):
        for p in _PATTERNS:
            for m in p.regex.finditer(sentence):
                groups = m.groupdict()
                value = _clip(groups["v"], p.cut_and)
                if not value:
                    continue
                if "x" in groups and groups["x"].split()[0].lower() in _NOT_NAMES:
                    continue
                if "k" in groups and groups["k"].lower() in ("name",) and "{k}" in p.template:
                    continue  # "my name is" is the name pattern's
                fields = {"a": author, "v": value, "k": (groups.get("k") or "").lower(), "x": groups.get("x") or ""}
                fields["art"] = (groups.get("art") or "").lower()
                text = p.template.format_map(fields)
                subject = subject_of(text)
                if subject not in found or found[subject][2] < p.confidence:
                    found[subject] = (text, p.fact_type, p.confidence, p.tags)
    return list(found.values())


def pattern_candidates(msg: MessageRecorded, *, revision: str = "") -> list[FactCandidate]:
    """Facts every character present (but the author) learns from ``msg`` by the fallback patterns."""
    statements = pattern_statements(msg.author_name, msg.content)
    if not statements:
        return []
    return [
        FactCandidate(
            character_id=character_id,
            character_kind=kind,
            user_id=msg.user_id,
            conversation_id=msg.conversation_id,
            text=text,
            fact_type=fact_type,
            confidence=confidence,
            learned_at=msg.created_at,
            message_ids=(msg.message_id,),
            method=PATTERN_METHOD,
            tags=tags,
            revision=revision,
        )
        for character_id, kind in present_characters(msg).items()
        if character_id != msg.author_id
        for text, fact_type, confidence, tags in statements
    ]


def runs_of_presence(messages: Sequence[MessageRecorded]) -> list[list[MessageRecorded]]:
    """Consecutive messages of one conversation with the same characters present, in order: one LLM call
    each, so no character is ever shown a message it was absent for."""
    by_conversation: dict[tuple[str, str], list[MessageRecorded]] = {}
    for msg in messages:
        by_conversation.setdefault((msg.user_id, msg.conversation_id), []).append(msg)
    runs: list[list[MessageRecorded]] = []
    for conversation in by_conversation.values():
        key: frozenset[str] | None = None
        for msg in sorted(conversation, key=lambda m: m.index):
            present = frozenset(present_characters(msg))
            if key is not None and present == key:
                runs[-1].append(msg)
            else:
                runs.append([msg])
                key = present
    return runs
