"""Lore management and vector activation over real NATS, SecantusDB and Qdrant Edge with the bundled model.

The lore service and the context-assembler run as routers on one broker; the embedding handler projects the
log (as its consumer would, and as ``mnemo replay`` does) between steps, so each step's vectors are known to
be written before the context is asked for.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.shared import subjects
from mnemo.shared.aggregates.lorebook import deciders
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import utcnow
from mnemo.shared.events.recorded import lorebook_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import LORE, drop
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.vectors.edge import EdgeVectorIndex
from mnemo.shared.vectors.port import ScoredPoint, VectorFilter, VectorQuery
from mnemo_client.wire.lore_contract import LoreEntryUpdateRequest
from tests.integration.ingest_stack import Stack, running
from tests.integration.test_lore import BOT, CONV, OTHER_BOT, USER, call, routers, seed

pytestmark = pytest.mark.integration

OWNER = "creator-1"
REEF = "The coral reef beneath the station glows blue at night, lit by bioluminescent plankton that rise with the tide."
REACTOR = "The station's reactor runs on geothermal vents deep below the seabed, with batteries for storms."
ASK_REEF = "Why does the water under the base shine in the dark?"
ASK_POWER = "How is the outpost powered when the sun is gone?"


async def project(stack: Stack, index: EdgeVectorIndex, embedder: BundledEmbedder) -> None:
    """Project the whole log into the vectors, as the embedding consumer does live."""
    lore = LoreReadModel(stack.db, stack.deps.cipher)
    handler = EmbeddingHandler(index, embedder, ReadModels(stack.db, stack.deps.cipher), chunk_strings, lore=lore)
    await handler.project([e async for e in stack.store.read_all()])


async def lore_points(index: EdgeVectorIndex, embedder: BundledEmbedder, tenant: str) -> list[ScoredPoint]:
    [vector] = await embedder.embed(["anything"])
    return await index.search(
        VectorQuery.dense(vector, VectorFilter.where(tenant_id=tenant, kind="lore_entry"), limit=100)
    )


def ask(tenant: str, message: str, bot: str = BOT) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV, "bot_id": bot, "persona_id": None,
            "user_message": message, "max_tokens": 3000}  # fmt: skip


def lore_details(reply: dict[str, Any]) -> dict[str, str]:
    assert "error" not in reply, reply
    return {s["id"]: s["detail"] for s in reply["sources"] if s["kind"] == "lore"}


def mine(tenant: str, book_id: str, **fields: Any) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": OWNER, "lorebook_id": book_id, **fields}


async def make_book(stack: Stack, tenant: str, entries: Sequence[dict[str, Any]]) -> str:
    created = await call(
        stack.nc,
        subjects.LORE_BOOK_CREATE,
        {"tenant_id": tenant, "owner_user_id": OWNER, "name": "Reef station", "attach_to_bots": [BOT]},
    )
    for entry in entries:
        reply = await call(stack.nc, subjects.LORE_ENTRY_CREATE, mine(tenant, created["lorebook_id"], entry=entry))
        assert reply["changed"], reply
    return str(created["lorebook_id"])


async def test_manage_a_book_owner_only_and_rebuild_it_from_the_log(nats_url, mongo_url, db_name, tenant):
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        await seed(stack, tenant)
        book_id = await make_book(stack, tenant, [{"key": ["Research Labs"], "content": "Labs: marine, geology."}])
        nc = stack.nc
        again = await call(
            nc, subjects.LORE_BOOK_CREATE, {"tenant_id": tenant, "owner_user_id": OWNER, "name": "Reef station"}
        )
        second = await call(
            nc, subjects.LORE_ENTRY_CREATE, mine(tenant, book_id, entry={"content": "Docks.", "uid": 5})
        )
        retry = await call(nc, subjects.LORE_ENTRY_CREATE, mine(tenant, book_id, entry={"content": "Docks.", "uid": 5}))
        taken = await call(nc, subjects.LORE_ENTRY_CREATE, mine(tenant, book_id, entry={"content": "X", "uid": 5}))
        bad = await call(nc, subjects.LORE_ENTRY_CREATE, mine(tenant, book_id, entry={"activationMode": "psychic"}))
        stranger = {**mine(tenant, book_id, uid=0, changes={"content": "hijacked"}), "user_id": "someone-else"}
        not_owner = await call(nc, subjects.LORE_ENTRY_UPDATE, stranger)
        other_tenant = await call(nc, subjects.LORE_ENTRY_UPDATE, {**stranger, "user_id": OWNER, "tenant_id": "t-x"})
        garbage = await call(nc, subjects.LORE_ENTRY_UPDATE, b"{nope")
        updated = await call(
            nc, subjects.LORE_ENTRY_UPDATE, mine(tenant, book_id, uid=0, changes={"content": "Labs: marine only."})
        )
        same = await call(
            nc, subjects.LORE_ENTRY_UPDATE, mine(tenant, book_id, uid=0, changes={"content": "Labs: marine only."})
        )
        with_lore = await call(nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Hello"))
        deleted_entry = await call(nc, subjects.LORE_ENTRY_DELETE, mine(tenant, book_id, uid=5))
        deleted_again = await call(nc, subjects.LORE_ENTRY_DELETE, mine(tenant, book_id, uid=5))
        exported = await call(nc, subjects.LORE_EXPORT, {"tenant_id": tenant, "lorebook_id": book_id})

        live = await LoreReadModel(stack.db, stack.deps.cipher).state(tenant, book_id)
        rebuilt_model = LoreReadModel(stack.db, stack.deps.cipher)
        await drop(stack.db, LORE)
        await rebuilt_model.apply([e async for e in stack.store.read_all()])
        rebuilt = await rebuilt_model.state(tenant, book_id)

        detached = await call(nc, subjects.LORE_DETACH, mine(tenant, book_id, bot_ids=[BOT]))
        after_detach = await call(nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Hello"))
        stranger_delete = await call(nc, subjects.LORE_BOOK_DELETE, {**mine(tenant, book_id), "user_id": "x"})
        await call(nc, subjects.LORE_ATTACH, {"tenant_id": tenant, "lorebook_id": book_id, "bot_ids": [BOT]})
        book_deleted = await call(nc, subjects.LORE_BOOK_DELETE, mine(tenant, book_id))
        book_deleted_again = await call(nc, subjects.LORE_BOOK_DELETE, mine(tenant, book_id))
        after_delete = await call(nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Hello"))
        export_deleted = await call(nc, subjects.LORE_EXPORT, {"tenant_id": tenant, "lorebook_id": book_id})
        edit_deleted = await call(nc, subjects.LORE_ENTRY_UPDATE, mine(tenant, book_id, uid=0, changes={"order": 1}))

    assert again == {"lorebook_id": book_id, "created": False}, "a retried create records nothing"
    assert (second["uid"], second["changed"], retry["changed"]) == (5, True, False)
    assert taken["error"]["code"] == "bad_request"
    assert "uid 5" in taken["error"]["message"]
    assert bad["error"]["code"] == "bad_request"
    assert "activationMode" in bad["error"]["message"]
    assert not_owner["error"]["code"] == other_tenant["error"]["code"] == "not_found"
    assert garbage["error"]["code"] == "bad_request"
    assert (updated["changed"], same["changed"]) == (True, False)
    assert updated["entry"]["content"] == "Labs: marine only."
    assert updated["entry"]["key"] == ["Research Labs"], "fields not named in `changes` are kept"
    assert lore_details(with_lore) == {f"{book_id}.0": "key: Research Labs"}
    assert "Labs: marine only." in with_lore["context"]
    assert (deleted_entry["deleted"], deleted_again["deleted"]) == (True, False)
    assert list(exported["data"]["entries"]) == ["0"]
    assert exported["data"]["entries"]["0"]["content"] == "Labs: marine only."
    assert live is not None
    assert rebuilt == live, "the lore state is rebuilt from the log alone"
    assert detached["bot_ids"] == [BOT]
    assert lore_details(after_detach) == {}
    assert stranger_delete["error"]["code"] == "not_found"
    assert (book_deleted["deleted"], book_deleted_again["deleted"]) == (True, False)
    assert lore_details(after_delete) == {}, "a deleted book is attached to nothing"
    assert export_deleted["error"]["code"] == edit_deleted["error"]["code"] == "not_found"


async def test_vector_entries_activate_on_paraphrase_follow_edits_and_leave_with_deletes(
    nats_url, mongo_url, db_name, tenant, tmp_path: Path, embedder: BundledEmbedder
):
    index = EdgeVectorIndex(tmp_path, "vectors")
    await index.ensure_collection(embedder.dimensions)
    other_tenant = f"{tenant}-other"
    entries = [
        {"content": REEF, "activationMode": "vector", "comment": "reef"},
        {"content": REACTOR, "activationMode": "hybrid", "key": ["reactor"], "comment": "power"},
        {"content": "Keyword entry about the docks.", "key": ["docks"]},
    ]
    async with running(nats_url, mongo_url, db_name, routers(), vectors=index, embedder=embedder) as stack:
        await seed(stack, tenant)
        await seed(stack, other_tenant)
        book_id = await make_book(stack, tenant, entries)
        await make_book(stack, other_tenant, entries)  # same texts in another tenant: never this tenant's hits
        await project(stack, index, embedder)
        points = {(p.payload["lorebook_id"], p.payload["uid"]) for p in await lore_points(index, embedder, tenant)}
        reef = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, ASK_REEF))
        reef_other_bot = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, ASK_REEF, bot=OTHER_BOT))
        keyword = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Is the reactor near the docks?"))

        edit = {"content": REACTOR.replace("reactor", "power plant")}
        await call(stack.nc, subjects.LORE_ENTRY_UPDATE, mine(tenant, book_id, uid=0, changes=edit))
        await project(stack, index, embedder)
        reef_after_edit = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, ASK_REEF))
        power_after_edit = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, ASK_POWER))

        await call(stack.nc, subjects.LORE_ENTRY_DELETE, mine(tenant, book_id, uid=0))
        await project(stack, index, embedder)
        after_delete = {p.payload["uid"] for p in await lore_points(index, embedder, tenant)}
        await call(stack.nc, subjects.LORE_BOOK_DELETE, mine(tenant, book_id))
        await project(stack, index, embedder)
        after_book_delete = await lore_points(index, embedder, tenant)
        other_tenant_left = await lore_points(index, embedder, other_tenant)

    assert points == {(book_id, 0), (book_id, 1)}, "vector and hybrid entries only, this tenant's only"
    details = lore_details(reef)
    assert set(details) == {f"{book_id}.0"}, details
    assert details[f"{book_id}.0"].startswith("similarity: ")
    assert float(details[f"{book_id}.0"].removeprefix("similarity: ")) >= 0.35
    assert REEF in reef["context"]
    assert lore_details(reef_other_bot) == {}, "the book is attached to another bot"
    assert f"{book_id}.1" in lore_details(keyword), "hybrid: keys or similarity"
    assert lore_details(keyword)[f"{book_id}.2"] == "key: docks"
    assert f"{book_id}.0" not in lore_details(reef_after_edit), "the old text's vectors are gone"
    assert lore_details(power_after_edit).get(f"{book_id}.0", "").startswith("similarity: ")
    assert after_delete == {1}
    assert after_book_delete == []
    assert len(other_tenant_left) == 2


async def test_attach_checks_a_given_owner_and_a_deleted_import_can_come_back(
    nats_url, mongo_url, db_name, tenant, shared_dir: Path
):
    book = json.loads((shared_dir / "fixtures/lorebooks/chub-wi_lythora-station.json").read_text())
    request = {"tenant_id": tenant, "owner_user_id": OWNER, "name": "Lythora", "data": book, "attach_to_bots": [BOT]}
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        await seed(stack, tenant)
        nc = stack.nc
        book_id = (await call(nc, subjects.LORE_IMPORT, request))["lorebook_id"]
        attach = {"tenant_id": tenant, "lorebook_id": book_id, "bot_ids": [OTHER_BOT]}
        by_stranger = await call(nc, subjects.LORE_ATTACH, {**attach, "user_id": "someone-else"})
        by_owner = await call(nc, subjects.LORE_ATTACH, {**attach, "user_id": OWNER})
        deleted = await call(nc, subjects.LORE_BOOK_DELETE, mine(tenant, book_id))
        after_delete = await call(nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Hello"))
        attach_deleted = await call(nc, subjects.LORE_ATTACH, attach)
        again = await call(nc, subjects.LORE_IMPORT, request)
        back = await call(nc, subjects.CONTEXT_ASSEMBLE, ask(tenant, "Hello"))

    assert by_stranger["error"]["code"] == "not_found"
    assert by_owner["bot_ids"] == [OTHER_BOT]
    assert deleted["deleted"]
    assert lore_details(after_delete) == {}
    assert attach_deleted["error"]["code"] == "not_found"
    assert again["lorebook_id"] == book_id
    assert again["entries"] == 8
    assert f"{book_id}.4" in lore_details(back), "imported again after its deletion: attached and active again"


async def test_a_change_appended_but_never_projected_is_folded_in_by_the_next_request(
    nats_url, mongo_url, db_name, tenant
):
    """A crash between the append and the projection leaves the read model behind the log: the next change
    decides on the book's aggregate (the read model's state, and the log's events past it folded on) and its
    projection takes the whole stream, so neither change is lost."""
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        book_id = await make_book(stack, tenant, [{"content": "one"}, {"content": "two"}])
        model = LoreReadModel(stack.db, stack.deps.cipher)
        state = await model.state(tenant, book_id)
        assert state is not None
        req = LoreEntryUpdateRequest(
            tenant_id=tenant, user_id=OWNER, lorebook_id=book_id, uid=0, changes={"content": "one, edited"}
        )
        _, events = deciders.update_entry(state, req, utcnow())
        await stack.store.append(lorebook_stream(tenant, book_id), state.version, events)  # "crash": no projection
        reply = await call(
            stack.nc, subjects.LORE_ENTRY_UPDATE, mine(tenant, book_id, uid=1, changes={"content": "two, edited"})
        )
        after = await model.state(tenant, book_id)

    assert reply["changed"], reply
    assert after is not None
    assert [e.content for e in after.book.entries] == ["one, edited", "two, edited"]
    assert after.version == state.version + 2


async def test_a_rename_reaches_only_its_tenant_and_owner_and_is_rebuilt_from_the_log(nats_url, mongo_url, db_name):
    """Random tenants each hold a book with the same id; renames by its owner, by a stranger and by another
    tenant's request naming that id: each tenant sees exactly its own owner's rename, before and after a rebuild."""
    rng = random.Random(29)
    tenants = [f"tenant-{rng.getrandbits(40):010x}" for _ in range(8)]
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        nc = stack.nc
        for t in tenants:
            created = await call(nc, subjects.LORE_BOOK_CREATE,
                                 {"tenant_id": t, "owner_user_id": OWNER, "name": "Atlas", "lorebook_id": "atlas"})  # fmt: skip
            assert created["created"], created
        names = {t: f"Atlas of {t}" for t in tenants if rng.random() < 0.6}
        for t, name in names.items():
            assert (await call(nc, subjects.LORE_BOOK_RENAME, mine(t, "atlas", name=name)))["renamed"]
        for t in tenants:
            stranger = await call(nc, subjects.LORE_BOOK_RENAME, mine(t, "atlas", name="hijacked") | {"user_id": "u-x"})
            assert stranger["error"]["code"] == "not_found"
        missing = await call(nc, subjects.LORE_BOOK_RENAME, mine("tenant-without-books", "atlas", name="hijacked"))
        assert missing["error"]["code"] == "not_found"

        async def listed() -> dict[str, list[str]]:
            return {t: [b["name"] for b in (await call(nc, subjects.LORE_LIST, {"tenant_id": t}))["books"]]
                    for t in tenants}  # fmt: skip

        expected = {t: [names.get(t, "Atlas")] for t in tenants}
        assert await listed() == expected
        await drop(stack.db, LORE)
        lore = LoreReadModel(stack.db, stack.deps.cipher)
        for t in tenants:
            await lore.apply(await stack.store.read_stream(lorebook_stream(t, "atlas")))
        assert await listed() == expected, "the renames are in the log: a rebuilt read model keeps them"
