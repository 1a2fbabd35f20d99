"""Pure helpers of ``make bench-context`` (no I/O): the lorebook, the user messages, the bulk-loaded history.

- :func:`lorebook_of_size`: a real SillyTavern World Info file (read by the caller) grown to ``size`` entries by
  varied copies of its own entries (new uid, keys and content suffixed ``" (variant N)"``), so the book keeps
  its real keys, contents, constants and settings and only the tail is derived; :func:`lorebook_parts` cuts it
  into smaller files if needed (see there).
- :func:`user_messages`: the requests' ``user_message`` values, a shuffled mix of real questions about the
  chats (REALTALK ``qa``) and short lines naming lorebook keys (so keyword activation has work to do).
- :func:`perturb`: a pool embedding moved by a small random step and renormalised (cosine about 0.98 to the
  original at the default sigma), so bulk points that reuse one pool text are near, not equal, neighbours.
- :func:`bulk_envelopes`: ``message.recorded`` envelopes of one synthetic conversation, exactly as ingest
  would have recorded them (gapless versions on the conversation stream, indexes from 0, token estimates),
  for the read models' and the embedding plan's own apply functions.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.shared.events.envelope import EventEnvelope, deterministic_id
from mnemo.shared.events.recorded import MESSAGE_RECORDED, MessageRecorded, conversation_stream
from mnemo.shared.tokens import estimate_tokens

LORE_TEMPLATES = (
    "Have you ever seen a {a} up close?",
    "Tell me everything you know about {a}.",
    "I heard the {a} was spotted near the {b} last night, should we go?",
    "What's the difference between {a} and {b}?",
    "Let's talk about {a} for a moment, I'm curious.",
    "My friend says {a} is dangerous. Is that true?",
)


def lorebook_of_size(world_info: dict[str, Any], size: int) -> dict[str, Any]:
    """``{"entries": {...}}`` with exactly ``size`` entries: the file's entries (the first ``size`` if it has
    more), then varied copies of them in order. Other top-level fields (e.g. ``originalData``) are dropped:
    the importer reads the entries, and the file must fit in one NATS message."""
    originals = list(world_info["entries"].values())
    if not originals:
        raise ValueError("the lorebook has no entries")
    entries: dict[str, Any] = {}
    for i in range(size):
        entry = copy.deepcopy(originals[i % len(originals)])
        variant = i // len(originals)
        if variant:
            suffix = f" (variant {variant})"
            entry["key"] = [f"{k}{suffix}" for k in entry.get("key") or []]
            entry["content"] = f"{entry.get('content', '')}{suffix}"
            entry["comment"] = f"{entry.get('comment', '')}{suffix}"
        entry["uid"] = i
        entry["displayIndex"] = i
        entries[str(i)] = entry
    return {"entries": entries}


def lorebook_parts(world_info: dict[str, Any], parts: int) -> list[dict[str, Any]]:
    """The entries split into ``parts`` World Info files of consecutive entries (uids kept), every entry in
    exactly one part. For a server with NATS's default 1 MB max payload: the lore service logs an import as
    ONE ``lorebook.imported`` event (normalised book + original file), about 1.5 MB for 400 real entries;
    parts attached to the same bot give the assembler the same entries."""
    if parts < 1:
        raise ValueError("parts must be at least 1")
    items = list(world_info["entries"].items())
    size = -(-len(items) // parts)
    return [{"entries": dict(items[i : i + size])} for i in range(0, len(items), size)]


def lore_keys(world_info: dict[str, Any]) -> list[str]:
    """The primary keys of the enabled entries that are not constant (those that need a keyword)."""
    keys = [
        str(k)
        for e in world_info["entries"].values()
        if not e.get("constant") and not e.get("disable")
        for k in e.get("key") or []
        if str(k).strip()
    ]
    return list(dict.fromkeys(keys))


def user_messages(questions: Sequence[str], keys: Sequence[str], n: int, rng: random.Random) -> list[str]:
    """``n`` messages: real questions and lore-key lines in turn, shuffled; no two consecutive ones equal."""
    if n <= 0:
        return []
    if not questions and not keys:
        raise ValueError("need questions or lore keys to build user messages")
    out: list[str] = []
    q = list(questions)
    rng.shuffle(q)
    for i in range(n):
        if keys and (not q or i % 2 == 1):
            a, b = rng.choice(keys), rng.choice(keys)
            out.append(rng.choice(LORE_TEMPLATES).format(a=a, b=b))
        else:
            out.append(q[(i // 2) % len(q)])
    rng.shuffle(out)
    return out


def perturb(vector: npt.NDArray[np.float32], rng: np.random.Generator, sigma: float) -> npt.NDArray[np.float32]:
    """``vector`` plus Gaussian noise of ``sigma`` per dimension, back to unit length (cosine space)."""
    moved = vector + rng.normal(0.0, sigma, size=vector.shape).astype(np.float32)
    norm = float(np.linalg.norm(moved))
    return (moved / norm).astype(np.float32) if norm > 0 else vector


def bulk_envelopes(
    tenant_id: str,
    user_id: str,
    conversation_id: str,
    bot_id: str,
    persona_id: str,
    texts: Sequence[str],
    start: datetime,
    *,
    user_name: str = "User",
    bot_name: str = "Bot",
) -> list[EventEnvelope]:
    """One conversation: ``texts`` alternate user / bot turns, one minute apart from ``start``.

    Message ids are ``b<index>``; event ids are deterministic, so a second load of the same conversation
    produces the same events (and the read models ignore it)."""
    stream = conversation_stream(tenant_id, user_id, conversation_id)
    now = datetime.now(UTC)
    out = []
    for i, text in enumerate(texts):
        is_user = i % 2 == 0
        when = start + timedelta(minutes=i)
        payload = MessageRecorded(
            user_id=user_id,
            conversation_id=conversation_id,
            message_id=f"b{i}",
            role="user" if is_user else "assistant",
            author_id=persona_id if is_user else bot_id,
            author_name=user_name if is_user else bot_name,
            content=text,
            created_at=when,
            bot_ids=[bot_id],
            persona_id=persona_id,
            index=i,
            tokens=estimate_tokens(text),
        )
        out.append(
            EventEnvelope(
                event_id=deterministic_id("bench-context", stream, str(i)),
                type=MESSAGE_RECORDED.name,
                schema_version=MESSAGE_RECORDED.schema_version,
                stream_id=stream,
                version=i + 1,
                tenant_id=tenant_id,
                occurred_at=when,
                recorded_at=now,
                payload=payload.model_dump(mode="json"),
            )
        )
    return out
