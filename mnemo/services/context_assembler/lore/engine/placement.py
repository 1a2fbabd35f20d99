"""Prompt placement of activated entries (spec §4), as structured output for the context assembler.

Within a position every list ends up in ascending `order` (a higher order sits nearer the chat): SillyTavern
sorts the activated entries by `order` descending and pushes each to the front of its list, so equal orders come
out in reverse activation order. Outlets are built with push and so come out in descending order (a quirk kept,
since `{{outlet::Name}}` users see it). Empty contents are dropped here though they were activated and budgeted;
invalid positions are inserted nowhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.shared.lore.model import Position


@dataclass(frozen=True)
class Placed:
    ident: str
    order: int | float
    position: int
    depth: int
    role: int
    outlet_name: str
    content: str


@dataclass(frozen=True)
class Placement:
    """One block of the prompt: a position, plus depth and role for at-depth, or the outlet name."""

    position: Position
    depth: int | None
    role: int | None
    outlet_name: str | None
    entries: list[str]  # idents in insertion order
    content: str  # contents joined with "\n"


def place(activated: list[Placed]) -> list[Placement]:
    by_order = sorted(activated, key=lambda p: -p.order)  # stable: ties keep activation order
    blocks: dict[tuple[int, int | None, int | None, str | None], list[Placed]] = {}
    for item in by_order:
        if not item.content or item.position not in _VALID:
            continue
        if item.position == Position.OUTLET:
            if not item.outlet_name:
                continue
            blocks.setdefault((7, None, None, item.outlet_name), []).append(item)
            continue
        if item.position == Position.AT_DEPTH:
            key: tuple[int, int | None, int | None, str | None] = (4, item.depth, item.role, None)
        else:
            key = (item.position, None, None, None)
        blocks.setdefault(key, []).insert(0, item)
    out = []
    for (position, depth, role, outlet), items in sorted(blocks.items(), key=_block_sort):
        out.append(
            Placement(
                position=Position(position),
                depth=depth,
                role=role,
                outlet_name=outlet,
                entries=[i.ident for i in items],
                content="\n".join(i.content for i in items),
            )
        )
    return out


_VALID = frozenset(p.value for p in Position)


def _block_sort(item: tuple[tuple[int, int | None, int | None, str | None], list[Placed]]) -> tuple[object, ...]:
    (position, depth, role, outlet), _ = item
    # Position blocks in prompt order; at-depth groups deepest first (further from the end of the chat).
    return (position, -(depth or 0), role or 0, outlet or "")
