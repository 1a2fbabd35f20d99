"""The pure packing (``packing.py``): reserved offers first, then the scored ones by value per token, never over
the budget, on an additive budget (``Room``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mnemo.services.context_assembler.assemble.packing import Offer, Room, by_density, pack

SLOTS = ("knowledge", "memories", "legacy", "retrieved")


def offer(slot: str, name: str, value: float, cost: int, chain: str | None = None) -> Offer[str]:
    return Offer(slot, name, value, cost, chain)


def names(offers: list[Offer[str]]) -> list[str]:
    return [o.item for o in offers]


def test_a_relevant_turn_beats_an_irrelevant_memory_whatever_the_section():
    memory = offer("memories", "weak summary", 0.15, 120)
    turn = offer("retrieved", "evidence turn", 0.9, 40)
    fact = offer("knowledge", "short fact", 0.4, 10)
    packed = pack([], [memory, turn, fact], Room(60))
    assert names(packed.kept) == ["short fact", "evidence turn"], "best value per token first"


def test_an_item_too_big_is_skipped_and_a_smaller_one_after_it_still_fits():
    big = offer("memories", "big", 0.9, 80)
    small = offer("memories", "small", 0.2, 20)
    assert names(pack([], [big, small], Room(50)).kept) == ["small"]


def test_reserved_offers_go_first_in_order_and_a_chain_stops_at_its_first_miss():
    lore = offer("lore", "constant", 1.0, 30)
    newest = offer("history", "h3", 1.0, 30, chain="history")
    older = offer("history", "h2", 1.0, 5, chain="history")
    scored = offer("retrieved", "r", 1.0, 5)
    packed = pack([lore, newest, older], [scored], Room(40))
    assert names(packed.kept) == ["constant", "r"]
    assert names(packed.missing) == ["h3", "h2"], "h2 would fit, but the history run must stay contiguous"


def test_ties_keep_the_order_given():
    a, b, c = (offer("knowledge", n, 0.5, 10) for n in "abc")
    assert names(by_density([a, b, c])) == ["a", "b", "c"]
    assert names(pack([], [c, a, b], Room(20)).kept) == ["c", "a"]


def test_values_are_clamped_and_a_zero_cost_counts_one_token():
    assert offer("memories", "x", 1.7, 0).density == 1.0
    assert offer("memories", "x", -0.3, 10).density == 0.0


_offers = st.lists(
    st.tuples(st.sampled_from(SLOTS), st.floats(0, 1, allow_nan=False), st.integers(0, 200)), max_size=25
)
_reserved = st.lists(st.tuples(st.integers(0, 150), st.sampled_from([None, "history"])), max_size=8)


@settings(max_examples=300, deadline=None)
@given(reserved=_reserved, competing=_offers, budget=st.integers(0, 1200))
def test_packing_properties(reserved, competing, budget):
    floors = [offer("history" if ch else "lore", f"f{i}", 1.0, cost, ch) for i, (cost, ch) in enumerate(reserved)]
    scored = [offer(slot, f"c{i}", value, cost) for i, (slot, value, cost) in enumerate(competing)]
    packed = pack(floors, scored, Room(budget))
    kept = {o.item for o in packed.kept}
    used = sum(o.cost for o in packed.kept)

    assert used <= budget, "never over budget"
    assert {o.item for o in packed.missing} == {f.item for f in floors} - kept, "every reserved offer is accounted"
    # Floors: each is kept exactly when it fits in the room the floors before it left (and its chain is whole).
    room, broken = budget, False
    for f in floors:
        fits = f.cost <= room and not (f.chain and broken)
        assert (f.item in kept) == fits
        if fits:
            room -= f.cost
        elif f.chain:
            broken = True
    if sum(f.cost for f in floors) <= budget:
        assert all(f.item in kept for f in floors), "floors that fit together are always kept"
    # A higher-density item is never dropped for a lower one of the same section: it could not take its place.
    free = budget - used
    for a in scored:
        for b in scored:
            if a.item not in kept and b.item in kept and a.slot == b.slot and a.density > b.density:
                assert a.cost > b.cost + free
    # Whatever is left out of the scored items did not fit in the room left at the end.
    assert all(o.cost > free for o in scored if o.item not in kept)


@settings(max_examples=100, deadline=None)
@given(competing=_offers, budget=st.integers(0, 1200), seed=st.randoms(use_true_random=False))
def test_the_order_offers_come_in_does_not_change_what_is_packed(competing, budget, seed):
    """Up to ties (equal density and value keep the order given), packing depends on the offers, not their order."""
    scored = [offer(slot, f"c{i}", value, cost) for i, (slot, value, cost) in enumerate(competing)]
    distinct = list({(o.density, o.value): o for o in scored}.values())
    shuffled = list(distinct)
    seed.shuffle(shuffled)
    assert {o.item for o in pack([], distinct, Room(budget)).kept} == {
        o.item for o in pack([], shuffled, Room(budget)).kept
    }
