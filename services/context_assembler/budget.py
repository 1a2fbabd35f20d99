"""Budget packing: which items of the gathered context fit ``max_tokens``, whole items only (an item is never
cut mid-text). :func:`pack` documents the priority order and what is reported when something is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from services.context_assembler.draft import AssemblyInput, Draft
from services.context_assembler.items import BotProfile, ChatLine, LoreItem, PersonaProfile
from services.context_assembler.render import lore_section, personas_in
from shared.tokens import EstimatedTokens, TokenCounter

KNOWLEDGE_NAMED = 5  # facts named one by one in ``degraded``; the rest are counted

T = TypeVar("T")


class Budget:
    """Tracks each section's tokens; accepts a change only if the new total stays within budget.

    Adding an item re-renders its section and counts it as a whole, and an item is only accepted if the total
    stays within the budget, so the reply never exceeds ``max_tokens`` unless ``system`` and ``persona``
    alone do (they are counted from the start and always go in full).
    """

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.count = draft.inp.counter.count
        self.section_tokens = {s: self.count(draft.render(s)) for s in ("system", "persona")}

    def total(self) -> int:
        return sum(self.section_tokens.values())

    def offer(self, section: str, kept: list[T], item: T) -> bool:
        """Append ``item`` to ``kept`` if ``section`` re-rendered with it still fits; False (and ``kept``
        unchanged) otherwise."""
        kept.append(item)
        new = self.count(self.draft.render(section))
        if self.total() - self.section_tokens.get(section, 0) + new > self.draft.inp.max_tokens:
            kept.pop()
            return False
        self.section_tokens[section] = new
        return True

    def fill_scored(self, section: str, kept: list[T], items: Sequence[T], score: Callable[[T], float]) -> None:
        """Best score first, skipping what does not fit (smaller items after it may still fit)."""
        for item in sorted(items, key=score, reverse=True):
            self.offer(section, kept, item)

    def fill_history(self, limit: int | None) -> bool:
        """Add history newest-first until ``limit`` messages are kept; False once one did not fit. History is
        always a contiguous run of the newest messages, so filling stops at the first that does not fit."""
        history = self.draft.inp.history
        kept = self.draft.history
        for line in reversed(history[: len(history) - len(kept)]):
            if limit is not None and len(kept) >= limit:
                return True
            if not self.offer("history", kept, line):
                return False
        return True


def _lore_priority(items: Sequence[LoreItem]) -> list[LoreItem]:
    # ``order`` descending: SillyTavern's priority.
    return sorted(items, key=lambda i: -i.order)


def _start(inp: AssemblyInput) -> Budget:
    # The persona note is reserved for every persona of the loaded window; names whose lines end up cut are
    # removed at the end, which only shortens the system text.
    return Budget(Draft(inp, personas_in(inp.history)))


def pack(inp: AssemblyInput) -> tuple[Draft, list[str]]:
    """The items kept within ``inp.max_tokens``, and ``degraded``: the gathering's entries then what must never
    be left out silently.

    Filled in priority order, whole items only:

    1. ``system`` (without its lore) and ``persona`` always go in full, even past the budget.
    2. Constant lore entries (the book's author said they must always be there), in ``order`` descending.
    3. The speaking bot's knowledge, in the order given (the facts most relevant to the request first, then
       the newest).
    4. The other lore entries, ``order`` descending (SillyTavern's priority).
    5. The newest ``min_history`` history messages (the immediate thread of the conversation).
    6. Legacy memories, best score first.
    7. Memories, best score first.
    8. Retrieved messages, best score first.
    9. The rest of the history, newest to oldest.

    So when the context is over budget it shrinks in reverse: history first (down to the newest
    ``min_history``), then retrieved, memories, legacy memories, the newest ``min_history`` messages, lore,
    and last the knowledge and the constant lore. ``min_history=0`` gives the strict order history, memories,
    legacy memories, lore. An item that does not fit is skipped and smaller ones after it may still fit,
    except in history (:meth:`Budget.fill_history`). A message shown in ``history`` is dropped from
    ``retrieved``.

    Dropping items for lack of room is normal operation and not reported, except for what must never go
    silently: a constant lore entry left out is named in ``degraded`` as ``lore:<uid>``, a fact of the
    speaking bot as ``knowledge:<fact_id>`` (the first five; beyond them ``knowledge:+<n>`` counts the rest).
    """
    degraded = list(dict.fromkeys(inp.degraded))
    budget = _start(inp)
    draft = budget.draft

    for item in _lore_priority([i for i in inp.lore if i.constant]):
        if not budget.offer(lore_section(item), draft.lore, item):
            degraded.append(f"lore:{item.uid}")
    missing_facts = [f.fact_id for f in inp.knowledge if not budget.offer("knowledge", draft.knowledge, f)]
    degraded += [f"knowledge:{fid}" for fid in missing_facts[:KNOWLEDGE_NAMED]]
    if len(missing_facts) > KNOWLEDGE_NAMED:
        degraded.append(f"knowledge:+{len(missing_facts) - KNOWLEDGE_NAMED}")
    for item in _lore_priority([i for i in inp.lore if not i.constant]):
        budget.offer(lore_section(item), draft.lore, item)
    room = budget.fill_history(max(0, inp.min_history))
    legacy = [m for m in inp.memories if m.kind == "legacy_memory"]
    budget.fill_scored("legacy_memories", draft.legacy, legacy, lambda m: m.score)
    summaries = [m for m in inp.memories if m.kind != "legacy_memory"]
    budget.fill_scored("memories", draft.memories, summaries, lambda m: m.score)
    budget.fill_scored("retrieved", draft.retrieved, inp.retrieved, lambda m: m.score or 0.0)
    if room:
        budget.fill_history(None)
    shown = {h.message_id for h in draft.history}
    draft.retrieved = [r for r in draft.retrieved if r.message_id not in shown]
    draft.note_names = personas_in(draft.history_oldest_first())
    return draft, list(dict.fromkeys(degraded))


def reachable_history(
    bot_id: str,
    bot: BotProfile | None,
    persona: PersonaProfile | None,
    history: Sequence[ChatLine],
    max_tokens: int,
    lore: Sequence[LoreItem] = (),
    counter: TokenCounter | None = None,
) -> list[ChatLine]:
    """The newest messages that could appear in the history section if it got all the room left after the
    system, persona and lore, oldest first. Older messages can never be shown as history, so retrieval
    searches among those only: a retrieved message then rarely duplicates a history line (``assemble`` drops
    one that does), and an early message is not hidden just because the loaded window is larger than what
    fits."""
    inp = AssemblyInput(
        bot_id, bot, persona, history=history, lore=lore, max_tokens=max_tokens, counter=counter or EstimatedTokens()
    )
    budget = _start(inp)
    for item in _lore_priority([i for i in lore if i.constant]) + _lore_priority([i for i in lore if not i.constant]):
        budget.offer(lore_section(item), budget.draft.lore, item)
    budget.fill_history(None)
    return budget.draft.history_oldest_first()
