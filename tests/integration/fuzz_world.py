"""The world the bad-input suite runs against: every service that serves a public subject (ingest, the
context-assembler, lore, memory, the memory-extractor) in-process on the session's servers, and tenant A's
data (a conversation with a secret, a learned fact, two memories, a lorebook) whose ids other tenants ask for.
Also the valid payload of each public subject, from the contract registry's examples with random values."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st
from nats.js.api import RawStreamMsg

from mnemo.services.context_assembler.app import create_router as context_router
from mnemo.services.ingest.app import create_router as ingest_router
from mnemo.services.lore.app import create_router as lore_router
from mnemo.services.memory.app import create_router as memory_router
from mnemo.services.memory_extractor.app import create_router as extractor_router
from mnemo.services.privacy.app import create_router as privacy_router
from mnemo.shared import subjects
from mnemo.shared.aggregates.documents import document_id_for
from mnemo.shared.aggregates.memories import memory_id_for
from mnemo.shared.embedders.bundled import BundledEmbedder
from mnemo.shared.events.envelope import deterministic_id
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from mnemo.shared.settings import LimitsSettings
from tests.integration.fuzz_cases import ascii_ids, ids, texts
from tests.integration.ingest_stack import Stack, running
from tests.integration.test_memory_rpc import seed, summary
from tests.waiting import request_reply, wait_until

OWNER, USER, BOT, PERSONA, CAMPAIGN = "owner-1", "u1", "bard", "ana", "kestrel"
SECRET = "the vault code is swordfish"
SECRET_LORE = "Kestrel's hidden hold carries stolen moon-silver."
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
#: UTC, other offsets, and none: the model accepts a naive time (as UTC), so ingest must record it.
ZONES = st.sampled_from([UTC, timezone(timedelta(hours=-7)), timezone(timedelta(hours=5, minutes=45))]) | st.none()
#: The ends of the calendar, in UTC (``fuzz_cases.WRONG_VALUES`` has times that are out of range in UTC).
EDGE_TIMES = st.sampled_from(["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59", "1970-01-01T00:00:00Z"])  # fmt: skip


def _in_range(moment: datetime) -> bool:
    try:
        (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    except OverflowError:
        return False
    return True


MOMENTS = st.datetimes(timezones=ZONES).filter(_in_range).map(datetime.isoformat) | EDGE_TIMES
Payload = dict[str, Any]
EDITED_TEXT = "The bard and Ana mended the sail at Port Vell."
Setup = tuple[tuple[str, Payload], ...]


@dataclass
class World:
    stack: Stack
    tenant: str  # tenant A: its ids are asked for by other tenants and other users
    book: str
    fact: str
    memory: str = "s1"  # converted to lore again and again, never deleted
    doomed_memory: str = "s-del"  # deleted (then deleting again answers deleted: false)
    edited_memory: str = "s-edit"  # edited once to EDITED_TEXT (then the same edit again answers changed: false)
    dlq_seen: int = 0  # the DLQ stream's last sequence already read

    async def call(self, subject: str, payload: Payload) -> Payload:
        reply = await request_reply(self.stack.nc, subject, json.dumps(payload).encode(), timeout=30)
        result: Payload = json.loads(reply.data)
        return result

    async def new_letters(self) -> list[RawStreamMsg]:
        """Dead letters (of every service) added since the last call."""
        js = self.stack.js
        last = (await js.stream_info(subjects.DLQ_STREAM)).state.last_seq
        letters = [await js.get_msg(subjects.DLQ_STREAM, seq) for seq in range(self.dlq_seen + 1, last + 1)]
        self.dlq_seen = last
        return letters


def chat_message(tenant: str, user: str, conv: str, message_id: str, content: str, minute: int = 0) -> Payload:
    return {"tenant_id": tenant, "user_id": user, "conversation_id": conv, "message_id": message_id,
            "role": "user", "author_id": PERSONA, "author_name": "Ana", "content": content,
            "created_at": (T0 + timedelta(minutes=minute)).isoformat(), "bot_ids": [BOT], "persona_id": PERSONA}  # fmt: skip


@contextlib.asynccontextmanager
async def world(nats_url: str, mongo_url: str) -> AsyncIterator[World]:
    routers = [ingest_router, context_router, lore_router, memory_router, extractor_router, privacy_router]
    db = f"fuzz_{uuid.uuid4().hex[:10]}"
    # No request rate limit: the fuzzer sends far faster than a tenant's default rate, and every valid request
    # must get its reply (the rate limit has its own tests: tests/lore/component/test_lore_limits.py).
    unlimited = LimitsSettings(rpc_per_second=0)
    async with running(nats_url, mongo_url, db, routers, embedder=BundledEmbedder(), limits=unlimited) as stack:
        tenant = f"tenant-a-{uuid.uuid4().hex[:8]}"
        for i, text in enumerate(["I live in Port Vell.", f"Remember: {SECRET}."]):
            await stack.js.publish(subjects.MESSAGE_CREATED, json.dumps(chat_message(tenant, USER, "c1", f"m{i}", text, i)).encode())  # fmt: skip
        knowledge = KnowledgeReadModel(stack.db, stack.deps.cipher)
        await wait_until(lambda: knowledge.facts_for(tenant, BOT, user_id=USER), "the bard learned a fact", 90)
        [fact, *_] = await knowledge.facts_for(tenant, BOT, user_id=USER)
        await seed(stack, tenant, [summary("s1", 0), summary("s-del", 1), summary("s-edit", 2)])
        w = World(stack, tenant, book=f"book-{uuid.uuid4().hex[:8]}", fact=fact.fact_id)
        created = await w.call(subjects.LORE_BOOK_CREATE, {"tenant_id": tenant, "owner_user_id": OWNER, "name": "Kestrel lore", "lorebook_id": w.book, "attach_to_bots": [BOT]})  # fmt: skip
        entry = await w.call(subjects.LORE_ENTRY_CREATE, {"tenant_id": tenant, "user_id": OWNER, "lorebook_id": w.book, "entry": {"key": ["Kestrel"], "content": SECRET_LORE}})  # fmt: skip
        assert created["created"], created
        assert entry["changed"], entry
        await w.new_letters()
        yield w


# --- valid requests: (payload, setup requests that must succeed first) ---------------------------------
def _scratch_book(tenant: str, book: str, *, entry: bool) -> Setup:
    create = {"tenant_id": tenant, "owner_user_id": OWNER, "name": f"scratch {book}", "lorebook_id": book,
              "attach_to_bots": [scratch_bot(book)]}  # fmt: skip
    first = {"tenant_id": tenant, "user_id": OWNER, "lorebook_id": book, "entry": {"uid": 0, "content": "x"}}
    return ((subjects.LORE_BOOK_CREATE, create),) + (((subjects.LORE_ENTRY_CREATE, first),) if entry else ())


def scratch_bot(book: str) -> str:
    """The bot a scratch book is attached to: a context request for it activates the book's entries."""
    return f"bot-{book}"


def _owned(tenant: str, **fields: Any) -> Payload:
    return {"tenant_id": tenant, "user_id": OWNER, **fields}


def scratch_tenant(w: World, book: str) -> str:
    """The tenant of a case's scratch book or document: one per case, so that tenant A stays the same size
    however many cases run (in tenant A, ``lore.list``, which reads all of a tenant's books to sort them by
    their encrypted names, and the lists of documents cost more with every case: 0.2 to 0.9 min per 1,000
    cases over the first 11,000 of the 100,000-case run)."""
    return f"{w.tenant}-{book}"


@st.composite
def _valid_rpc(draw: st.DrawFn, w: World, subject: str) -> tuple[Payload, Setup]:
    book = draw(st.builds(lambda: f"scratch-{uuid.uuid4().hex[:12]}"))
    scratch = scratch_tenant(w, book)
    if subject == subjects.CONTEXT_ASSEMBLE:
        return {"tenant_id": draw(ids), "user_id": draw(ids), "conversation_id": draw(ids), "bot_id": draw(ids),
                "persona_id": draw(st.none() | ids), "campaign_id": draw(st.none() | ids),
                "user_message": draw(texts), "max_tokens": draw(st.integers(64, 20_000))}, ()  # fmt: skip
    if subject == subjects.LORE_IMPORT:
        entry = {"uid": 0, "key": [draw(ids)], "content": draw(texts)}
        return {"tenant_id": draw(ids), "owner_user_id": draw(ids), "name": draw(ids), "format": "auto",
                "data": {"entries": {"0": entry}}, "attach_to_bots": draw(st.lists(ids, max_size=2))}, ()  # fmt: skip
    if subject == subjects.LORE_EXPORT:
        return {"tenant_id": w.tenant, "lorebook_id": w.book}, ()
    if subject == subjects.LORE_TEST_ACTIVATION:
        return {"tenant_id": w.tenant, "lorebook_ids": [w.book], "bot_id": draw(st.none() | st.just(BOT)),
                "text": draw(texts) or "Kestrel", "history": draw(st.lists(texts, max_size=3)),
                "max_tokens": draw(st.integers(64, 20_000))}, ()  # fmt: skip
    if subject == subjects.LORE_LIST:
        return {"tenant_id": w.tenant, "owner_user_id": draw(st.none() | st.just(OWNER)), "bot_id": draw(st.none() | st.just(BOT)),
                "limit": draw(st.integers(1, 1000)), "offset": draw(st.integers(0, 3))}, ()  # fmt: skip
    if subject == subjects.LORE_ATTACH:
        return _owned(scratch, lorebook_id=book, bot_ids=draw(st.lists(ids, min_size=1, max_size=3))), _scratch_book(scratch, book, entry=False)  # fmt: skip
    if subject == subjects.LORE_DETACH:
        return _owned(scratch, lorebook_id=book, bot_ids=draw(st.lists(ids, min_size=1, max_size=3)), conversation=None), _scratch_book(scratch, book, entry=False)  # fmt: skip
    if subject == subjects.LORE_BOOK_CREATE:
        return {"tenant_id": draw(ids), "owner_user_id": draw(ids), "name": draw(ids), "description": draw(texts),
                "attach_to_bots": draw(st.lists(ids, max_size=2))}, ()  # fmt: skip
    if subject == subjects.LORE_BOOK_DELETE:
        return _owned(scratch, lorebook_id=book), _scratch_book(scratch, book, entry=False)
    if subject == subjects.LORE_BOOK_RENAME:
        return _owned(scratch, lorebook_id=book, name=draw(ids)), _scratch_book(scratch, book, entry=False)
    if subject == subjects.LORE_ENTRY_CREATE:
        entry = {"key": [draw(ids)], "content": draw(texts), "activationMode": draw(st.sampled_from(["keyword", "vector", "hybrid"]))}  # fmt: skip
        return _owned(scratch, lorebook_id=book, entry=entry), _scratch_book(scratch, book, entry=False)
    if subject == subjects.LORE_ENTRY_UPDATE:
        return _owned(scratch, lorebook_id=book, uid=0, changes={"content": draw(texts)}), _scratch_book(scratch, book, entry=True)  # fmt: skip
    if subject == subjects.LORE_ENTRY_DELETE:
        return _owned(scratch, lorebook_id=book, uid=0), _scratch_book(scratch, book, entry=True)
    if subject in (subjects.PRIVACY_ERASE_USER, subjects.PRIVACY_EXPORT_USER):
        # Users of their own tenants: erasing tenant A's would pull the world from under the other cases.
        return {"tenant_id": draw(ids), "user_id": draw(ids)}, ()
    if subject == subjects.PRIVACY_ERASE_TENANT:
        return {"tenant_id": draw(ids), "confirm": "erase"}, ()
    if subject == subjects.LORE_DOCUMENT_IMPORT:
        data = base64.b64encode(draw(texts).encode() or b"x").decode()
        return {"tenant_id": draw(ids), "owner_user_id": draw(ids), "name": f"{draw(ids)}.txt", "data_base64": data}, ()
    if subject == subjects.LORE_DOCUMENT_LIST:
        return {"tenant_id": w.tenant, "owner_user_id": draw(st.none() | st.just(OWNER)), "book_id": None}, ()
    if subject in (subjects.LORE_DOCUMENT_GET, subjects.LORE_DOCUMENT_DELETE):
        name, body = f"scratch-{book}.txt", f"Scratch notes {book}.".encode()
        upload = {"tenant_id": scratch, "owner_user_id": OWNER, "name": name, "data_base64": base64.b64encode(body).decode()}  # fmt: skip
        document = document_id_for(scratch, OWNER, name, hashlib.sha256(body).hexdigest())
        target = {"tenant_id": scratch, "document_id": document}
        if subject == subjects.LORE_DOCUMENT_DELETE:
            target["user_id"] = OWNER
        return target, ((subjects.LORE_DOCUMENT_IMPORT, upload),)
    if subject in MEMORY_API:
        return draw(_memory_api(w, subject, scratch, book))
    if subject == subjects.CONVERSATION_LIST:
        return {"tenant_id": w.tenant, "user_id": draw(st.none() | st.just(USER)), "limit": draw(st.integers(1, 50)),
                "offset": draw(st.integers(0, 3))}, ()  # fmt: skip
    if subject == subjects.CONVERSATION_TIMELINE:
        return {"tenant_id": w.tenant, "user_id": USER, "conversation_id": "c1", "from_index": draw(st.integers(0, 3)),
                "limit": draw(st.integers(1, 200))}, ()  # fmt: skip
    mine = {"tenant_id": w.tenant, "user_id": USER}
    if subject == subjects.CONVERSATION_LIST:
        return {"tenant_id": w.tenant, "user_id": draw(st.none() | st.just(USER)), "limit": draw(st.integers(1, 200)),
                "offset": draw(st.integers(0, 3))}, ()  # fmt: skip
    if subject == subjects.CONVERSATION_TIMELINE:
        return {**mine, "conversation_id": "c1", "from_index": draw(st.integers(0, 3)), "limit": draw(st.integers(1, 500))}, ()  # fmt: skip
    if subject == subjects.KNOWLEDGE_FACT_LIST:
        return {**mine, "character_id": draw(st.none() | st.just(BOT)), "include_inactive": draw(st.booleans()),
                "limit": draw(st.integers(1, 200))}, ()  # fmt: skip
    if subject == subjects.KNOWLEDGE_FACT_HISTORY:
        return {**mine, "fact_id": w.fact}, ()
    if subject == subjects.KNOWLEDGE_FACT_ADD:
        return {"tenant_id": draw(ids), "user_id": draw(ids), "character_id": draw(ids), "text": draw(texts) or "x",
                "fact_type": draw(st.sampled_from(["semantic", "episodic"])), "tags": draw(st.lists(ascii_ids, max_size=3))}, ()  # fmt: skip
    if subject in (subjects.KNOWLEDGE_FACT_EDIT, subjects.KNOWLEDGE_FACT_RETRACT):
        # A fact of its own, added by hand in the case's scratch tenant: tenant A's fact stays current.
        add = _owned(scratch, character_id=BOT, text=f"Scratch fact {book}.", idempotency_key=book)
        target = _owned(scratch, fact_id=deterministic_id("knowledge.manual", scratch, OWNER, BOT, book))
        if subject == subjects.KNOWLEDGE_FACT_EDIT:
            target["text"] = draw(texts) or "y"
        return target, ((subjects.KNOWLEDGE_FACT_ADD, add),)
    if subject == subjects.MEMORY_CONVERT_TO_LORE:
        return {**mine, "memory_id": w.memory, "applies_to_bots": draw(st.lists(ids, min_size=1, max_size=3)),
                "applies_to_personas": [PERSONA], "title": draw(st.none() | ids)}, ()  # fmt: skip
    if subject == subjects.MEMORY_DELETE:
        return {**mine, "memory_id": w.doomed_memory}, ()
    if subject == subjects.MEMORY_EDIT:
        return {**mine, "memory_id": w.edited_memory, "text": EDITED_TEXT}, ()
    if subject == subjects.MEMORY_LIST:
        return {**mine, "source": draw(st.sampled_from(["memory", "knowledge", "all"])), "type": None,
                "bot_id": draw(st.none() | st.just(BOT)), "converted_to_lore": draw(st.none() | st.booleans()),
                "limit": draw(st.integers(1, 200)), "offset": draw(st.integers(0, 100))}, ()  # fmt: skip
    if subject == subjects.MEMORY_PROMOTE:
        return {**mine, "fact_id": w.fact, "campaign_id": CAMPAIGN}, ()
    if subject == subjects.CHAT_IMPORT:
        return {**mine, "content": sillytavern_chat(draw(texts)), "bot_id": BOT, "dry_run": draw(st.booleans())}, ()
    assert subject == subjects.MEMORY_UNPROMOTE, subject
    return {**mine, "fact_id": w.fact}, ()


def sillytavern_chat(text: str) -> str:
    """A SillyTavern chat file of one message saying ``text``."""
    header = {"user_name": "Mira", "character_name": "Maren", "create_date": "2024-5-12 @14h 33m 22s 123ms"}
    line = {"name": "Maren", "is_user": False, "send_date": "2024-5-12 @14h 33m 40s 5ms", "mes": text or "..."}
    return "\n".join(json.dumps(x) for x in (header, line))


MEMORY_API = {*subjects.MEMORY_PLAYER_CALLS, *subjects.MEMORY_ENGINE_CALLS}
MEMORY_TYPES = st.sampled_from(["episodic", "semantic", "declarative", "procedural"])
ASSETS = st.lists(
    st.builds(lambda n: {"uri": f"https://cdn.example/{n}.png", "media_type": "image/png"}, ascii_ids), max_size=2
)


@st.composite
def _memory_api(draw: st.DrawFn, w: World, subject: str, scratch: str, key: str) -> tuple[Payload, Setup]:
    """The memory API's calls; update, forget and history on a memory of the case's scratch tenant, made by a
    remember with the case's idempotency key (so its id is known before the call)."""
    engine = subject in subjects.MEMORY_ENGINE_CALLS
    if subject in (subjects.MEMORY_REMEMBER, subjects.MEMORY_ENGINE_REMEMBER):
        namespace = (
            draw(st.sampled_from([f"player:{USER}", f"campaign:{CAMPAIGN}", f"character:{BOT}"]))
            if engine
            else f"player:{USER}"
        )
        return {"tenant_id": w.tenant, "user_id": USER, "owner_namespace": namespace, "type": draw(MEMORY_TYPES),
                "content": draw(texts) or "x", "tags": draw(st.lists(ascii_ids, max_size=3)), "assets": draw(ASSETS),
                "metadata": {"session_id": draw(ascii_ids)},
                # the case's own key: a key drawn at random repeats across cases with other contents, which the
                # API rightly refuses (a key made another memory)
                "idempotency_key": draw(st.none() | st.just(key))}, ()  # fmt: skip
    if subject == subjects.MEMORY_SEARCH:
        return {"tenant_id": w.tenant, "user_id": USER, "query": draw(texts), "types": draw(st.none() | st.lists(MEMORY_TYPES, max_size=2)),
                "bot_id": draw(st.none() | st.just(BOT)), "limit": draw(st.integers(1, 100)),
                "recency_half_life_days": draw(st.none() | st.floats(0, 1000))}, ()  # fmt: skip
    made = {"tenant_id": scratch, "user_id": USER, "owner_namespace": f"player:{USER}", "type": "episodic",
            "content": f"Scratch memory {key}.", "idempotency_key": key}  # fmt: skip
    target = {"tenant_id": scratch, "user_id": USER, "memory_id": memory_id_for(scratch, USER, key)}
    if subject in (subjects.MEMORY_UPDATE, subjects.MEMORY_ENGINE_UPDATE):
        target |= {"content": draw(texts) or "x", "tags": draw(st.none() | st.lists(ascii_ids, max_size=2))}
    return target, ((subjects.MEMORY_REMEMBER, made),)


def valid_rpc(w: World, subject: str) -> st.SearchStrategy[tuple[Payload, Setup]]:
    return _valid_rpc(w, subject)


# --- valid chat events: each case is its own tenant (the marker), so its dead letters are told apart ----
def valid_event(subject: str, tenant: str) -> st.SearchStrategy[tuple[Payload, tuple[tuple[str, Payload], ...]]]:
    def build(draw: Callable[[st.SearchStrategy[Any]], Any]) -> tuple[Payload, tuple[tuple[str, Payload], ...]]:
        conv, message_id, moment = draw(ids), draw(ids), draw(MOMENTS)
        created = chat_message(tenant, tenant, conv, message_id, draw(texts))
        created.update(created_at=moment, role=draw(st.sampled_from(["user", "assistant", "system", "narrator"])),
                       author_name=draw(texts), bot_ids=draw(st.lists(ids, max_size=3)), persona_id=draw(st.none() | ids))  # fmt: skip
        ref = {"tenant_id": tenant, "user_id": tenant, "conversation_id": conv, "message_id": message_id}
        if subject == subjects.MESSAGE_CREATED:
            return created, ()
        if subject == subjects.MESSAGE_EDITED:
            return {**ref, "edit_id": draw(st.none() | ids), "content": draw(texts), "edited_at": moment}, ((subjects.MESSAGE_CREATED, created),)  # fmt: skip
        if subject == subjects.MESSAGE_DELETED:
            return {**ref, "deleted_at": moment}, ((subjects.MESSAGE_CREATED, created),)
        if subject == subjects.MESSAGE_SWIPE_SELECTED:  # the original selected back after a swipe
            swipe = {**created, "message_id": draw(ids.filter(lambda i: i != message_id)), "swipe_of": message_id}
            setup = ((subjects.MESSAGE_CREATED, created), (subjects.MESSAGE_CREATED, swipe))
            return {**ref, "selected_at": moment}, setup
        if subject == subjects.CONVERSATION_FORKED:
            fork = {"tenant_id": tenant, "user_id": tenant, "conversation_id": draw(ids.filter(lambda c: c != conv)),
                    "parent_conversation_id": conv, "from_message_id": message_id, "forked_at": moment}  # fmt: skip
            return fork, ((subjects.MESSAGE_CREATED, created),)
        if subject == subjects.BOT_UPSERTED:
            return {"tenant_id": tenant, "bot_id": tenant, "name": draw(ids), "system_prompt": draw(texts),
                    "gender": draw(st.none() | ascii_ids), "age": draw(st.none() | ascii_ids),
                    "knowledge_sharing": draw(st.sampled_from([None, "open", "guarded", "secretive"])),
                    "updated_at": moment}, ()  # fmt: skip
        assert subject == subjects.PERSONA_UPSERTED, subject
        return {"tenant_id": tenant, "user_id": tenant, "persona_id": draw(ids), "name": draw(ids),
                "description": draw(texts), "traits": draw(st.lists(ascii_ids, max_size=4)),
                "instructions": draw(texts), "updated_at": moment}, ()  # fmt: skip

    return st.composite(lambda draw: build(draw))()
