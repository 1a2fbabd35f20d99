"""Uploaded documents are stored sealed under their owner's data key (issue 28, item 8): a platform's own upload
is sealed in place by its import, an inline one before it is stored; importing the same object again is still
the same import; once the owner's key is destroyed the stored bytes cannot be opened by anyone."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.services.lore.documents.stored import StoredUploads
from mnemo.shared import sealed, subjects
from mnemo.shared.aggregates.documents import inline_object_name
from mnemo.shared.crypto import KeyErased
from tests.integration.ingest_stack import Stack
from tests.integration.test_documents import OWNER, ended, import_body, inline, stack
from tests.integration.test_lore import call, seed

__all__ = ["stack"]  # the fixture, shared with the documents suite

TIDES = b"# Tides\n\nThe drowned bell of Varnholt rings only at the lowest tide.\n"
BELLS = b"# Bells\n\nBronze bells ring in the fog above the harbour of Varnholt.\n"


async def test_stored_uploads_are_sealed_and_shredded_with_their_owner(
    stack: Stack, tenant: str, tmp_path: Path
) -> None:
    await seed(stack, tenant)
    obs = await stack.js.object_store(subjects.UPLOADS_BUCKET)
    uploaded = f"{tenant}/uploads/tides.md"
    await obs.put(uploaded, TIDES)
    first = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "tides.md", object=uploaded))
    bells = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT,
                       import_body(tenant, "bells.md", data_base64=inline(BELLS)))  # fmt: skip
    assert (await ended(stack.nc, tenant, first["document_id"]))["status"] == "completed"
    assert (await ended(stack.nc, tenant, bells["document_id"]))["status"] == "completed"
    again = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "tides.md", object=uploaded))

    assert again == first, "the sealed object keeps its plain digest: the same upload is the same import"
    stored = {
        uploaded: (await obs.get(uploaded)).data or b"",
        "inline": (await obs.get(inline_object_name(tenant, bells["document_id"], 1))).data or b"",
    }
    for name, data in stored.items():
        assert sealed.is_sealed(data), name
        assert b"drowned bell" not in data, name
        assert b"Bronze bells" not in data, name

    await stack.deps.cipher.erase(tenant, OWNER)
    reader = StoredUploads(lambda: stack.js.object_store(subjects.UPLOADS_BUCKET), stack.deps.cipher)
    with pytest.raises(KeyErased):
        await reader.fetch(uploaded, tenant, OWNER, tmp_path / "tides.md")
