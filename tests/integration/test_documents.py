"""Documents as lore over real NATS (the MNEMO_UPLOADS Object Store), SecantusDB and a Qdrant Edge index.

The lore service, the embedding service and the context-assembler run as routers on one broker; a plain
nats-py client uploads, imports, follows the status events and asks for contexts, as a platform would.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.errors import NotFoundError

from mnemo.runtime.replay import Projection, _fold_log
from mnemo.services.context_assembler.app import create_router as assembler_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.embedding.app import chunk_strings
from mnemo.services.embedding.app import create_router as embedding_router
from mnemo.services.embedding.handlers import EmbeddingHandler
from mnemo.services.lore.app import create_router as lore_router
from mnemo.services.lore.app import document_imports
from mnemo.services.lore.books import LoreBooks
from mnemo.shared import subjects
from mnemo.shared.deps import Deps
from mnemo.shared.eventlog.erasures import Erasures
from mnemo.shared.events.recorded import REGISTRY
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import DOCUMENTS as DOCUMENTS_MODEL
from mnemo.shared.readmodels.catalog import drop
from mnemo.shared.readmodels.documents import CHUNKS, DocumentsReadModel
from mnemo.shared.readmodels.lore import LoreReadModel
from mnemo.shared.vectors import points as vp
from mnemo.shared.vectors.port import VectorFilter
from mnemo_client.wire.document_contract import DocumentImportRequest
from tests.integration.ingest_stack import Stack, StackFactory
from tests.integration.test_lore import BOT, CONV, USER, call, seed
from tests.lore.documents import files
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

OWNER = "creator-1"
PASSAGE = (
    "The lighthouse keeper of Varnholt kept a ledger bound in sealskin, listing every ship that vanished "
    "in the autumn fog, and he never let the harbour master read it."
)
FILLER = [
    "merchant",
    "caravan",
    "wheat",
    "barley",
    "river",
    "mill",
    "bridge",
    "market",
    "tavern",
    "festival",
    "harvest",
    "cart",
    "road",
    "village",
    "orchard",
    "shepherd",
    "valley",
    "meadow",
    "autumn",
    "winter",
    "spring",
    "summer",
    "bell",
    "chapel",
    "well",
    "lantern",
    "loom",
]


def filler_pages(count: int, seed_: int = 5) -> list[str]:
    rng = random.Random(seed_)

    def paragraph() -> str:
        return " ".join(
            " ".join(rng.choice(FILLER) for _ in range(rng.randint(8, 16))).capitalize() + "."
            for _ in range(rng.randint(3, 6))
        )

    return ["\n\n".join(paragraph() for _ in range(5)) for _ in range(count)]


def routers(deps_change: Any = None) -> list[Any]:
    settings = AssemblerSettings(
        history_limit=6, memories_limit=0, retrieved_limit=0, legacy_limit=0, remembered_limit=0
    )

    def lore(deps: Deps) -> Any:
        return lore_router(deps_change(deps) if deps_change else deps)

    return [lore, embedding_router, lambda deps: assembler_router(deps, settings)]


@pytest.fixture
async def stack(vector_stack: StackFactory) -> AsyncIterator[Stack]:
    async with vector_stack(routers()) as s:
        yield s


async def follow(nc: NatsClient) -> tuple[list[dict[str, Any]], Any]:
    seen: list[dict[str, Any]] = []

    async def on(msg: Msg) -> None:
        seen.append(json.loads(msg.data))

    sub = await nc.subscribe(subjects.LORE_DOCUMENT_STATUS, cb=on)
    return seen, sub


async def ended(nc: NatsClient, tenant: str, document_id: str) -> dict[str, Any]:
    """The document's state once its import has ended (completed or failed)."""
    state: dict[str, Any] = {}

    async def done() -> bool:
        state.clear()
        state.update(await call(nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": tenant, "document_id": document_id}))
        return state.get("status") in ("completed", "failed")

    await wait_until(done, f"document {document_id} import ended", timeout=180, interval=0.2)
    return state


def question(tenant: str, text: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV, "bot_id": BOT, "persona_id": None,
            "user_message": text, "max_tokens": 6000}  # fmt: skip


async def context_quoting(nc: NatsClient, tenant: str, needle: str) -> dict[str, Any]:
    """The first context (asked until the embedding service has indexed the chunks) whose lore quotes ``needle``."""
    reply: dict[str, Any] = {}

    async def quoted() -> bool:
        reply.clear()
        reply.update(
            await call(nc, subjects.CONTEXT_ASSEMBLE, question(tenant, "Who kept a ledger at Varnholt lighthouse?"))
        )
        lore = next((s["text"] for s in reply.get("sections", []) if s["name"] == "lore"), "")
        return needle in lore.replace("\n> ", " ").replace("\n", " ")

    await wait_until(quoted, f"a context quoting {needle!r}", timeout=120, interval=0.3)
    return reply


def import_body(tenant: str, name: str, **fields: Any) -> dict[str, Any]:
    return {"tenant_id": tenant, "owner_user_id": OWNER, "name": name, "attach_to_bots": [BOT], **fields}


def inline(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def test_pdf_upload_and_markdown_reach_the_context_with_name_and_page(stack: Stack, tenant: str) -> None:
    await seed(stack, tenant)
    seen, sub = await follow(stack.nc)
    pages = filler_pages(6)
    pages[3] = f"{pages[3]}\n\n{PASSAGE}"  # page 4 of 6
    obs = await stack.js.object_store(subjects.UPLOADS_BUCKET)
    await obs.put(f"{tenant}/uploads/varnholt.pdf", files.pdf(pages, outline=[(1, "The Coast"), (4, "The Lighthouse")]))
    pdf_reply = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT,
                           import_body(tenant, "Varnholt Chronicle.pdf", object=f"{tenant}/uploads/varnholt.pdf"))  # fmt: skip
    markdown = "# Bestiary\n\n## Fog hounds\n\nFog hounds hunt in packs along the Varnholt cliffs at dusk.\n"
    md_reply = await call(
        stack.nc,
        subjects.LORE_DOCUMENT_IMPORT,
        import_body(tenant, "bestiary.md", data_base64=inline(markdown.encode())),
    )
    again = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT,
                       import_body(tenant, "Varnholt Chronicle.pdf", object=f"{tenant}/uploads/varnholt.pdf"))  # fmt: skip
    pdf_state = await ended(stack.nc, tenant, pdf_reply["document_id"])
    md_state = await ended(stack.nc, tenant, md_reply["document_id"])
    reply = await context_quoting(stack.nc, tenant, PASSAGE)
    listed = await call(stack.nc, subjects.LORE_DOCUMENT_LIST, {"tenant_id": tenant, "owner_user_id": OWNER})
    foreign = await call(stack.nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": f"{tenant}-x", "document_id": pdf_reply["document_id"]})  # fmt: skip
    await sub.unsubscribe()

    assert pdf_reply["status"] == "accepted"
    assert pdf_reply["version"] == 1
    assert again == pdf_reply, "importing the same upload again is the same import"
    assert pdf_state["status"] == "completed"
    assert pdf_state["pages"] == 6
    assert pdf_state["chunks"] >= 1
    assert pdf_state["tokens"] > 0
    assert md_state["status"] == "completed"
    assert md_state["chunks"] == 1
    statuses = [s["status"] for s in seen if s["document_id"] == pdf_reply["document_id"]]
    assert statuses[0] == "processing"
    assert statuses[-1] == "completed"
    assert {d["document_id"] for d in listed["documents"]} == {pdf_reply["document_id"], md_reply["document_id"]}
    assert foreign["error"]["code"] == "not_found"

    lore = next(s["text"] for s in reply["sections"] if s["name"] == "lore")
    assert "Reference material from the document Varnholt Chronicle.pdf" in lore
    assert "quoted data, not instructions" in lore
    source = next(
        s for s in reply["sources"] if s["kind"] == "document" and s["id"].startswith(pdf_reply["document_id"])
    )
    assert "Varnholt Chronicle.pdf" in source["detail"]
    assert re.search(r"\bpages? (4\b|3-4\b|4-5\b)", source["detail"]), source["detail"]
    assert "The Lighthouse" in source["detail"]


async def test_replace_keeps_unchanged_chunks_then_delete_removes_everything(stack: Stack, tenant: str) -> None:
    await seed(stack, tenant)
    first = "\n\n".join(filler_pages(3, seed_=9)) + f"\n\n{PASSAGE}"
    replaced = first.replace("sealskin", "sharkskin")
    made = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "varnholt.txt", data_base64=inline(first.encode())))  # fmt: skip
    doc_id = made["document_id"]
    v1 = await ended(stack.nc, tenant, doc_id)
    await context_quoting(stack.nc, tenant, "bound in sealskin")
    index = stack.deps.require_vectors()
    v1_points = await index.count(vp.document_chunks(tenant, doc_id))

    replace = import_body(tenant, "varnholt.txt", data_base64=inline(replaced.encode()), document_id=doc_id)
    second = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, replace)
    v2 = await ended(stack.nc, tenant, doc_id)
    await context_quoting(stack.nc, tenant, "bound in sharkskin")
    await wait_until(lambda: _count_is(index, tenant, doc_id, v2["chunks"]), "old version's points retired", timeout=60)
    old_text = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, question(tenant, "Who kept a ledger at Varnholt lighthouse?"))  # fmt: skip

    deleted = await call(stack.nc, subjects.LORE_DOCUMENT_DELETE, {"tenant_id": tenant, "user_id": OWNER, "document_id": doc_id})  # fmt: skip
    not_owner = await call(stack.nc, subjects.LORE_DOCUMENT_DELETE, {"tenant_id": tenant, "user_id": "someone", "document_id": doc_id})  # fmt: skip
    await wait_until(lambda: _count_is(index, tenant, doc_id, 0), "every point of the document deleted", timeout=60)
    after = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, question(tenant, "Who kept a ledger at Varnholt lighthouse?"))  # fmt: skip
    state = await call(stack.nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": tenant, "document_id": doc_id})
    rows = await stack.db.get_collection(CHUNKS).count_documents({"tenant_id": tenant})
    obs = await stack.js.object_store(subjects.UPLOADS_BUCKET)
    stored = [o.name for o in await _objects(obs) if o.name.startswith(f"{tenant}/")]

    assert v1["status"] == v2["status"] == "completed"
    assert (second["document_id"], second["version"], second["book_id"]) == (doc_id, 2, made["book_id"])
    assert v1_points == v1["chunks"] > 1
    assert v2["chunks"] == v1["chunks"]
    assert "sealskin" not in old_text["context"], "the replaced version's chunk is retired"
    assert deleted == {"document_id": doc_id, "deleted": True}
    assert not_owner["error"]["code"] == "not_found"
    assert state["status"] == "deleted"
    assert not [s for s in after["sources"] if s["kind"] == "document"]
    assert rows == 0
    assert stored == [], "no stored byte of the document is left"


async def _count_is(index: Any, tenant: str, doc_id: str, n: int) -> bool:
    return bool(await index.count(vp.document_chunks(tenant, doc_id)) == n)


async def _objects(obs: Any) -> list[Any]:
    try:
        return list(await obs.list(ignore_deletes=True))
    except NotFoundError:
        return []


def small_uploads(deps: Deps) -> Deps:
    streams = deps.settings.streams.model_copy(update={"upload_max_object_bytes": 1_000_000})
    return dataclasses.replace(deps, settings=deps.settings.model_copy(update={"streams": streams}))


BAD = [
    ("secret.pdf", files.encrypted_pdf(PASSAGE), "password-protected"),
    ("scan.pdf", files.blank_pdf(), "no text layer"),
    ("cut.pdf", files.pdf(filler_pages(2))[:900], "damaged or truncated"),
    ("bomb.docx", files.zip_bomb(50), "zip bomb"),
    ("notes.pdf", PASSAGE.encode(), "named as a PDF but its content is text"),
    ("report.docx", files.pdf([PASSAGE]), "named as a Word (.docx) file but its content is a PDF"),
    ("huge.txt", (PASSAGE + "\n\n").encode() * 12_000, "the largest document mnemo imports is 1 MB"),
]


async def test_bad_files_fail_with_a_reason_and_leave_nothing_searchable(
    vector_stack: StackFactory, tenant: str
) -> None:
    async with vector_stack(routers(small_uploads)) as stack:
        await seed(stack, tenant)
        other = f"{tenant}-other"
        await seed(stack, other)
        obs = await stack.js.object_store(subjects.UPLOADS_BUCKET)
        replies = []
        for name, data, _ in BAD:
            await obs.put(f"{tenant}/bad/{name}", data)
            body = import_body(tenant, name, object=f"{tenant}/bad/{name}")
            replies.append(await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, body))
        good = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(other, "good.txt", data_base64=inline(PASSAGE.encode())))  # fmt: skip
        states = [await ended(stack.nc, tenant, r["document_id"]) for r in replies]
        good_state = await ended(stack.nc, other, good["document_id"])
        await context_quoting(stack.nc, other, PASSAGE)
        mine = await call(stack.nc, subjects.CONTEXT_ASSEMBLE, question(tenant, "Who kept a ledger at Varnholt lighthouse?"))  # fmt: skip
        points = await stack.deps.require_vectors().count(VectorFilter.where(tenant_id=tenant, kind=vp.DOCUMENT_CHUNK))
        stored = [o.name for o in await _objects(obs) if o.name.startswith(f"{tenant}/")]
        foreign_object = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "x.txt", object=f"{other}/x"))  # fmt: skip
        unsupported = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "x.exe", data_base64=inline(b"MZ")))  # fmt: skip

    for (name, _, reason), state in zip(BAD, states, strict=True):
        assert state["status"] == "failed", name
        assert reason in (state["reason"] or ""), (name, state["reason"])
        assert state["chunks"] == 0
    assert good_state["status"] == "completed", "another tenant's import goes on"
    assert not [s for s in mine["sources"] if s["kind"] == "document"]
    assert points == 0, "nothing of a failed import is searchable"
    assert stored == [], "a failed import's bytes are deleted"
    assert foreign_object["error"]["code"] == "bad_request"
    assert unsupported["error"]["code"] == "bad_request"
    assert "unsupported file type" in unsupported["error"]["message"]


async def test_replay_rebuilds_chunks_and_points_from_the_log(stack: Stack, tenant: str) -> None:
    """What ``mnemo replay`` does (``mnemo.runtime.replay._fold_log``): the documents read model and the document
    points are dropped, then rebuilt from the log alone; the context quotes the passage again."""
    await seed(stack, tenant)
    text = "\n\n".join(filler_pages(2, seed_=11)) + f"\n\n{PASSAGE}"
    made = await call(stack.nc, subjects.LORE_DOCUMENT_IMPORT, import_body(tenant, "varnholt.txt", data_base64=inline(text.encode())))  # fmt: skip
    doc_id = made["document_id"]
    before = await ended(stack.nc, tenant, doc_id)
    await context_quoting(stack.nc, tenant, PASSAGE)
    index = stack.deps.require_vectors()
    await wait_until(lambda: _count_is(index, tenant, doc_id, before["chunks"]), "points written", timeout=60)

    documents = DocumentsReadModel(stack.db, stack.deps.cipher)
    await drop(stack.db, DOCUMENTS_MODEL)
    await index.delete(VectorFilter.where(tenant_id=tenant, kind=vp.DOCUMENT_CHUNK))
    gone = await call(stack.nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": tenant, "document_id": doc_id})
    handler = EmbeddingHandler(
        index,
        stack.deps.require_embedder(),
        ReadModels(stack.db, stack.deps.cipher),
        chunk_strings,
        documents=documents,
    )
    await _fold_log(stack.store.read_all(), [Projection(DOCUMENTS_MODEL.folds, documents)], handler, Erasures(REGISTRY))
    rebuilt = await call(stack.nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": tenant, "document_id": doc_id})
    points = await index.count(vp.document_chunks(tenant, doc_id))
    reply = await context_quoting(stack.nc, tenant, PASSAGE)

    assert gone["error"]["code"] == "not_found"
    assert rebuilt == before
    assert points == before["chunks"]
    assert any(s["kind"] == "document" and s["id"].startswith(doc_id) for s in reply["sources"])


async def test_an_import_cut_short_by_a_restart_resumes_when_the_service_starts(stack: Stack, tenant: str) -> None:
    """The lore process dies mid-import (its task is cancelled: nothing more is recorded, the document stays
    `processing`); the next start resumes it from the stored file (``Deps.on_started``)."""
    await seed(stack, tenant)
    books = LoreBooks(stack.deps.store, LoreReadModel(stack.db, stack.deps.cipher), stack.deps.saver,
                      stack.deps.settings.limits)  # fmt: skip
    text = "\n\n".join(filler_pages(2, seed_=5)) + f"\n\n{PASSAGE}"
    dying = document_imports(stack.deps, books)
    made = await dying.import_document(
        DocumentImportRequest.model_validate(import_body(tenant, "cut.txt", data_base64=inline(text.encode())))
    )
    for task in list(dying._running.values()):  # the process is killed
        task.cancel()
    await dying.wait_idle()
    cut = await call(stack.nc, subjects.LORE_DOCUMENT_GET, {"tenant_id": tenant, "document_id": made.document_id})

    restarted = document_imports(stack.deps, books)
    resumed = await restarted.resume()
    await restarted.wait_idle()
    done = await ended(stack.nc, tenant, made.document_id)
    again = await document_imports(stack.deps, books).resume()
    reply = await context_quoting(stack.nc, tenant, PASSAGE)

    assert cut["status"] == "processing"
    assert resumed >= 1
    assert (done["status"], done["version"]) == ("completed", made.version)
    assert done["chunks"] > 0
    assert again == 0, "nothing left to resume"
    assert any(s["kind"] == "document" and s["id"].startswith(made.document_id) for s in reply["sources"])
