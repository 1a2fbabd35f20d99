"""Which MongoDB documents belong to a user or a tenant, found the same way in every read model.

Why by shape rather than a list of read models: the privacy service may not import other services (their read
models live there: ``witnessed``, ``lore_timed``), and a read model added later must not escape erasure. Every
read-model document of mnemo carries ``tenant_id`` and, when a user owns it, ``user_id`` or ``owner_user_id``;
documents keyed by a user's stream id (``conversation/<tenant>/<user>/...``) are matched by their ``_id`` too,
and a user's lorebooks take their attachments along (``lorebook_id``). The event log, the key store and the
relay's bookkeeping are not read models: the log is crypto-shredded instead (its events stay, unreadable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.events.envelope import stream_id
from shared.readmodels.repository import BOTS

#: Not read models (the log and its outbox, the keys and their tombstones).
NOT_READ_MODELS = frozenset({"events", "relay_intents", "relay_receipts", "relay_state", "tenant_keys", "erased_keys"})
#: Characters belong to the platform's catalog, not to the user who created them: erasing a user keeps them
#: (their text is under the tenant's key); erasing the tenant deletes them.
KEPT_ON_USER_ERASURE = frozenset({BOTS})
#: Every stream kind (``shared/events/recorded``; a unit test keeps the list whole), and those whose id
#: continues with the owning user.
STREAM_KINDS = (
    "bot", "conversation", "document", "knowledge", "legacy_lore", "lore_timed", "lorebook", "message", "persona",
    "privacy", "summaries",
)  # fmt: skip
USER_STREAM_KINDS = ("conversation", "message", "persona", "summaries", "legacy_lore", "lore_timed")


def _under(kind: str, *parts: str) -> list[dict[str, Any]]:
    """The documents whose ``_id`` is the stream ``kind/parts...`` or starts with it and a ``/``: the id itself
    and a range, both served by the ``_id`` index (an ``_id`` regex with alternatives made every erasure read
    each collection whole: found by the 100,000-case fuzz run)."""
    base = stream_id(kind, *parts)
    return [{"_id": base}, {"_id": {"$gte": f"{base}/", "$lt": f"{base}0"}}]  # "0" is the character after "/"


def user_rows(tenant_id: str, user_id: str, lorebook_ids: Sequence[str]) -> list[dict[str, Any]]:
    """The queries that together match every read-model document of the user (and of the books they own);
    erasure deletes with each in turn, so that each can use an index."""
    queries: list[dict[str, Any]] = [
        {"tenant_id": tenant_id, "user_id": user_id},
        {"tenant_id": tenant_id, "owner_user_id": user_id},
    ]
    if lorebook_ids:
        queries.append({"tenant_id": tenant_id, "lorebook_id": {"$in": list(lorebook_ids)}})
    return queries + [q for kind in USER_STREAM_KINDS for q in _under(kind, tenant_id, user_id)]


def tenant_rows(tenant_id: str) -> list[dict[str, Any]]:
    return [{"tenant_id": tenant_id}, *(q for kind in STREAM_KINDS for q in _under(kind, tenant_id))]


def read_model_collections(names: Sequence[str], *, user: bool) -> list[str]:
    skip = NOT_READ_MODELS | (KEPT_ON_USER_ERASURE if user else frozenset())
    return sorted(n for n in names if n not in skip and not n.startswith("system."))
