"""Documents as lore through the public contract only, against the embedded stack as a process (`make run`).

A real public-domain book of more than 300 pages (Shakespeare's six tragedies, ``bench/documents_book.py``)
is uploaded to the MNEMO_UPLOADS Object Store twice, as a PDF (written here by fpdf2) and as text (pages
separated by form feeds), each imported and attached to its own bot. A question about a passage in the middle
of the book (Macbeth's "Tomorrow, and tomorrow, and tomorrow") gets a context whose lore section quotes it,
with the document's name and a page in the middle of the book in ``sources``, in both cases. Deleting the
text document then removes it from the context and its stored bytes from the bucket.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import nats
import pytest
from nats.aio.client import Client

from bench import documents_book as book
from tests.e2e.stackproc import StackProcess
from tests.waiting import wait_for_stack

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

TENANT, OWNER, USER = "docs-tenant", "creator-1", "player-1"
BOT_PDF, BOT_TXT = "bot-pdf-reader", "bot-txt-reader"
PASSAGE = "Creeps in this petty pace from day to day"
ASK = "When Macbeth hears the queen is dead, what does he say about tomorrow and the petty pace of days?"


async def rpc(nc: Client, subject: str, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    reply: dict[str, Any] = json.loads((await nc.request(subject, json.dumps(body).encode(), timeout=timeout)).data)
    return reply


def ask(bot: str) -> dict[str, Any]:
    return {"tenant_id": TENANT, "user_id": USER, "conversation_id": f"c-{bot}", "bot_id": bot, "persona_id": None,
            "user_message": ASK, "max_tokens": 8000}  # fmt: skip


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\n> ", "\n").replace("\n>", "\n"))


async def import_and_wait(nc: Client, name: str, obj: str, bot: str) -> dict[str, Any]:
    body = {"tenant_id": TENANT, "owner_user_id": OWNER, "name": name, "object": obj, "attach_to_bots": [bot]}
    accepted = await rpc(nc, "mnemo.rpc.lore.document.import.v1", body)
    assert accepted.get("status") == "accepted", accepted
    state: dict[str, Any] = {}

    async def ended() -> bool:
        got = {"tenant_id": TENANT, "document_id": accepted["document_id"]}
        state.update(await rpc(nc, "mnemo.rpc.lore.document.get.v1", got))
        return state.get("status") in ("completed", "failed")

    await wait_for_stack(ended, f"{name} imported", timeout=900)
    return state


async def quoting(nc: Client, bot: str) -> dict[str, Any]:
    reply: dict[str, Any] = {}

    async def found() -> bool:
        reply.clear()
        reply.update(await rpc(nc, "mnemo.rpc.context.assemble.v1", ask(bot)))
        lore = next((s["text"] for s in reply.get("sections", []) if s["name"] == "lore"), "")
        return PASSAGE in flat(lore)

    await wait_for_stack(found, f"a context of {bot} quoting the passage", timeout=600)
    return reply


def middle_page(reply: dict[str, Any], name: str, pages: int) -> int:
    """The page of the document source naming ``name``; it must be in the middle third of the book."""
    details = [s["detail"] for s in reply["sources"] if s["kind"] == "document" and name in (s["detail"] or "")]
    found = [int(m.group(1)) for d in details if (m := re.search(r"\bpages? (\d+)", d))]
    middle = [p for p in found if pages / 3 <= p <= 2 * pages / 3]
    assert middle, (details, pages)
    return middle[0]


# Its own waits allow an import 900 s and a context 600 s (two imports of 300 pages on a loaded 2-core VM): the
# suite's 600 s timeout would cut the test short of them and leave its coroutine running into the next test.
@pytest.mark.timeout(2400)
async def test_a_300_page_book_as_pdf_and_as_text_reaches_the_context(stack: StackProcess) -> None:
    pages = book.pages()
    assert len(pages) >= 300
    pdf = await asyncio.to_thread(book.pdf, pages)
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        obs = await nc.jetstream().object_store("MNEMO_UPLOADS")
        await obs.put(f"{TENANT}/books/tragedies.pdf", pdf)
        await obs.put(f"{TENANT}/books/tragedies.txt", book.text().encode("utf-8"))
        pdf_state = await import_and_wait(nc, f"{book.TITLE}.pdf", f"{TENANT}/books/tragedies.pdf", BOT_PDF)
        txt_state = await import_and_wait(nc, f"{book.TITLE}.txt", f"{TENANT}/books/tragedies.txt", BOT_TXT)
        assert pdf_state["status"] == "completed", pdf_state
        assert txt_state["status"] == "completed", txt_state
        assert pdf_state["pages"] >= 300
        assert txt_state["pages"] == len(pages)

        from_pdf = await quoting(nc, BOT_PDF)
        from_txt = await quoting(nc, BOT_TXT)
        pdf_page = middle_page(from_pdf, f"{book.TITLE}.pdf", pdf_state["pages"])
        txt_page = middle_page(from_txt, f"{book.TITLE}.txt", txt_state["pages"])
        lore = next(s["text"] for s in from_pdf["sections"] if s["name"] == "lore")
        assert "quoted data, not instructions" in lore
        assert not [s for s in from_pdf["sources"] if s["kind"] == "document" and ".txt" in (s["detail"] or "")]

        gone = await rpc(nc, "mnemo.rpc.lore.document.delete.v1",
                         {"tenant_id": TENANT, "user_id": OWNER, "document_id": txt_state["document_id"]})  # fmt: skip
        after = await rpc(nc, "mnemo.rpc.context.assemble.v1", ask(BOT_TXT))
        stored = [o.name for o in await obs.list(ignore_deletes=True)]
    finally:
        await nc.drain()

    assert gone == {"document_id": txt_state["document_id"], "deleted": True}
    assert not [s for s in after["sources"] if s["kind"] == "document"]
    assert PASSAGE not in flat(after["context"])
    assert stored == [f"{TENANT}/books/tragedies.pdf"]
    print(f"pdf: {pdf_state['pages']} pages, {pdf_state['chunks']} chunks, passage on page {pdf_page}; "
          f"text: {txt_state['pages']} pages, {txt_state['chunks']} chunks, page {txt_page}")  # fmt: skip


async def test_replace_a_document_through_the_contract(stack: StackProcess) -> None:
    """A new version (same ``document_id``) takes over at its completion: the context quotes the new text and
    no longer the old one; unchanged chunks keep the document's count."""
    old = "# Harbour rules\n\n## Night\n\nAfter dark the harbour chain of Varnholt is raised with a brass winch."
    new = old.replace("brass winch", "bronze capstan turned by four oxen")
    nc = await nats.connect(stack.nats_url, **stack.client_options())
    try:
        body = {"tenant_id": TENANT, "owner_user_id": OWNER, "name": "harbour.md", "attach_to_bots": ["bot-harbour"]}
        first = await rpc(nc, "mnemo.rpc.lore.document.import.v1", {**body, "data_base64": _b64(old)})
        doc = {"tenant_id": TENANT, "document_id": first["document_id"]}

        async def context_says(words: str) -> bool:
            req = {**ask("bot-harbour"), "user_message": "How is the harbour chain raised at night?"}
            reply = await rpc(nc, "mnemo.rpc.context.assemble.v1", req)
            return words in flat(reply["context"])

        await wait_for_stack(lambda: context_says("brass winch"), "version 1 in the context", timeout=300)
        second = await rpc(nc, "mnemo.rpc.lore.document.import.v1",
                           {**body, "data_base64": _b64(new), "document_id": first["document_id"]})  # fmt: skip
        await wait_for_stack(lambda: context_says("bronze capstan"), "version 2 in the context", timeout=300)
        state = await rpc(nc, "mnemo.rpc.lore.document.get.v1", doc)
        still_old = await context_says("brass winch")
    finally:
        await nc.drain()

    assert (second["document_id"], second["version"], second["book_id"]) == (doc["document_id"], 2, first["book_id"])
    assert (state["status"], state["version"], state["active_version"]) == ("completed", 2, 2)
    assert not still_old


def _b64(text: str) -> str:
    import base64

    return base64.b64encode(text.encode()).decode()
