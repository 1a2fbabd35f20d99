"""Budget packing: which items of the gathered context fit ``max_tokens``, whole items only (an item is never
cut mid-text). :func:`pack` documents the tiers, how the scored sections compete (``packing.py``) and what is
reported when something is left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from mnemo.services.context_assembler.assemble.draft import AssemblyInput, Draft
from mnemo.services.context_assembler.assemble.packing import Offer
from mnemo.services.context_assembler.assemble.packing import pack as pack_offers
from mnemo.services.context_assembler.assemble.render import (
    lore_section,
    personas_in,
    render_directive,
    render_fact,
    render_line,
    render_memory,
    render_remembered,
    render_retrieved,
)
from mnemo.services.context_assembler.assemble.section_tokens import SectionTokens
from mnemo.services.context_assembler.items import (
    BotProfile,
    ChatLine,
    KnowledgeItem,
    LoreItem,
    PersonaProfile,
    SummaryItem,
    remembered_section,
)
from mnemo.shared.tokens import EstimatedTokens, TokenCounter

KNOWLEDGE_NAMED = 5  # facts named one by one in ``degraded``; the rest are counted
#: The value of a fact no search related to the request (no query, or the search did not run): the top, the
#: priority facts had before the sections competed, so the bot's knowledge still goes in first.
UNJUDGED_FACT_VALUE = 1.0

#: Scores are sharpened before they are divided by tokens (value = score ** SHARPNESS): the retrieval's scores
#: fall off with rank far more slowly than the chance that an item holds what the request needs (REALTALK:
#: retrieved ranks 1-5 hold ~0.09 of the evidence each, ranks 11-20 ~0.008, while the relevance only falls from
#: 1.0 to ~0.6), so plain value per token filled the budget with short, weak turns. 1 is plain value per token;
#: larger tends to score order, the cost only breaking near-ties. Replaying one run's retrieved turns offline
#: (2 REALTALK chats, 155 questions, ``--dump``), recall within 500 / 1,000 / 2,000 tokens: 0.21 / 0.43 / 0.65
#: at 1, 0.36 / 0.57 / 0.67 at 4, 0.42 / 0.58 / 0.67 at 8 and at 16, 0.44 / 0.59 / 0.67 in plain score order.
#: 16 since 2026-11-27 (issue 30): on the whole set offline at the benchmark's pool of 120 (``python -m
#: bench.retrieval_ablation --pool 120 --rows packing:``) the evidence within 1,000 / 2,000 tokens was 0.686 /
#: 0.770 at 8 and 0.691 / 0.775 at 16 (24: 0.693 / 0.772), and the full replay of 2 chats with its memories
#: (``python -m bench.retrieval_packing``) 0.460 / 0.646 / 0.726 within 500 / 1,000 / 2,000 at 8 against
#: 0.488 / 0.657 / 0.732 at 16 (24 and 32 lose at 2,000): the top of the ranking holds most of the evidence, so
#: a near-tie in score should not lose to a shorter turn. The cost still breaks near-ties (0.95 ** 16 = 0.44: a
#: turn half as long at 95 % of the score still goes first), so a short, closely related fact still beats a
#: long, middling turn.
SHARPNESS = 16.0

T = TypeVar("T")
#: The sections that always go in full, counted from the start: the bot and the persona.
ALWAYS = ("system", "persona")
_SECTION = {"legacy": "legacy_memories"}  # draft slot -> its section, where the names differ


class Budget:
    """Tracks each section's tokens; accepts a change only if the new total stays within budget.

    Adding an item counts its section with it (only its own line, :class:`SectionTokens`, where the estimator
    allows it; else the section re-rendered and counted whole), and an item is only accepted if the total
    stays within the budget, so the reply never exceeds ``max_tokens`` unless ``system`` and ``persona``
    alone do (they are counted from the start and always go in full).
    """

    def __init__(self, draft: Draft) -> None:
        self.draft = draft
        self.count = draft.inp.counter.count
        self.section_tokens = {s: self.count(draft.render(s)) for s in ALWAYS}
        self.lines = SectionTokens(draft)

    def total(self) -> int:
        return sum(self.section_tokens.values())

    def offer(self, section: str, kept: list[T], item: T) -> bool:
        """Append ``item`` to ``kept`` if ``section`` re-rendered with it still fits; False (and ``kept``
        unchanged) otherwise."""
        new = self.lines.with_item(section, kept, item)
        kept.append(item)
        if new is None:
            new = self.count(self.draft.render(section))
        if self.total() - self.section_tokens.get(section, 0) + new > self.draft.inp.max_tokens:
            kept.pop()
            return False
        self.lines.keep()
        self.section_tokens[section] = new
        return True

    def take(self, offer: Offer[Any]) -> bool:
        """:meth:`offer` for a packing offer: its ``slot`` is the draft's list it goes to."""
        kept: list[Any] = getattr(self.draft, offer.slot)
        if offer.slot == "lore":
            section = lore_section(offer.item)
        elif offer.slot == "remembered":
            section = remembered_section(offer.item)
        else:
            section = _SECTION.get(offer.slot, offer.slot)
        return self.offer(section, kept, offer.item)

    def fill_history(self, limit: int | None) -> bool:
        """Add history newest-first until ``limit`` messages are kept; False once one did not fit. History is
        always a contiguous run of the newest messages, so filling stops at the first that does not fit.

        The run is found by bisection rather than one message at a time: the section's count only grows as
        older lines are added (more text, never less: true of the estimator and of a tokenizer, whose pieces
        do not merge across the lines' separators), so the longest run that fits is the one the one-by-one
        fill would stop at, in about log2(n) renders of the section instead of n (each render and count is
        of the whole section: the one-by-one fill was quadratic, ~40 renders of up to 40 lines per request)."""
        history = self.draft.inp.history
        kept = self.draft.history
        start = len(kept)
        older = list(reversed(history[: len(history) - start]))
        if limit is not None:
            older = older[: max(0, limit - start)]
        others = self.total() - self.section_tokens.get("history", 0)

        def tokens_with(n: int) -> int:
            del kept[start:]
            kept.extend(older[:n])
            return self.count(self.draft.render("history"))

        best, best_tokens = 0, self.section_tokens.get("history", 0)
        if older and others + (everything := tokens_with(len(older))) <= self.draft.inp.max_tokens:
            best, best_tokens = len(older), everything  # the common case: the whole run fits, one render
        else:
            lo, hi = 0, len(older) - 1  # the longest fitting run has between lo and hi lines
            while lo < hi:
                mid = (lo + hi + 1) // 2
                mid_tokens = tokens_with(mid)
                if others + mid_tokens <= self.draft.inp.max_tokens:
                    lo, best, best_tokens = mid, mid, mid_tokens
                else:
                    hi = mid - 1
        del kept[start:]
        kept.extend(older[:best])
        if best:
            self.section_tokens["history"] = best_tokens
        return best == len(older)


def _lore_priority(items: Sequence[LoreItem]) -> list[LoreItem]:
    # ``order`` descending: SillyTavern's priority.
    return sorted(items, key=lambda i: -i.order)


def _start(inp: AssemblyInput) -> Budget:
    # The persona note is reserved for every persona of the loaded window; names whose lines end up cut are
    # removed at the end, which only shortens the system text.
    return Budget(Draft(inp, personas_in(inp.history)))


def fact_value(fact: KnowledgeItem) -> float:
    """A fact's expected usefulness: its search score, or :data:`UNJUDGED_FACT_VALUE` when none judged it."""
    return UNJUDGED_FACT_VALUE if fact.score is None else fact.score


def must_name(fact: KnowledgeItem) -> bool:
    """Whether leaving ``fact`` out is named in ``degraded``: the search related it to the request (score
    above 0), or nothing judged it. A fact the search found unrelated (score 0) goes silently, as a memory."""
    return fact.score is None or fact.score > 0


def sharpened(score: float) -> float:
    """``score`` in [0, 1] (clamped) to the power :data:`SHARPNESS`: an item's value for packing."""
    return float(min(1.0, max(0.0, score)) ** SHARPNESS)


def competing(inp: AssemblyInput) -> list[Offer[Any]]:
    """The scored sections' offers: knowledge, legacy memories, memories, the memory API's remembered memories
    (each in its type's section), retrieved (ties keep this order)."""
    count = inp.counter.count
    legacy = [m for m in inp.memories if m.kind == "legacy_memory"]
    memories = [m for m in inp.memories if m.kind != "legacy_memory"]
    return [
        *(Offer("knowledge", f, sharpened(fact_value(f)), count(render_fact(f))) for f in inp.knowledge),
        *(Offer("legacy", m, sharpened(m.score), count(render_memory(m))) for m in legacy),
        *(Offer("memories", m, sharpened(m.score), count(render_memory(m))) for m in memories),
        *(
            Offer("remembered", m, sharpened(m.score), count(render_remembered(m, remembered_section(m))))
            for m in inp.remembered
        ),
        *(Offer("retrieved", r, sharpened(r.score or 0.0), count(render_retrieved(r))) for r in inp.retrieved),
    ]


class Shown:
    """``fits`` for the packing that remembers which messages the context shows so far (history and retrieved
    lines taken, the turns a taken memory cites) and holds back a memory (summary or legacy memory) whose cited
    turns are all shown already: it would spend budget on evidence the reply holds (issue 30; the LoCoMo
    harness credits a memory with the turns it cites, and so does ``make bench-retrieval``). What is held back
    (``later``) is offered again once everything else is in, so it only takes room nothing else wanted. A fact
    is not held back: it is the bot's knowledge, named in ``degraded`` when left out, not a copy of the turns."""

    def __init__(self, take: Callable[[Offer[Any]], bool]) -> None:
        self._take = take
        self.seen: set[str] = set()
        self.later: list[Offer[Any]] = []

    def __call__(self, offer: Offer[Any]) -> bool:
        item = offer.item
        cites = set(item.message_ids) if isinstance(item, SummaryItem) else set()
        if cites and cites <= self.seen:
            self.later.append(offer)
            return False
        if not self._take(offer):
            return False
        if isinstance(item, ChatLine):
            self.seen.add(item.message_id)
        self.seen |= cites
        return True


def pack(inp: AssemblyInput) -> tuple[Draft, list[str]]:
    """The items kept within ``inp.max_tokens``, and ``degraded``: the gathering's entries then what must never
    be left out silently.

    Filled in tiers, whole items only:

    1. ``system`` (without its lore) and ``persona`` always go in full, even past the budget.
    2. Reserved, in this order, each if it fits: constant lore entries (the book's author said they must always
       be there), then the other activated lore entries, each group ``order`` descending (SillyTavern's
       priority), then the newest ``min_history`` history messages (the immediate thread; a contiguous run),
       then the ``directive`` when the request has it (only a budget too small for the thread leaves it out).
    3. Competing (:func:`mnemo.services.context_assembler.assemble.packing.pack`): the bot's knowledge, legacy memories,
       memories, the memory API's remembered memories and retrieved messages, best value per token first. The
       value is the retrieval's own score against this request, :func:`sharpened`: a memory's or fact's dense
       cosine (a remembered memory's times its recency factor), a retrieved message's relevance
       (``ranking.py``); a fact no search judged is worth :data:`UNJUDGED_FACT_VALUE`.
    4. The rest of the history, newest to oldest (only if the whole ``min_history`` run went in).

    So when the context is over budget it shrinks in reverse: history first (down to the newest
    ``min_history``), then the scored items, lowest value per token first, then the newest ``min_history``
    messages, the keyword lore and last the constant lore. An item that does not fit is skipped and smaller
    ones after it may still fit, except in history. A message shown in ``history`` is dropped from
    ``retrieved``; a memory whose cited turns are all shown already goes in last, after the rest of the history
    (:class:`Shown`).

    Dropping items for lack of room is normal operation and not reported, except for what must never go
    silently: a constant lore entry left out is named in ``degraded`` as ``lore:<uid>``, a fact of the
    speaking bot as ``knowledge:<fact_id>`` (the first five; beyond them ``knowledge:+<n>`` counts the rest)
    when the search related it to the request or nothing judged it (:func:`must_name`).
    """
    degraded = list(dict.fromkeys(inp.degraded))
    budget = _start(inp)
    draft = budget.draft
    count = inp.counter.count

    constants = _lore_priority([i for i in inp.lore if i.constant])
    lore = [*constants, *_lore_priority([i for i in inp.lore if not i.constant])]
    newest = list(reversed(inp.history))[: max(0, inp.min_history)]
    reserved: list[Offer[Any]] = [Offer("lore", i, 1.0, count(i.content)) for i in lore]
    reserved += [Offer("history", h, 1.0, count(render_line(h)), chain="history") for h in newest]
    if inp.directive:  # the knowledge rule: after the immediate thread, before anything scored
        rule = render_directive(inp.bot_id, inp.bot)
        reserved.append(Offer("directive", rule, 1.0, count(rule)))
    shown_so_far = Shown(budget.take)
    packed = pack_offers(reserved, competing(inp), shown_so_far)

    missing = {id(o.item) for o in packed.missing}
    degraded += [f"lore:{i.uid}" for i in constants if id(i) in missing]
    kept_facts = {id(f) for f in draft.knowledge}
    missing_facts = [f.fact_id for f in inp.knowledge if id(f) not in kept_facts and must_name(f)]
    degraded += [f"knowledge:{fid}" for fid in missing_facts[:KNOWLEDGE_NAMED]]
    if len(missing_facts) > KNOWLEDGE_NAMED:
        degraded.append(f"knowledge:+{len(missing_facts) - KNOWLEDGE_NAMED}")
    if not any(o.slot == "history" for o in packed.missing):
        budget.fill_history(None)
    for held_back in shown_so_far.later:
        budget.take(held_back)
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
