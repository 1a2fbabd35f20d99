"""Vector activation of lore entries, the pure part: which books take part, the query, the best entries.

``LoreLoader.similar`` (``lore.py``) embeds the query and searches the ``lore_entry`` points of the
attached books; these decide what it searches with and what it forces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mnemo.services.context_assembler.items import ChatLine
from mnemo.shared.lore.model import Lorebook
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import ScoredPoint


def has_vector_entries(book: Lorebook) -> bool:
    return any(e.activation_mode != "keyword" and not e.disable and e.content.strip() for e in book.entries)


def vector_query(history: Sequence[ChatLine], user_message: str, n_messages: int) -> str:
    """The user_message and the last ``n_messages`` messages, newest first (the embedder truncates the end)."""
    texts = [user_message] if user_message.strip() else []
    recent = [h.content for h in history if h.content.strip()][-n_messages:] if n_messages else []
    return "\n".join([*texts, *reversed(recent)])


def best_entries(
    points: Sequence[ScoredPoint], compiled_ids: Mapping[str, str], limit: int, threshold: float
) -> dict[str, float]:
    """Best chunk per entry, the ``limit`` best entries at or above ``threshold``, keyed by engine ident.
    Points of books not in ``compiled_ids`` are ignored (the filter already excludes them)."""
    best: dict[str, float] = {}
    for p in points:
        compiled = compiled_ids.get(str(p.payload.get(vp.LOREBOOK_ID)))
        uid = p.payload.get(vp.UID)
        if compiled is None or not isinstance(uid, int) or p.score < threshold:
            continue
        ident = f"{compiled}.{uid}"
        best[ident] = max(best.get(ident, p.score), p.score)
    top = sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]
    return dict(top)
