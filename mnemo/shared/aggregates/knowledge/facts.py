"""What a character learns from a message (the knowledge aggregate's decider of learning): a fact candidate, its
subject and its ``knowledge.fact_learned`` event.

Who learns: the characters present when the message was said (the bots in ``bot_ids`` and the user's active
persona, ``present_characters``). The only way into a character's knowledge is through a message it witnessed,
so an absent character learns nothing, whatever the message says. How the statements are found (the patterns,
an LLM) is the memory-extractor's.

``subject_of`` derives the subject from a statement's wording (the same rules serve pattern and LLM facts): a
newer fact with the same subject supersedes the older one when read; a statement with no recognised attribute
is its own subject (``fact:<normalised text>``), so it supersedes nothing. A fact's id is deterministic over
where it was learned and what it says, so a redelivery appends nothing new.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from mnemo.shared.aggregates.knowledge.witnesses import Witnessing
from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import (
    FACT_LEARNED,
    FactLearned,
    FactType,
    MessageRecorded,
    knowledge_stream,
    new_event,
    player_scope,
)
from mnemo.shared.mapping import mapped

CharacterKind = Literal["bot", "persona"]


@dataclass(frozen=True)
class FactCandidate:
    """A fact a character may learn, before deduplication."""

    character_id: str
    character_kind: CharacterKind
    user_id: str
    conversation_id: str
    text: str
    fact_type: FactType
    confidence: float
    learned_at: datetime
    message_ids: tuple[str, ...]
    method: str
    prompt_version: str | None = None
    tags: tuple[str, ...] = ()
    revision: str = ""  # "" for a message as first recorded, the edit's key after an edit

    @property
    def subject(self) -> str:
        return subject_of(self.text)

    def fact_id(self, tenant_id: str) -> str:
        """Deterministic over where it was learned and what it says: a redelivery yields the same id."""
        return deterministic_id(
            FACT_LEARNED.name,
            tenant_id,
            self.character_id,
            self.user_id,
            self.conversation_id,
            self.revision,
            *self.message_ids,
            normalise(self.text),
        )

    def payload(self, tenant_id: str) -> FactLearned:
        return mapped(FactLearned, self, fact_id=self.fact_id(tenant_id), scope=player_scope(self.user_id))


def learned(
    tenant_id: str, cand: FactCandidate, cause: EventEnvelope | None = None, traceparent: str | None = None
) -> Witnessing:
    """The ``knowledge.fact_learned`` of a kept candidate in its character's stream, caused by the event that
    carried its message (``cause``); the event id is the fact's."""
    payload = cand.payload(tenant_id)
    event = new_event(
        payload,
        event_id=payload.fact_id,
        tenant_id=tenant_id,
        occurred_at=cand.learned_at,
        causation_id=cause.event_id if cause else None,
        correlation_id=(cause.correlation_id or cause.event_id) if cause else None,
        traceparent=traceparent,
    )
    return Witnessing(knowledge_stream(tenant_id, cand.character_id), event)


def normalise(text: str) -> str:
    """Lowercase words without punctuation, single spaces: the key of exact duplicates."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


def present_characters(msg: MessageRecorded) -> dict[str, CharacterKind]:
    """The characters present for ``msg``: its bots, then the persona (first kind wins on a repeated id)."""
    present: dict[str, CharacterKind] = dict.fromkeys(msg.bot_ids, "bot")
    if msg.persona_id and msg.persona_id not in present:
        present[msg.persona_id] = "persona"
    return present


_SUBJECT_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(?P<x>.{1,60}?)'s name is ", re.I), "name"),
    (re.compile(r"^(?P<x>.{1,60}?)'s (?P<k>[\w -]{1,30}?) (?:is|are|was|were) ", re.I), ""),
    (re.compile(r"^(?P<x>.{1,60}?) lives in ", re.I), "home"),
    (re.compile(r"^(?P<x>.{1,60}?) is from ", re.I), "origin"),
    (re.compile(r"^(?P<x>.{1,60}?) (?:has|owns) (?P<k>.+)$", re.I), "has"),
    (re.compile(r"^(?P<x>[\w' -]{1,40}?) is (?:a|an) ", re.I), "identity"),
)


def subject_of(text: str) -> str:
    """The normalised key of what ``text`` is about, e.g. ``ana:home`` for ``Ana lives in Port Vell.``"""
    statement = text.strip().rstrip(".!")
    for rule, attribute in _SUBJECT_RULES:
        m = rule.match(statement)
        if m is None:
            continue
        who = normalise(m["x"])
        if attribute == "has":
            return f"{who}:has:{normalise(m['k'])}"
        return f"{who}:{attribute or normalise(m['k'])}"
    return f"fact:{normalise(text)}"
