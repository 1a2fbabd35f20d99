"""Random rows of every source the usage report's memory growth counts (``mnemo/shared/readmodels/usage_counts.py``)
for one tenant, on random days in and before a window, some of them dead (deleted, retired), with what the growth
must count of them: what the tenant holds per (source, type), and what was added per (source, type, day)."""

from __future__ import annotations

import random
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

from mnemo.shared.readmodels import documents
from mnemo.shared.readmodels.usage_counts import SOURCES

UNTIL = date(2026, 11, 20)
DAYS = 7
TYPES = {"memory": ["short_term", "long_term", "consolidated"], "knowledge": ["episodic", "semantic"],
         "remembered": ["episodic", "procedural"], "message": ["message"], "legacy_lore": ["legacy_memory"]}  # fmt: skip
DEAD = {"message": {"deleted": True}, "memory": {"status": "deleted"}, "legacy_lore": {"deleted": True},
        "knowledge": {"status": "retired"}}  # fmt: skip
LIVE = {"message": {"deleted": False}, "memory": {"status": "active", "text": "x"}, "legacy_lore": {"deleted": False},
        "knowledge": {"status": "active"}, "remembered": {}}  # fmt: skip


@dataclass
class Grown:
    rows: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # collection -> its rows
    held: Counter[tuple[str, str]] = field(default_factory=Counter)
    added: Counter[tuple[str, str, date]] = field(default_factory=Counter)


def _when(rng: random.Random) -> datetime:
    """A time inside the window, or a few days before it."""
    return datetime.combine(UNTIL, datetime.min.time(), UTC) - timedelta(hours=rng.randint(0, 24 * (DAYS + 3)) - 23)


def grown(rng: random.Random, tenant: str) -> Grown:
    made = Grown()
    first = UNTIL - timedelta(days=DAYS - 1)
    for src in SOURCES:
        for _ in range(rng.randint(0, 6)):
            kind, at = rng.choice(TYPES[src.source]), _when(rng)
            dead = src.source in DEAD and rng.random() < 0.2
            row = {
                "_id": uuid.uuid4().hex,
                "tenant_id": tenant,
                src.made_at: at,
                **(DEAD if dead else LIVE)[src.source],
            }
            if src.type_field:
                row[src.type_field] = kind
            made.rows.setdefault(src.collection, []).append(row)
            if not dead:
                made.held[(src.source, kind)] += 1
                if first <= at.date() <= UNTIL:
                    made.added[(src.source, kind, at.date())] += 1
    for _ in range(rng.randint(0, 3)):  # documents: their chunks count on the day the import completed
        chunks, at, status = rng.randint(1, 4), _when(rng), rng.choice(["completed", "completed", "processing"])
        doc = {"_id": uuid.uuid4().hex, "tenant_id": tenant, "status": status, "deleted": False, "updated_at": at}
        made.rows.setdefault(documents.DOCUMENTS, []).append({**doc, "chunks": chunks})
        made.rows.setdefault(documents.CHUNKS, []).extend(
            {"_id": uuid.uuid4().hex, "tenant_id": tenant} for _ in range(chunks)
        )
        made.held[("document_chunk", "document_chunk")] += chunks
        if status == "completed" and first <= at.date() <= UNTIL:
            made.added[("document_chunk", "document_chunk", at.date())] += chunks
    return made


def counted(growth: list[Any]) -> tuple[dict[tuple[str, str], int], dict[tuple[str, str, date], int]]:
    """A growth report (``MemoryTypeGrowth`` rows) as (held, added), to compare with a :class:`Grown`'s."""
    held = {(g.source, g.type): g.held for g in growth}
    return held, {(g.source, g.type, d.day): d.added for g in growth for d in g.added}
