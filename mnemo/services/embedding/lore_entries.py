"""Lore entries' points (kind ``lore_entry``), for vector and hybrid activation (pure).

Lorebook events (``lorebook.imported``, ``.created``, ``.entry_created``, ``.entry_updated``,
``.entry_deleted``, ``.deleted``) delete the touched entries' points, then index again the entries in
``vector`` or ``hybrid`` mode, enabled and not empty, FROM THE BOOK'S CURRENT STATE in the lore read model
(see :func:`plan_lore`), chunked by :func:`lore_chunks`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mnemo.services.embedding.chunking import LORE_MAX_TOKENS, LORE_OVERLAP_TOKENS, chunk_strings
from mnemo.services.embedding.plan import PendingPoint, Plan
from mnemo.shared.aggregates.lorebook import BookState
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import (
    LOREBOOK_CREATED,
    LOREBOOK_DELETED,
    LOREBOOK_ENTRY_CREATED,
    LOREBOOK_ENTRY_DELETED,
    LOREBOOK_ENTRY_UPDATED,
    LOREBOOK_IMPORTED,
)
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import PayloadValue

LORE_VECTOR_EVENTS = frozenset(
    {
        LOREBOOK_IMPORTED.name,
        LOREBOOK_CREATED.name,
        LOREBOOK_ENTRY_CREATED.name,
        LOREBOOK_ENTRY_UPDATED.name,
        LOREBOOK_ENTRY_DELETED.name,
        LOREBOOK_DELETED.name,
    }
)
_WHOLE_BOOK = frozenset({LOREBOOK_IMPORTED.name, LOREBOOK_CREATED.name, LOREBOOK_DELETED.name})


def lore_chunks(text: str) -> list[str]:
    """Paragraphs first, then sentences, then a word window (``mnemo.services.embedding.chunking``), ~750 tokens, 50 overlap."""
    return chunk_strings(text, LORE_MAX_TOKENS, LORE_OVERLAP_TOKENS)


def lore_touched(envelopes: Iterable[EventEnvelope]) -> dict[tuple[str, str], set[int] | None]:
    """Per (tenant, book): the entry uids whose vectors a batch may change, or None for the whole book."""
    touched: dict[tuple[str, str], set[int] | None] = {}
    for env in envelopes:
        if env.type not in LORE_VECTOR_EVENTS:
            continue
        key = (env.tenant_id, str(env.payload["lorebook_id"]))
        if env.type in _WHOLE_BOOK:
            touched[key] = None
        elif (uids := touched.setdefault(key, set())) is not None:
            uids.add(int(str(env.payload["uid"])))
    return touched


def lore_points(state: BookState, uids: set[int] | None, model: str) -> list[PendingPoint]:
    """The points of the book's current vector/hybrid entries among ``uids`` (all with None)."""
    points: list[PendingPoint] = []
    for entry in state.book.entries:
        if uids is not None and entry.uid not in uids:
            continue
        if entry.activation_mode == "keyword" or entry.disable or not entry.content.strip():
            continue
        source_id = vp.lore_source_id(state.lorebook_id, entry.uid)
        payload: dict[str, PayloadValue] = {
            vp.TENANT_ID: state.tenant_id,
            vp.KIND: vp.LORE_ENTRY,
            vp.LOREBOOK_ID: state.lorebook_id,
            vp.UID: entry.uid,
            vp.SOURCE_ID: source_id,
            vp.MODEL: model,
        }
        for i, text in enumerate(lore_chunks(entry.content)):
            pid = vp.point_id(vp.LORE_ENTRY, state.tenant_id, "", "", source_id, i)
            points.append(PendingPoint(pid, text, payload | {vp.CHUNK: i}))
    return points


def plan_lore(
    envelopes: Sequence[EventEnvelope],
    plan: Plan,
    *,
    model: str,
    books: Mapping[tuple[str, str], BookState | None],
) -> None:
    """Add the lore deletions and points to ``plan``. ``books``: the current state of each touched book (from
    the lore read model, which the lore service writes before it publishes); the points come from it, not
    from the events, so a late redelivery re-indexes the entry as it is now (or not at all when it is gone):
    an old text can never come back, and a deleted entry or book never does."""
    for (tenant_id, lorebook_id), uids in lore_touched(envelopes).items():
        plan.deletions.append(vp.lore_entries_by_uid(tenant_id, lorebook_id, uids))
        state = books.get((tenant_id, lorebook_id))
        if state is not None and not state.deleted:
            plan.points.extend(lore_points(state, uids, model))
