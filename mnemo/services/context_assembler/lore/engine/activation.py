"""The keyword activation engine (spec §3): pure, deterministic for a given seed, faithful to SillyTavern.

`activate(lore, request)` runs SillyTavern's scan passes (initial, recursion, min-activations), the per-entry
checks in their exact order, inclusion groups, the probability roll and the greedy token-budget cut, then places
the survivors (§4). Randomness comes from a `random.Random` seeded with the request's seed (conversation + turn),
so a replayed turn activates the same entries. Timed-effect state goes in and comes out; the caller persists it.

Deliberate differences from SillyTavern, each a bug the spec names or a recommendation of spec §8:
- the budget counts every activated entry (SillyTavern's `allActivatedText` under-counts, §3.4/§9), and
  budget-rejected entries never feed the recursion buffer (§9);
- entries forced by vector similarity keep their priority index instead of jumping ahead of every entry (§5);
- group filtering removes by identity and matches earlier activations per group name (see `groups`);
- group scoring uses macro-expanded keys, as normal matching does (§9).
"""

from __future__ import annotations

from mnemo.services.context_assembler.lore.engine.compiled import CompiledEntry, CompiledLore, Key
from mnemo.services.context_assembler.lore.engine.groups import filter_groups
from mnemo.services.context_assembler.lore.engine.matcher import keys_in, normalise
from mnemo.services.context_assembler.lore.engine.placement import Placed, place
from mnemo.services.context_assembler.lore.engine.scan_types import (
    MAX_SCAN_DEPTH,
    ActivatedEntry,
    ActivationResult,
    ScanBudgetExceeded,
    ScanMessage,
    ScanRequest,
    ScanState,
    Why,
    seeded_rng,
    token_budget,
)
from mnemo.services.context_assembler.lore.engine.timed import check_effects, delayed, set_effects
from mnemo.shared.lore.keys import haystack_bytes
from mnemo.shared.tokens import estimate_tokens

__all__ = [
    "ActivatedEntry",
    "ActivationResult",
    "ScanBudgetExceeded",
    "ScanMessage",
    "ScanRequest",
    "activate",
    "token_budget",
]


class _Scan:
    """The state of one `activate` call; the methods are the steps of spec §3.2-3.4."""

    def __init__(self, lore: CompiledLore, req: ScanRequest) -> None:
        self.lore, self.req, self.s = lore, req, lore.settings
        self.chat = [(f"{m.name}: {m.text}" if self.s.include_names else m.text).strip() for m in req.messages][::-1]
        self.n_messages = req.message_count if req.message_count is not None else len(req.messages)
        self.rng = seeded_rng(req.seed)
        self.by_ident = lore.by_ident
        if req.dry_run:
            self.timed, self.sticky, self.cooldown = req.timed, set[str](), set[str]()
        else:
            self.timed, active = check_effects(req.timed, self.by_ident, self.n_messages)
            self.sticky, self.cooldown = active.sticky, active.cooldown
        self.activated: dict[str, tuple[CompiledEntry, Why]] = {}
        self.failed: set[str] = set()
        self.recurse: list[list[CompiledEntry]] = []  # the entries each recursion pass feeds back, in order
        self.state = ScanState.INITIAL
        self.skew = 0
        self.found: dict[tuple[object, ...], set[str]] = {}
        self.hays: dict[tuple[object, ...], str] = {}
        self.hay_bytes: dict[tuple[object, ...], bytes] = {}  # the haystacks as RE2 reads them, once each
        self.budget = token_budget(self.s.budget_percent, req.max_context, self.s.budget_cap)
        self.used = 0
        self.overflowed = False

    def depth(self, scope: tuple[int | None, tuple[str, ...]]) -> int:
        own = scope[0]
        return min(own if own is not None else self.s.depth + self.skew, MAX_SCAN_DEPTH)

    def segments(self, scope: tuple[int | None, tuple[str, ...]], state: ScanState) -> list[str]:
        """The texts a scope's haystack joins (:meth:`haystack`), in its order; none at depth 0."""
        depth = self.depth(scope)
        if depth <= 0:
            return []  # SillyTavern: scan depth 0 disables keyword matching entirely, extras included (§9)
        texts = self.chat[:depth]
        texts += [self.req.scan_data[x] for x in scope[1] if self.req.scan_data.get(x)]
        texts += [t for t in self.req.injected if t]
        if state != ScanState.MIN_ACTIVATIONS:
            texts += [ce.content for chunk in self.recurse for ce in chunk]
        return texts

    def haystack(self, scope: tuple[int | None, tuple[str, ...]], state: ScanState) -> str:
        """The scope's whole haystack: regex keys and keys with a line break are tested on it."""
        hay = self.hays.get(scope)
        if hay is None:
            if self.depth(scope) <= 0:
                hay = ""
            else:
                depth = self.depth(scope)
                text = "\n".join("\x01" + m for m in self.chat[:depth])
                tail = [self.req.scan_data[x] for x in scope[1] if self.req.scan_data.get(x)]
                tail += [t for t in self.req.injected if t]
                if state != ScanState.MIN_ACTIVATIONS and self.recurse:
                    tail.append("\n".join("\n".join(ce.content for ce in chunk) for chunk in self.recurse))
                hay = text + "".join("\n\x01" + t for t in tail)
            self.hays[scope] = hay
        return hay

    def match_pass(self, state: ScanState) -> list[int]:
        """Scan every key set once; return the indices of entries worth checking, in priority order.

        Plain keys are found segment by segment (each segment's keys remembered by the key set, see
        ``matcher.py``); the whole haystack is built for keys with a line break and for regex keys only."""
        self.over_budget()
        self.state = state
        self.hays.clear()
        self.hay_bytes.clear()
        self.found.clear()
        indices = set(self.lore.always)
        for (scope, mode), keyset in self.lore.keysets.items():
            found: set[str] = set()
            if keyset.keys:
                found = keys_in(keyset, self.segments(scope, state), self.over_budget)
                if keyset.has_spanning:
                    found.update(keyset.spanning(normalise(self.haystack(scope, state), mode[0])))
            self.found[(scope, mode)] = found
            index = self.lore.key_index.get((scope, mode), {})
            for key in found:
                indices.update(index.get(key, ()))
        for ident in self.req.forced | self.sticky:
            ce = self.by_ident.get(ident)
            if ce is not None:
                indices.add(ce.index)
        return sorted(indices)

    def key_hit(self, ce: CompiledEntry, key: Key) -> bool:
        if key.kind == "plain":
            return key.text in self.found[(ce.scope, ce.mode)]
        if key.kind == "always":
            return True
        if key.kind == "regex" and key.regex is not None:
            self.over_budget()
            hay = self.hay_bytes.get(ce.scope)
            if hay is None:
                hay = self.hay_bytes[ce.scope] = haystack_bytes(self.haystack(ce.scope, self.state))
            return key.regex.test(hay)
        return False

    def over_budget(self) -> None:
        if self.req.deadline is not None and self.req.clock() > self.req.deadline:
            raise ScanBudgetExceeded(f"lore scan ran past its budget after {len(self.activated)} activations")

    def check(self, ce: CompiledEntry, state: ScanState, n_pass: int) -> Why | None:
        """Spec §3.3 steps 2-18, in order (step 1 is done by the caller)."""
        e, req = ce.entry, self.req
        if e.disable:
            return None
        if e.triggers and req.trigger not in e.triggers:
            return None
        cf = e.character_filter
        if cf.names and (req.character in cf.names) == cf.is_exclude:
            return None
        tagged = cf.tags and req.character_tags is not None
        if tagged and bool(set(cf.tags) & set(req.character_tags or ())) == cf.is_exclude:
            return None
        sticky = ce.ident in self.sticky
        if delayed(ce, self.n_messages) or (ce.ident in self.cooldown and not sticky):
            return None
        level = e.delay_until_recursion
        if level and not sticky and (state != ScanState.RECURSION or level > self.level):
            return None
        if state == ScanState.RECURSION and self.s.recursive and e.exclude_recursion and not sticky:
            return None
        if ce.decorator == "activate":
            return Why("decorator", scan_pass=n_pass, state=state)
        if ce.decorator == "dont_activate":
            return None
        if ce.ident in req.forced and e.activation_mode != "keyword":
            return Why("vector", scan_pass=n_pass, state=state)
        if e.constant:
            return Why("constant", scan_pass=n_pass, state=state)
        if sticky:
            return Why("sticky", scan_pass=n_pass, state=state)
        if e.activation_mode == "vector" or not ce.primary:
            return None
        primary = next((k for k in ce.primary if self.key_hit(ce, k)), None)
        if primary is None:
            return None
        if not (e.selective and ce.secondary):
            return Why("key", key=primary.raw, scan_pass=n_pass, state=state)
        hits = tuple(k.raw for k in ce.secondary if self.key_hit(ce, k))
        logic, total = e.selective_logic, len(ce.secondary)
        ok = (
            (logic == 0 and len(hits) > 0)
            or (logic == 1 and len(hits) < total)
            or (logic == 2 and not hits)
            or (logic == 3 and len(hits) == total)
        )
        return Why("key", key=primary.raw, secondary=hits, scan_pass=n_pass, state=state) if ok else None

    def score(self, ce: CompiledEntry) -> int:
        """Group scoring: matching primary keys, plus secondary keys for AND_ANY, or all of them for AND_ALL."""
        score = sum(1 for k in ce.primary if self.key_hit(ce, k))
        if ce.entry.selective and ce.secondary:
            hits = sum(1 for k in ce.secondary if self.key_hit(ce, k))
            logic = ce.entry.selective_logic
            if logic == 0 or (logic == 3 and hits == len(ce.secondary)):
                score += hits
        return score

    def tokens(self, ce: CompiledEntry) -> int:
        """Token count of an entry's content, cached on the compiled entry for the default estimator."""
        if self.req.count_tokens is not estimate_tokens:
            return self.req.count_tokens(ce.content)
        if ce.tokens is None:
            ce.tokens = estimate_tokens(ce.content)
        return ce.tokens

    def budget_pass(self, candidates: list[tuple[CompiledEntry, Why]]) -> list[CompiledEntry]:
        """Spec §3.4: probability, then the greedy cut; the first entry over budget ends the pass."""
        ignoring = sum(1 for ce, _ in candidates if ce.entry.ignore_budget)
        accepted: list[CompiledEntry] = []
        for ce, why in candidates:
            e = ce.entry
            if e.ignore_budget:
                ignoring -= 1
            if self.overflowed and not e.ignore_budget:
                if ignoring > 0:
                    continue
                break
            rolls = e.use_probability and e.probability != 100 and why.kind != "sticky"
            if rolls and not self.rng.random() * 100 <= e.probability:
                self.failed.add(ce.ident)
                continue
            tokens = self.tokens(ce)
            if not e.ignore_budget and self.used + tokens >= self.budget:
                self.overflowed = True
                continue
            self.used += tokens
            self.activated[ce.ident] = (ce, why)
            accepted.append(ce)
        return accepted

    def run(self) -> int:
        levels = list(self.lore.delay_levels)
        self.level = levels.pop(0) if levels else 0
        state, n_pass = ScanState.INITIAL, 0
        while state != ScanState.NONE:
            if self.s.max_recursion_steps and n_pass >= self.s.max_recursion_steps:
                break
            n_pass += 1
            candidates: list[tuple[CompiledEntry, Why]] = []
            for index in self.match_pass(state):
                ce = self.lore.entries[index]
                if ce.ident in self.failed or ce.ident in self.activated:
                    continue
                why = self.check(ce, state, n_pass)
                if why is not None:
                    candidates.append((ce, why))
            candidates.sort(key=lambda c: (c[0].ident not in self.sticky, c[0].index))
            kept = filter_groups(
                [ce for ce, _ in candidates],
                self.sticky,
                (ce for ce, _ in self.activated.values()),
                self.s.use_group_scoring,
                self.score,
                self.rng,
            )
            kept_ids = {ce.ident for ce in kept}
            accepted = self.budget_pass([c for c in candidates if c[0].ident in kept_ids])
            recursable = [ce for ce in accepted if not ce.entry.prevent_recursion]
            state = self.next_state(state, recursable, levels)
            if state != ScanState.NONE and recursable:
                self.recurse.append(recursable)
        return n_pass

    def next_state(self, state: ScanState, recursable: list[CompiledEntry], levels: list[int]) -> ScanState:
        s = self.s
        if s.recursive and not self.overflowed and recursable:
            return ScanState.RECURSION
        if s.recursive and not self.overflowed and state == ScanState.MIN_ACTIVATIONS and self.recurse:
            return ScanState.RECURSION
        if s.min_activations > 0 and not self.overflowed and len(self.activated) < s.min_activations:
            depth = s.depth + self.skew
            too_deep = (s.min_activations_depth_max > 0 and depth > s.min_activations_depth_max) or depth > len(
                self.chat
            )
            if not too_deep:
                self.skew += 1
                return ScanState.MIN_ACTIVATIONS
        if levels:
            # SillyTavern runs the remaining delay levels even with recursion off or the budget spent (§9).
            self.level = levels.pop(0)
            return ScanState.RECURSION
        return ScanState.NONE


def activate(lore: CompiledLore, request: ScanRequest) -> ActivationResult:
    """Run one scan. Deterministic: the same lore, request and seed give the same result, unless the request's
    ``deadline`` passes first (then ``ScanBudgetExceeded``, and no result at all)."""
    scan = _Scan(lore, request)
    passes = scan.run()
    activated = list(scan.activated.values())
    placements = place(
        [
            Placed(
                ce.ident,
                ce.entry.order,
                ce.entry.position,
                ce.entry.depth,
                ce.entry.role,
                ce.entry.outlet_name,
                ce.content,
            )
            for ce, _ in activated
        ]
    )
    timed = scan.timed if request.dry_run else set_effects(scan.timed, (ce for ce, _ in activated), scan.n_messages)
    placed_order = [ident for p in placements for ident in p.entries]
    placed_set = set(placed_order)
    order = placed_order + [ce.ident for ce, _ in activated if ce.ident not in placed_set]
    entries = [
        ActivatedEntry(
            ident=ident,
            book_id=scan.activated[ident][0].world,
            entry=scan.activated[ident][0].entry,
            content=scan.activated[ident][0].content,
            why=scan.activated[ident][1],
            tokens=scan.tokens(scan.activated[ident][0]),
            placed=ident in placed_set,
        )
        for ident in order
    ]
    return ActivationResult(
        entries=entries,
        placements=placements,
        timed=timed,
        budget=scan.budget,
        tokens_used=scan.used,
        overflowed=scan.overflowed,
        passes=passes,
    )
