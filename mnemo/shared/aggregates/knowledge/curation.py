"""Curation of a character's knowledge (the knowledge aggregate's): deduplication, supersession and the per-user
cap, pure.

- Dedup: a candidate whose normalised text equals a known fact's (exact) or whose embedding has cosine
  >= ``NEAR_DUPLICATE`` with one (near) is not learned again; known = the character's current facts in that
  user's scope plus the candidates already kept from the same batch.
- Supersession (read time): among facts with the same subject, only the newest is current. Nothing is
  rewritten; the older fact stays in the log and in the read model.
- Cap: when a character holds more than ``cap`` current facts in one user's scope, the oldest are folded
  into broader facts (``knowledge.facts_consolidated``) instead of being dropped: grouped by what they are
  about (the subject's first part, e.g. ``ana``), each group of two or more becomes one fact; if that does
  not free enough room, the oldest facts all become one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol, TypeVar

from mnemo.shared.aggregates.knowledge.facts import FactCandidate, normalise
from mnemo.shared.events.envelope import NewEvent, deterministic_id
from mnemo.shared.events.recorded import FACTS_CONSOLIDATED, FactsConsolidated, FactType, new_event, player_scope

NEAR_DUPLICATE = 0.92
DEFAULT_CAP = 50
CONSOLIDATE_AT_LEAST = 10  # facts folded per consolidation at least, so it does not run on every new fact
EXTRACTIVE = "extractive"


class FactLike(Protocol):
    """What curation reads of a stored fact (``mnemo.shared.readmodels.knowledge.FactView`` has it)."""

    @property
    def fact_id(self) -> str: ...
    @property
    def character_id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def subject(self) -> str: ...
    @property
    def fact_type(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def confidence(self) -> float: ...
    @property
    def learned_at(self) -> datetime: ...
    @property
    def message_ids(self) -> tuple[str, ...]: ...


F = TypeVar("F", bound=FactLike)


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Dot product: embedders return L2-normalised vectors."""
    return sum(x * y for x, y in zip(a, b, strict=True))


@dataclass
class Known:
    """What one character already knows in one user's scope: normalised texts and their vectors."""

    texts: set[str]
    vectors: list[Sequence[float]]


def keep_fresh(
    candidates: Sequence[FactCandidate],
    vectors: Sequence[Sequence[float]],
    known: dict[tuple[str, str], Known],
    threshold: float = NEAR_DUPLICATE,
) -> list[FactCandidate]:
    """The candidates that are neither exact nor near duplicates of what their character knows for that user
    (``known`` keyed by (character, user); missing means nothing known). ``known`` grows with those kept."""
    kept: list[FactCandidate] = []
    for cand, vector in zip(candidates, vectors, strict=True):
        k = known.setdefault((cand.character_id, cand.user_id), Known(set(), []))
        norm = normalise(cand.text)
        if not norm or norm in k.texts or any(cosine(vector, v) >= threshold for v in k.vectors):
            continue
        k.texts.add(norm)
        k.vectors.append(vector)
        kept.append(cand)
    return kept


def _newest_first_key(f: FactLike) -> tuple[datetime, str]:
    return (f.learned_at, f.fact_id)


def current(facts: Sequence[F]) -> list[F]:
    """Supersession: per (character, subject) only the newest fact, the result newest first."""
    seen: set[tuple[str, str]] = set()
    out: list[F] = []
    for f in sorted(facts, key=_newest_first_key, reverse=True):
        key = (f.character_id, f.subject)
        if key in seen:
            continue
        seen.add(key)
        out.append(f)
    return out


def entity_of(subject: str) -> str:
    head = subject.split(":", 1)[0]
    return "" if head in ("fact", "") else head


def plan_consolidation(
    facts: Sequence[F], cap: int = DEFAULT_CAP, at_least: int = CONSOLIDATE_AT_LEAST
) -> list[list[F]]:
    """Groups of current facts (each oldest first) to fold into one fact each, so that at most ``cap`` stay.

    ``facts``: one character's current facts in one user's scope. Empty when within the cap."""
    excess = len(facts) - cap
    if excess <= 0:
        return []
    oldest = sorted(facts, key=_newest_first_key)[: min(len(facts), max(excess + 1, at_least))]
    by_entity: dict[str, list[F]] = {}
    for f in oldest:
        by_entity.setdefault(entity_of(f.subject), []).append(f)
    groups = [g for g in by_entity.values() if len(g) >= 2]
    leftovers = [g[0] for g in by_entity.values() if len(g) == 1]
    if len(leftovers) >= 2:
        groups.append(sorted(leftovers, key=_newest_first_key))
    if sum(len(g) - 1 for g in groups) < excess:
        return [oldest]
    return groups


def merge_extractive(group: Sequence[FactLike]) -> str:
    """The group's statements joined, oldest first, each ending with a full stop."""
    return " ".join(t if t.endswith((".", "!", "?")) else f"{t}." for t in (f.text.strip() for f in group) if t)


def consolidated_fact(
    tenant_id: str,
    group: Sequence[FactLike],
    *,
    character_kind: str,
    user_id: str,
    conversation_id: str,
    text: str,
    method: str = EXTRACTIVE,
    prompt_version: str | None = None,
) -> FactsConsolidated:
    """The broader fact replacing ``group``; its id is deterministic over the facts it folds."""
    ids = sorted(f.fact_id for f in group)
    fact_id = deterministic_id(FACTS_CONSOLIDATED.name, tenant_id, group[0].character_id, user_id, *ids)
    types = {f.fact_type for f in group}
    fact_type: FactType = "semantic"
    if len(types) == 1 and (only := next(iter(types))) in ("episodic", "semantic", "declarative", "procedural"):
        fact_type = only  # type: ignore[assignment]
    entity = entity_of(group[0].subject) if len({entity_of(f.subject) for f in group}) == 1 else ""
    tags = dict.fromkeys(t for f in group for t in f.tags)
    return FactsConsolidated(
        fact_id=fact_id,
        character_id=group[0].character_id,
        character_kind="bot" if character_kind == "bot" else "persona",
        user_id=user_id,
        conversation_id=conversation_id,
        text=text,
        subject=f"{entity or 'facts'}:consolidated:{fact_id}",
        fact_type=fact_type,
        tags=[*tags, "consolidated"] if "consolidated" not in tags else list(tags),
        confidence=min(f.confidence for f in group),
        learned_at=max(f.learned_at for f in group),
        scope=player_scope(user_id),
        message_ids=list(dict.fromkeys(m for f in group for m in f.message_ids)),
        method=method,
        prompt_version=prompt_version,
        consolidates=ids,
    )


class Fact(FactLike, Protocol):
    """What the deciders read of a fact's current state (the knowledge read model's ``FactView`` has it)."""

    @property
    def user_id(self) -> str: ...
    @property
    def character_kind(self) -> str: ...
    @property
    def conversation_id(self) -> str: ...
    @property
    def scope(self) -> str: ...
    @property
    def status(self) -> str: ...


def consolidation(
    tenant_id: str,
    group: Sequence[FactLike],
    *,
    like: Fact,
    text: str,
    method: str = EXTRACTIVE,
    prompt_version: str | None = None,
    causation_id: str | None = None,
) -> NewEvent:
    """The ``knowledge.facts_consolidated`` event folding ``group`` (``consolidated_fact``), in the character
    kind, owner and conversation of ``like``; its event id is the fact's, so a redelivery appends nothing new."""
    owner = {"character_kind": like.character_kind, "user_id": like.user_id, "conversation_id": like.conversation_id}
    fact = consolidated_fact(tenant_id, group, **owner, text=text, method=method, prompt_version=prompt_version)
    return new_event(
        fact, event_id=fact.fact_id, tenant_id=tenant_id, occurred_at=fact.learned_at, causation_id=causation_id
    )


def cap_consolidation(
    tenant_id: str, group: Sequence[Fact], *, text: str, method: str = EXTRACTIVE, prompt_version: str | None = None
) -> NewEvent:
    """The consolidation of one group ``plan_consolidation`` chose (one owner's facts; its text merged by the
    caller, by an LLM or ``merge_extractive``), in the character kind and conversation of its newest fact."""
    newest = max(group, key=_newest_first_key)
    return consolidation(tenant_id, group, like=newest, text=text, method=method, prompt_version=prompt_version)
