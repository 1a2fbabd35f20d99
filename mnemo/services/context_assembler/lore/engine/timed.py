"""Timed effects (spec §3.9): sticky and cooldown records live per conversation; the caller stores them.

The engine is pure, so the state comes in with the request and the updated state goes out with the result.
`messages` (L) is the number of chat messages at scan time. A record whose start is not behind L means the chat
did not advance (swipe, regenerate): the effect is undone, as in SillyTavern.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict, Field

from mnemo.services.context_assembler.lore.engine.compiled import CompiledEntry


class TimedRecord(BaseModel):
    model_config = ConfigDict(frozen=True)

    hash: str
    start: int
    end: int
    protected: bool = False


class TimedState(BaseModel):
    """`chat_metadata.timedWorldInfo`: records keyed by "<book>.<uid>"."""

    sticky: dict[str, TimedRecord] = Field(default_factory=dict)
    cooldown: dict[str, TimedRecord] = Field(default_factory=dict)


class ActiveEffects(BaseModel):
    sticky: set[str] = Field(default_factory=set)
    cooldown: set[str] = Field(default_factory=set)


def check_effects(
    state: TimedState, entries: Mapping[str, CompiledEntry], messages: int
) -> tuple[TimedState, ActiveEffects]:
    """Expire, undo or keep each record at the start of a scan; returns the kept state and the active sets."""
    if not state.sticky and not state.cooldown:
        return TimedState(), ActiveEffects()
    wanted = {rec.hash for rec in (*state.sticky.values(), *state.cooldown.values())}
    by_hash = {e.hash: e for e in entries.values() if e.hash in wanted}
    sticky: dict[str, TimedRecord] = {}
    cooldown: dict[str, TimedRecord] = {}
    active = ActiveEffects()
    new_cooldowns: dict[str, TimedRecord] = {}
    for kind, records, kept in (("sticky", state.sticky, sticky), ("cooldown", state.cooldown, cooldown)):
        for ident, rec in records.items():
            if messages <= rec.start and not rec.protected:
                continue  # the chat did not advance: undo
            entry = by_hash.get(rec.hash)
            if entry is None:
                if messages < rec.end:
                    kept[ident] = rec  # inert until it ends
                continue
            length = entry.entry.sticky if kind == "sticky" else entry.entry.cooldown
            if length <= 0:
                continue
            if messages >= rec.end:
                if kind == "sticky" and entry.entry.cooldown > 0:
                    new_cooldowns[ident] = TimedRecord(
                        hash=entry.hash, start=messages, end=messages + entry.entry.cooldown, protected=True
                    )
                continue
            kept[ident] = rec
            (active.sticky if kind == "sticky" else active.cooldown).add(ident)
    for ident, rec in new_cooldowns.items():
        cooldown[ident] = rec
        active.cooldown.add(ident)
    return TimedState(sticky=sticky, cooldown=cooldown), active


def set_effects(state: TimedState, activated: Iterable[CompiledEntry], messages: int) -> TimedState:
    """After a scan: start sticky and cooldown for activated entries that have none running (no extension)."""
    sticky = dict(state.sticky)
    cooldown = dict(state.cooldown)
    for ce in activated:
        if ce.entry.sticky > 0 and ce.ident not in sticky:
            sticky[ce.ident] = TimedRecord(hash=ce.hash, start=messages, end=messages + ce.entry.sticky)
        if ce.entry.cooldown > 0 and ce.ident not in cooldown:
            cooldown[ce.ident] = TimedRecord(hash=ce.hash, start=messages, end=messages + ce.entry.cooldown)
    return TimedState(sticky=sticky, cooldown=cooldown)


def delayed(ce: CompiledEntry, messages: int) -> bool:
    """`delay`: the entry cannot activate while the chat has fewer than `delay` messages."""
    return ce.entry.delay > 0 and messages < ce.entry.delay
