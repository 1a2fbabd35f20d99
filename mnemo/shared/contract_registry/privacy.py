"""Privacy: erase a user or a tenant (crypto-shredding), export what mnemo holds about a user (docs/privacy.md)."""

from __future__ import annotations

from mnemo.shared import subjects
from mnemo.shared.contract_registry.operation import Operation, rpc
from mnemo_client.wire import privacy_contract as pc

_ERRORS = ("bad_request", "rate_limited", "internal")
_ERASED = {"erasure_id": "...", "keys_destroyed": 1, "deleted": {"messages": 12, "stream_messages": 12}}

OPERATIONS: tuple[Operation, ...] = (
    # --- privacy ----------------------------------------------------------------------------------------------
    rpc(
        "privacy.erase_user",
        subjects.PRIVACY_ERASE_USER,
        pc.EraseUserRequest,
        pc.ErasureReply,
        "privacy",
        "Erase a user: their data keys are destroyed, their rows, facts, vectors and stream messages deleted.",
        {"tenant_id": "t1", "user_id": "u1"},
        _ERASED,
        errors=_ERRORS,
    ),
    rpc(
        "privacy.erase_tenant",
        subjects.PRIVACY_ERASE_TENANT,
        pc.EraseTenantRequest,
        pc.ErasureReply,
        "privacy",
        "Erase a whole tenant (every user, bot and book); `confirm` must be `erase`.",
        {"tenant_id": "t1", "confirm": "erase"},
        _ERASED,
        errors=_ERRORS,
    ),
    rpc(
        "privacy.export_user",
        subjects.PRIVACY_EXPORT_USER,
        pc.ExportUserRequest,
        pc.ExportUserReply,
        "privacy",
        "Everything mnemo holds about a user, decrypted, as plain JSON (large users: `mnemo export-user`).",
        {"tenant_id": "t1", "user_id": "u1"},
        {
            "tenant_id": "t1",
            "user_id": "u1",
            "conversations": [],
            "facts": {},
            "legacy_memories": [],
            "lorebooks": [],
            "personas": [],
        },
        errors=_ERRORS,
    ),
)
