"""Exporting what mnemo holds about a user, decrypted, as plain JSON (``export_user``, ``mnemo export-user``).

The export reads the current state: the read models of the user's messages, summaries, facts (per character),
legacy memories, owned lorebooks, personas, uploaded documents and the memories they own (the memory API's). Every read-model document is encrypted field by field with its
``_id`` as the record (``mnemo/shared/readmodels``), so one generic opener decrypts them all without knowing each
model. Internal fields (versions, status keys) are dropped; ``id`` replaces ``_id``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic_core import to_jsonable_python

from mnemo.shared.crypto import FieldCipher, KeyErased, token_key_id
from mnemo.shared.readmodels.documents import DOCUMENTS
from mnemo.shared.readmodels.knowledge import COLLECTION as FACTS
from mnemo.shared.readmodels.legacy_lore import COLLECTION as LEGACY
from mnemo.shared.readmodels.lore import LOREBOOKS
from mnemo.shared.readmodels.memories import COLLECTION as MEMORIES
from mnemo.shared.readmodels.repository import MESSAGES, PERSONAS
from mnemo.shared.readmodels.rows import OwnerField, Row, TenantRows
from mnemo.shared.readmodels.summaries import COLLECTION as SUMMARIES
from mnemo_client.wire.privacy_contract import ExportUserReply, ExportUserRequest

Progress = Callable[[str, int], None]
_INTERNAL = frozenset({"_id", "tenant_id", "version", "scope_version", "source_keys", "event_id", "causation_id"})


class Exporter:
    def __init__(self, rows: TenantRows, cipher: FieldCipher) -> None:
        self._rows, self._cipher = rows, cipher

    async def export_user(self, req: ExportUserRequest, progress: Progress | None = None) -> ExportUserReply:
        t, u = req.tenant_id, req.user_id

        async def read(collection: str, label: str, by: OwnerField = "user_id") -> list[dict[str, Any]]:
            return await self._read(self._rows.owned(collection, t, u, by=by), label, progress)

        messages = await read(MESSAGES, "messages")
        summaries = await read(SUMMARIES, "summaries")
        conversations: dict[str, dict[str, Any]] = {}
        for kind, docs in (("messages", messages), ("summaries", summaries)):
            for doc in docs:
                conv = conversations.setdefault(
                    str(doc.get("conversation_id")),
                    {"conversation_id": doc.get("conversation_id"), "messages": [], "summaries": []},
                )
                conv[kind].append(doc)
        for conv in conversations.values():
            conv["messages"].sort(key=lambda m: m.get("index", 0))
            conv["summaries"].sort(key=lambda s: s.get("first_index", 0))
        facts: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for fact in await read(FACTS, "facts"):
            facts[str(fact.get("character_id"))].append(fact)
        return ExportUserReply(
            tenant_id=t,
            user_id=u,
            conversations=[conversations[k] for k in sorted(conversations)],
            facts=dict(facts),
            legacy_memories=await read(LEGACY, "legacy_memories"),
            lorebooks=await read(LOREBOOKS, "lorebooks", "owner_user_id"),
            personas=await read(PERSONAS, "personas"),
            documents=await read(DOCUMENTS, "documents", "owner_user_id"),
            memories=await read(MEMORIES, "memories"),
        )

    async def _read(self, rows: AsyncIterator[Row], label: str, progress: Progress | None) -> list[dict[str, Any]]:
        out = []
        async for doc in rows:
            try:
                out.append(await self._open(doc))
            except (
                KeyErased
            ):  # a row of an erasure's key cache window: gone by design (mnemo/shared/readmodels/erased.py)
                continue
            if progress is not None and len(out) % 500 == 0:
                progress(label, len(out))
        if progress is not None:
            progress(label, len(out))
        return out

    async def _open(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The document with every encrypted field decrypted (record: its ``_id``), as JSON types."""
        cipher = await self._cipher.for_tenant(str(doc["tenant_id"]), reading=(doc,))
        plain = {k: cipher.decrypt(str(doc["_id"]), k, v) if token_key_id(v) is not None else v for k, v in doc.items()}
        out = {"id": str(doc["_id"]), **{k: v for k, v in plain.items() if k not in _INTERNAL}}
        return dict(to_jsonable_python(out))
