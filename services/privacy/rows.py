"""Which MongoDB documents belong to a user or a tenant, found the same way in every read model.

Why by shape rather than a list of read models: the privacy service may not import other services (their read
models live there: ``witnessed``, ``lore_timed``), and a read model added later must not escape erasure. Every
read-model document of mnemo carries ``tenant_id`` and, when a user owns it, ``user_id`` or ``owner_user_id``;
documents keyed by a user's stream id (``conversation/<tenant>/<user>/...``) are matched by their ``_id`` too,
and a user's lorebooks take their attachments along (``lorebook_id``). The event log, the key store and the
relay's bookkeeping are not read models: the log is crypto-shredded instead (its events stay, unreadable).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from shared.readmodels.repository import BOTS

#: Not read models (the log and its outbox, the keys and their tombstones).
NOT_READ_MODELS = frozenset({"events", "relay_intents", "relay_receipts", "relay_state", "tenant_keys", "erased_keys"})
#: Characters belong to the platform's catalog, not to the user who created them: erasing a user keeps them
#: (their text is under the tenant's key); erasing the tenant deletes them.
KEPT_ON_USER_ERASURE = frozenset({BOTS})
#: Stream kinds whose id continues with the owning user (``shared/events/recorded``).
USER_STREAM_KINDS = ("conversation", "persona", "summaries", "legacy_lore", "lore_timed")


def _stream_prefix(kinds: Sequence[str], *parts: str) -> dict[str, Any]:
    quoted = "/".join(re.escape(quote(p, safe="")) for p in parts)
    return {"_id": {"$regex": f"^({'|'.join(kinds)})/{quoted}(/|$)"}}


def user_rows(tenant_id: str, user_id: str, lorebook_ids: Sequence[str]) -> dict[str, Any]:
    """The query matching every read-model document of the user (and of the books they own)."""
    return {
        "$or": [
            {"tenant_id": tenant_id, "user_id": user_id},
            {"tenant_id": tenant_id, "owner_user_id": user_id},
            {"tenant_id": tenant_id, "lorebook_id": {"$in": list(lorebook_ids)}},
            _stream_prefix(USER_STREAM_KINDS, tenant_id, user_id),
        ]
    }


def tenant_rows(tenant_id: str) -> dict[str, Any]:
    return {"$or": [{"tenant_id": tenant_id}, _stream_prefix([r"[a-z_]+"], tenant_id)]}


def read_model_collections(names: Sequence[str], *, user: bool) -> list[str]:
    skip = NOT_READ_MODELS | (KEPT_ON_USER_ERASURE if user else frozenset())
    return sorted(n for n in names if n not in skip and not n.startswith("system."))
