"""The lore service on an in-memory broker, log and read model: import, export, attach and edit books."""

from __future__ import annotations

import pytest

from mnemo.services.lore.app import create_router
from mnemo.services.lore.formats.importer import import_lorebook
from mnemo.shared import subjects
from mnemo.shared.events.recorded import bot_stream, conversation_stream
from mnemo.shared.readmodels.catalog import LORE
from tests.components import assert_bad_request, deps, published, served

T, OWNER = "t1", "creator-1"
WORLD_INFO = {
    "entries": {
        "0": {"uid": 0, "key": ["harbour", "docks"], "content": "The harbour of Port Vell is older than the city.",
              "comment": "Harbour", "order": 100, "position": 0},
        "1": {"uid": 1, "key": ["lighthouse"], "keysecondary": ["storm"], "selective": True,
              "content": "The lighthouse keeper sees every ship.", "comment": "Lighthouse", "order": 90},
    }
}  # fmt: skip


@pytest.fixture
async def lore():
    d = deps()
    async with served(create_router(d)) as rpc:
        yield rpc, d.read_model(LORE), d


def import_request(**over):
    return {"tenant_id": T, "owner_user_id": OWNER, "name": "Port Vell", "data": WORLD_INFO,
            "attach_to_bots": ["b1"]} | over  # fmt: skip


async def test_import_then_export_round_trips_the_entries(lore):
    rpc, model, d = lore

    imported = await rpc(subjects.LORE_IMPORT, import_request())
    exported = await rpc(subjects.LORE_EXPORT, {"tenant_id": T, "lorebook_id": imported["lorebook_id"]})

    assert imported["entries"] == 2
    assert exported["name"] == "Port Vell"
    assert import_lorebook(exported["data"]).book.entries == import_lorebook(WORLD_INFO).book.entries
    refs = await model.attached(T, "b1")
    assert [r.lorebook_id for r in refs] == [imported["lorebook_id"]]
    # What the other services learn of it: the import and the attachment, through the log.
    events = published(d).events
    assert [e.type for e in events][:1] == ["lorebook.imported"]
    assert all(e.tenant_id == T for e in events)


async def test_importing_the_same_file_again_records_nothing_new(lore):
    rpc, _, d = lore
    first = await rpc(subjects.LORE_IMPORT, import_request())
    count = len(published(d).events)

    again = await rpc(subjects.LORE_IMPORT, import_request())

    assert again == first
    assert len(published(d).events) == count


async def test_a_book_is_invisible_to_another_tenant(lore):
    rpc, _, _ = lore
    imported = await rpc(subjects.LORE_IMPORT, import_request())

    reply = await rpc(subjects.LORE_EXPORT, {"tenant_id": "t2", "lorebook_id": imported["lorebook_id"]})

    assert reply["error"]["code"] == "not_found"


async def test_the_owner_renames_a_book_and_no_one_else_can(lore):
    rpc, _, d = lore
    book = (await rpc(subjects.LORE_IMPORT, import_request()))["lorebook_id"]
    rename = {"tenant_id": T, "user_id": OWNER, "lorebook_id": book, "name": "Port Vell, old town"}

    renamed = await rpc(subjects.LORE_BOOK_RENAME, rename)
    count = len(published(d).events)
    again = await rpc(subjects.LORE_BOOK_RENAME, rename)
    stranger = await rpc(subjects.LORE_BOOK_RENAME, rename | {"user_id": "u-stranger", "name": "Mine"})
    other_tenant = await rpc(subjects.LORE_BOOK_RENAME, rename | {"tenant_id": "t2", "name": "Mine"})
    empty = await rpc(subjects.LORE_BOOK_RENAME, rename | {"name": ""})
    listed = await rpc(subjects.LORE_LIST, {"tenant_id": T})
    exported = await rpc(subjects.LORE_EXPORT, {"tenant_id": T, "lorebook_id": book})

    assert renamed == {"lorebook_id": book, "name": "Port Vell, old town", "renamed": True}
    assert (again["renamed"], len(published(d).events)) == (False, count), "a retry records nothing"
    assert stranger["error"]["code"] == other_tenant["error"]["code"] == "not_found"
    assert empty["error"]["code"] == "bad_request"
    assert [b["name"] for b in listed["books"]] == ["Port Vell, old town"]
    assert exported["name"] == "Port Vell, old town"
    assert "lorebook.renamed" in [e.type for e in published(d).events]


async def test_attach_to_a_conversation_and_detach(lore):
    rpc, model, _ = lore
    book = (await rpc(subjects.LORE_IMPORT, import_request(attach_to_bots=[])))["lorebook_id"]
    conversation = {"user_id": "u1", "conversation_id": "c1"}

    attached = await rpc(subjects.LORE_ATTACH, {"tenant_id": T, "lorebook_id": book, "conversation": conversation})
    in_chat = await model.attached(T, "b7", "u1", "c1")
    detached = await rpc(
        subjects.LORE_DETACH,
        {"tenant_id": T, "user_id": OWNER, "lorebook_id": book, "conversation": conversation},
    )

    assert attached["conversation"] == conversation
    assert [(r.lorebook_id, r.source) for r in in_chat] == [(book, "chat")]
    assert "error" not in detached
    assert await model.attached(T, "b7", "u1", "c1") == []
    state = await model.state(T, book)
    assert state is not None
    assert conversation_stream(T, "u1", "c1") not in state.targets
    assert bot_stream(T, "b7") not in state.targets


async def test_create_a_book_and_edit_its_entries(lore):
    rpc, model, _ = lore
    created = await rpc(subjects.LORE_BOOK_CREATE, {"tenant_id": T, "owner_user_id": OWNER, "name": "Notes"})
    book = created["lorebook_id"]
    entry = await rpc(
        subjects.LORE_ENTRY_CREATE,
        {"tenant_id": T, "user_id": OWNER, "lorebook_id": book, "entry": {"key": ["moon"], "content": "Two moons."}},
    )
    updated = await rpc(
        subjects.LORE_ENTRY_UPDATE,
        {"tenant_id": T, "user_id": OWNER, "lorebook_id": book, "uid": entry["uid"], "changes": {"content": "Three."}},
    )
    not_owner = await rpc(
        subjects.LORE_ENTRY_DELETE,
        {"tenant_id": T, "user_id": "someone-else", "lorebook_id": book, "uid": entry["uid"]},
    )

    assert created["created"] is True
    assert (updated["changed"], updated["entry"]["content"]) == (True, "Three.")
    view = await model.book(T, book)
    assert view is not None
    assert [(e.key, e.content) for e in view.book.entries] == [(["moon"], "Three.")]
    assert "error" in not_owner
    assert not_owner["error"]["code"] in {"not_found", "bad_request"}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "JSON"),
        (import_request(data={"hello": "world"}), "not a lorebook"),
        (import_request(data=None), "exactly one of"),
        (import_request(surprise=1), "surprise"),
    ],
)
async def test_bad_requests_get_a_bad_request_reply(lore, body, says):
    rpc, _, d = lore

    reply = await rpc(subjects.LORE_IMPORT, body)

    assert_bad_request(reply, says)
    assert published(d).events == []


async def test_an_entry_number_beyond_the_largest_is_a_bad_request_not_a_failed_append(lore):
    """Found by the 100,000-case fuzz run: a uid of 2**80 passed validation and the log's insert failed
    (BSON holds 64-bit integers), answering ``internal``; a sticky of 2**80 would reach the timed effects'
    plain ends the same way."""
    rpc, _, d = lore
    book = await rpc(subjects.LORE_BOOK_CREATE, {"tenant_id": T, "owner_user_id": OWNER, "name": "Uids"})
    before = len(published(d).events)
    for uid, field in ((2**80, {}), (2**53, {}), (-1, {}), (1, {"sticky": 2**80}), (2, {"depth": -(2**63)})):
        entry = {"uid": uid, "key": ["x"], "content": "y", **field}
        reply = await rpc(subjects.LORE_ENTRY_CREATE, {"tenant_id": T, "user_id": OWNER, "lorebook_id": book["lorebook_id"], "entry": entry})  # fmt: skip
        assert_bad_request(reply, next(iter(field), "uid"))
    assert len(published(d).events) == before


async def test_list_pages_the_tenants_live_books_with_their_attachments(lore):
    rpc, _, _ = lore
    port = await rpc(subjects.LORE_IMPORT, import_request())
    other = await rpc(subjects.LORE_IMPORT, import_request(name="Attic", owner_user_id="u2", attach_to_bots=[]))
    await rpc(subjects.LORE_IMPORT, import_request(tenant_id="t2"))
    chat = {"user_id": "u9", "conversation_id": "c/1"}
    await rpc(subjects.LORE_ATTACH, {"tenant_id": T, "lorebook_id": other["lorebook_id"], "conversation": chat})
    gone = await rpc(subjects.LORE_BOOK_CREATE, {"tenant_id": T, "owner_user_id": OWNER, "name": "Gone"})
    await rpc(subjects.LORE_BOOK_DELETE, {"tenant_id": T, "user_id": OWNER, "lorebook_id": gone["lorebook_id"]})

    listed = await rpc(subjects.LORE_LIST, {"tenant_id": T})
    assert [b["name"] for b in listed["books"]] == ["Attic", "Port Vell"]
    assert listed["total"] == 2
    attic, vell = listed["books"]
    assert (attic["owner_user_id"], attic["bot_ids"], attic["conversations"]) == ("u2", [], [chat])
    assert (vell["lorebook_id"], vell["bot_ids"], vell["entries"], vell["format"]) == (
        port["lorebook_id"], ["b1"], 2, "sillytavern",
    )  # fmt: skip
    mine = await rpc(subjects.LORE_LIST, {"tenant_id": T, "owner_user_id": OWNER})
    on_bot = await rpc(subjects.LORE_LIST, {"tenant_id": T, "bot_id": "b1"})
    page = await rpc(subjects.LORE_LIST, {"tenant_id": T, "limit": 1, "offset": 1})
    assert [b["name"] for b in mine["books"]] == [b["name"] for b in on_bot["books"]] == ["Port Vell"]
    assert ([b["name"] for b in page["books"]], page["total"]) == (["Port Vell"], 2)
    assert_bad_request(await rpc(subjects.LORE_LIST, {"tenant_id": T, "limit": 0}), "limit")
