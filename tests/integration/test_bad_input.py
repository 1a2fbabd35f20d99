"""Bad input at scale (issue 14): Hypothesis throws malformed JSON, invalid UTF-8, wrong types, missing and
unknown fields, oversized payloads, unknown subject versions, other tenants' ids and replayed ids at every
public subject of one real stack (``fuzz_world``), and checks the contract's promise:

- every request is answered within the deadline: a bad one with ``{"error": {"code", "message"}}`` naming the
  problem, a valid one with its reply; another tenant's (or user's) id is ``not_found`` and shows nothing of
  tenant A; an unknown version of a request subject has no responders (nothing listens there);
- every bad chat event is on ``mnemo.dlq.ingest.v1`` once, with its reason; every valid one is recorded (once,
  however often it is replayed), including the canary published after each batch: the stream goes on;
- no service dead-letters anything else, and the services still answer at the end.

``MNEMO_FUZZ_EXAMPLES`` is the number of cases per test (sent in concurrent batches of ``BATCH``); the default
keeps the file near a minute or two here, ``make fuzz`` runs 100,000 (hours: above the default, each test
prints a progress line every ``PROGRESS_EVERY`` cases).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import re
import string
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, event, given, settings
from hypothesis import strategies as st
from nats.errors import MaxPayloadError, NoRespondersError
from nats.js.api import RawStreamMsg

from mnemo.runtime.servers import ChildServer
from mnemo.shared import rpc, subjects
from mnemo.shared.contract_registry import OPERATIONS
from mnemo.shared.delivery import DLQ_REASON
from mnemo.shared.events.recorded import bot_stream, conversation_stream, persona_stream
from mnemo.shared.lore.model import LoreEntry
from mnemo.shared.partitions import ingest_drained
from tests.integration.fuzz_cases import Bad, free_form, json_values, marker, mutations, texts
from tests.integration.fuzz_world import (
    SECRET,
    SECRET_LORE,
    USER,
    Payload,
    Setup,
    World,
    chat_message,
    scratch_bot,
    valid_event,
    valid_rpc,
    world,
)
from tests.waiting import wait_until

pytestmark = pytest.mark.integration

CASES = int(os.environ.get("MNEMO_FUZZ_EXAMPLES", "1000"))
BATCH = 25
DEADLINE_S = 30.0
PROGRESS_EVERY = 1000
FUZZ = settings(
    max_examples=max(1, CASES // BATCH),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    # No shrinking: a failing batch is reported as drawn (shrinking against live servers takes many minutes).
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
# The subjects and their models come from the contract registry, the table the clients and the docs are built
# from: what is fuzzed here is what the contract promises.
RPCS: dict[str, type[Any]] = {op.subject: op.payload for op in OPERATIONS if op.kind == "request"}
EVENTS: dict[str, type[Any]] = {op.subject: op.payload for op in OPERATIONS if op.kind == "event"}
# Documents have their own bad-input suite (tests/integration/test_documents.py: encrypted, scanned, truncated,
# zip-bomb, oversized and mislabelled files): here each valid import would start a parsing subprocess, and a
# thousand of them starve the shared servers of this test.
DOCUMENTS = {
    subjects.LORE_DOCUMENT_IMPORT,
    subjects.LORE_DOCUMENT_GET,
    subjects.LORE_DOCUMENT_LIST,
    subjects.LORE_DOCUMENT_DELETE,
}
# The operators' subjects name no tenant (``mnemo.rpc.ops.*``, the ``admin`` NATS user only): the variants here
# (another tenant, another user) do not apply; their bad input is checked where they are tested.
OPERATORS = {subjects.OPS_USAGE}
# Read beside the vector index, which this stack runs without (it answers `unavailable`): its bad input and
# tenant scoping are checked on Qdrant Edge in tests/context_assembler/component/test_index_status.py.
INDEX_READS = {subjects.MEMORY_INDEX_STATUS}
REQUESTS = {subject: model for subject, model in RPCS.items() if subject not in DOCUMENTS | OPERATORS | INDEX_READS}
# Subjects naming one of tenant A's objects: another tenant (or user) gets not_found. The others create or
# read by their own keys: another tenant gets its own (empty) answer.
BY_ID = set(REQUESTS) - {
    subjects.CONTEXT_ASSEMBLE,
    subjects.LORE_IMPORT,
    subjects.LORE_BOOK_CREATE,
    subjects.LORE_LIST,
    subjects.MEMORY_LIST,
    subjects.CONVERSATION_LIST,
    subjects.MEMORY_REMEMBER,
    subjects.MEMORY_ENGINE_REMEMBER,
    subjects.MEMORY_SEARCH,
    subjects.PRIVACY_ERASE_USER,
    subjects.PRIVACY_ERASE_TENANT,
    subjects.PRIVACY_EXPORT_USER,
    subjects.LORE_DOCUMENT_IMPORT,
    subjects.LORE_DOCUMENT_LIST,
    subjects.CONVERSATION_LIST,
    subjects.KNOWLEDGE_FACT_LIST,
    subjects.KNOWLEDGE_FACT_ADD,
    subjects.CHAT_IMPORT,  # a chat file brings its own conversation: another tenant imports it as theirs
}
# No acting user: the tenant reads.
OWNER_CHECKED = BY_ID - {subjects.LORE_EXPORT, subjects.LORE_DOCUMENT_GET, subjects.LORE_TEST_ACTIVATION}
MARKER = re.compile(rb"fz[0-9a-f]{32}")
assert set(RPCS) | set(EVENTS) == {*subjects.CHAT_INBOUND, *(s for s in vars(subjects).values() if isinstance(s, str) and s.startswith("mnemo.rpc."))}  # fmt: skip


@pytest.fixture(scope="module")
async def fuzz_world(nats_server: ChildServer, mongo_server: ChildServer) -> AsyncIterator[World]:
    async with world(nats_server.url, mongo_server.url) as w:
        yield w


# --- request-reply ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Request:
    subject: str
    setup: Setup
    bad: Bad
    then: Payload | None = None  # a context request that must then be answered (the book is in use)


def _typed(annotation: Any) -> st.SearchStrategy[Any]:
    """Values of an entry field's type at its edges: 80-bit integers, non-finite floats, odd unicode."""
    kind = str(annotation)
    if "Literal" in kind:
        return st.sampled_from(["keyword", "vector", "hybrid"])
    ints, floats = st.integers(-(2**80), 2**80) | st.integers(-5, 5), st.floats()
    choices = {"bool": st.booleans(), "int": ints, "float": ints | floats, "str": texts, "list[str]": st.lists(texts, max_size=4)}  # fmt: skip
    found = [v for k, v in choices.items() if k in kind]
    return st.one_of(found or [json_values]) | (st.none() if "None" in kind else st.nothing())


#: A plausible entry: each chosen field of its own type, at the edges (``json_values`` for anything else).
typed_entries = st.fixed_dictionaries(
    {}, optional={(f.alias or name): _typed(f.annotation) for name, f in LoreEntry.model_fields.items()}
)
ENTRY_KEYS = sorted({*LoreEntry.model_fields, *(f.alias for f in LoreEntry.model_fields.values() if f.alias)})
FREE_FORM = {subjects.LORE_IMPORT, subjects.LORE_ENTRY_CREATE, subjects.LORE_ENTRY_UPDATE}


@st.composite
def free_form_request(draw: st.DrawFn, w: World, subject: str, payload: Payload, setup: Setup) -> Request:
    """A lorebook file or entry of any JSON values: the reply may refuse it (``bad_request``), never fail
    (``internal``); once accepted, the context of a bot the book is attached to is still assembled."""
    ask_ = {"tenant_id": w.tenant, "user_id": USER, "conversation_id": "c1", "user_message": draw(st.sampled_from(ENTRY_KEYS) | texts)}  # fmt: skip
    if subject == subjects.LORE_IMPORT:
        entries = st.dictionaries(st.text(max_size=6), typed_entries | free_form(ENTRY_KEYS), max_size=4)
        data = draw(st.fixed_dictionaries({"entries": entries}) | free_form(["entries", "name", "data", "spec", "character_book"]))  # fmt: skip
        payload = {**payload, "attach_to_bots": ["fuzz-bot"], "data": data}
        if draw(st.booleans()):
            payload = {**payload, "data": None, "data_base64": draw(st.binary(max_size=300).map(lambda b: base64.b64encode(b).decode()) | st.text(max_size=60))}  # fmt: skip
        then = {**ask_, "tenant_id": payload["tenant_id"], "bot_id": "fuzz-bot"}
    else:
        key = "entry" if subject == subjects.LORE_ENTRY_CREATE else "changes"
        payload = {**payload, key: draw(typed_entries | free_form(ENTRY_KEYS))}
        then = {**ask_, "tenant_id": payload["tenant_id"], "bot_id": scratch_bot(payload["lorebook_id"])}
    return Request(subject, setup, Bad("free_form", _json(payload), "not_internal"), then)


@st.composite
def requests(draw: st.DrawFn, w: World) -> Request:
    subject = draw(st.sampled_from(sorted(REQUESTS)))
    payload, setup = draw(valid_rpc(w, subject))
    variant = draw(st.sampled_from(["valid", "replay", "foreign_tenant", "foreign_user", "free_form", *["mutation"] * 5]))  # fmt: skip
    if variant == "free_form" and subject in FREE_FORM:
        return draw(free_form_request(w, subject, payload, setup))
    if variant == "mutation":
        return Request(subject, setup, draw(mutations(rpc.strict(REQUESTS[subject]), payload, bad="bad_request", strict=True)))  # fmt: skip
    if variant == "foreign_tenant":
        foreign = {**payload, "tenant_id": f"tenant-b-{uuid.uuid4().hex[:8]}"}
        return Request(subject, setup, Bad(variant, _json(foreign), "not_found" if subject in BY_ID else "ok"))
    if variant == "foreign_user" and subject in OWNER_CHECKED:
        return Request(subject, setup, Bad(variant, _json({**payload, "user_id": "someone-else"}), "not_found"))
    return Request(subject, setup, Bad(variant, _json(payload), "ok", replay=variant == "replay"))


def _json(payload: Payload) -> bytes:
    return json.dumps(payload, ensure_ascii=False).encode()


async def ask(w: World, subject: str, body: bytes) -> Payload:
    reply: Payload = json.loads((await w.stack.nc.request(subject, body, timeout=DEADLINE_S)).data)
    return reply


def erased_in(batch: list[Request]) -> frozenset[str]:
    """The tenants an erasure of the batch may empty while its other cases run (they run concurrently)."""
    found = set()
    for r in batch:
        if r.subject in (subjects.PRIVACY_ERASE_USER, subjects.PRIVACY_ERASE_TENANT):
            with contextlib.suppress(ValueError):
                body = json.loads(r.bad.body)
                if isinstance(body, dict) and isinstance(body.get("tenant_id"), str):
                    found.add(body["tenant_id"])
    return frozenset(found)


async def check_request(w: World, r: Request, erased: frozenset[str] = frozenset()) -> None:
    """``erased``: tenants the batch erases meanwhile (a book created again after that starts a new life)."""
    for subject, payload in r.setup:
        prepared = await w.call(subject, payload)
        assert "error" not in prepared, (subject, payload, prepared)
    bad, where = r.bad, f"{r.subject} {r.bad.kind}: {r.bad.body[:300]!r}"
    if bad.expect == "unknown_version":
        with pytest.raises(NoRespondersError):
            await w.stack.nc.request(r.subject.removesuffix(".v1") + bad.subject_suffix, bad.body, timeout=DEADLINE_S)  # type: ignore[operator]
        return
    reply = await ask(w, r.subject, bad.body)
    if bad.expect == "not_internal":
        assert reply.get("error", {}).get("code") in (None, "bad_request", "not_found"), (where, reply)
        event(f"{r.subject} free_form: {reply.get('error', {}).get('code', 'accepted')}")
        if "error" not in reply and r.then is not None:
            context = await ask(w, subjects.CONTEXT_ASSEMBLE, _json(r.then))
            assert "error" not in context, (where, r.then, context)
        return
    if bad.expect == "ok":
        assert "error" not in reply, (where, reply)
        if bad.replay:
            again = await ask(w, r.subject, bad.body)
            assert "error" not in again, (where, again)
            if r.subject == subjects.LORE_BOOK_CREATE:
                assert again["lorebook_id"] == reply["lorebook_id"], (where, reply, again)
                new_life = json.loads(bad.body)["tenant_id"] in erased
                assert again["created"] is False or new_life, (where, reply, again)
        if bad.kind == "foreign_tenant":  # another tenant's answer shows nothing of tenant A
            text = json.dumps(reply, ensure_ascii=False)
            assert not any(secret in text for secret in (SECRET, SECRET_LORE, "swordfish")), (where, reply)
            if r.subject in (
                subjects.MEMORY_LIST,
                subjects.LORE_LIST,
                subjects.CONVERSATION_LIST,
                subjects.KNOWLEDGE_FACT_LIST,
            ):
                assert reply["total"] == 0, (where, reply)
        return
    error = reply.get("error")
    assert isinstance(error, dict), (where, reply)
    assert set(error) == {"code", "message"}, (where, reply)
    assert error["code"] == bad.expect, (where, reply)
    assert not any(secret in error["message"] for secret in (SECRET, SECRET_LORE)), (where, reply)
    if bad.names:
        assert any(n in error["message"] for n in bad.names), (where, bad.names, reply)


_cases_done: Counter[str] = Counter()
_started: dict[str, float] = {}


def progress(config: pytest.Config, test: str) -> None:
    """One more batch of ``test`` done; every ``PROGRESS_EVERY`` cases of a long run, a line on the terminal."""
    started = _started.setdefault(test, time.monotonic())
    _cases_done[test] += BATCH
    done = _cases_done[test]
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if CASES > PROGRESS_EVERY and done % PROGRESS_EVERY == 0 and reporter is not None and capture is not None:
        minutes = (time.monotonic() - started) / 60
        with capture.global_and_fixture_disabled():  # a test's output is captured, this line is not
            reporter.write_line(f"{test}: {done:,} of {CASES:,} cases in {minutes:.1f} min")
            reporter.flush()  # seen at once when the output goes to a file


@FUZZ
@given(data=st.data())
async def test_every_request_gets_a_reply_naming_the_problem(
    fuzz_world: World, data: st.DataObject, pytestconfig: pytest.Config
) -> None:
    batch = data.draw(st.lists(requests(fuzz_world), min_size=BATCH, max_size=BATCH), label="requests")
    for r in batch:  # --hypothesis-show-statistics: how often each subject and kind was sent
        event(r.bad.kind)
        event(r.subject)
    erased = erased_in(batch)
    await asyncio.gather(*(check_request(fuzz_world, r, erased) for r in batch))
    progress(pytestconfig, "requests")


# --- chat events --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Event:
    subject: str
    tenant: str  # the case's marker
    payload: Payload
    setup: tuple[tuple[str, Payload], ...]
    bad: Bad
    headers: dict[str, str] = field(default_factory=dict)  # odd trace headers: ignored, never a failure


#: ``traceparent`` values a producer may get wrong: garbage, the invalid all-zero ids, an unknown version.
TRACEPARENTS = st.sampled_from(["", "garbage", "00-" + "0" * 32 + "-" + "0" * 16 + "-01", "ff-" + "a" * 32 + "-" + "b" * 16 + "-01", "00-xyz-abc-01"]) | st.text(alphabet=string.printable.strip(), max_size=80)  # fmt: skip


@st.composite
def events(draw: st.DrawFn) -> Event:
    subject, tenant = draw(st.sampled_from(sorted(EVENTS))), marker()
    payload, setup = draw(valid_event(subject, tenant))
    odd = draw(
        st.dictionaries(st.sampled_from(["traceparent", "tracestate", "Mnemo-Dlq-Reason"]), TRACEPARENTS, max_size=2)
    )
    variant = draw(st.sampled_from(["valid", "replay", "foreign_tenant", *["mutation"] * 5]))
    if variant == "mutation":
        return Event(subject, tenant, payload, setup, draw(mutations(EVENTS[subject], payload, bad="dead_letter", strict=False)), odd)  # fmt: skip
    if variant == "foreign_tenant" and setup:  # an edit or deletion of tenant A's message, sent as another tenant
        foreign = {**payload, "tenant_id": f"{tenant}-b"}
        return Event(subject, tenant, payload, setup, Bad(variant, _json(foreign), "dead_letter", ("not recorded",)), odd)  # fmt: skip
    return Event(subject, tenant, payload, setup, Bad(variant, _json(payload), "ok", replay=variant == "replay"), odd)


async def publish(w: World, e: Event) -> None:
    # A platform waits for its ack as long as it takes; the default 5 s is short on a loaded 2-core machine while
    # the documents fuzzed just before are still being parsed and embedded.
    js = w.stack.nc.jetstream(timeout=30)
    for i, (subject, payload) in enumerate(e.setup):
        await js.publish(subject, _json(payload), headers={"Nats-Msg-Id": f"setup-{e.tenant}-{i}"})
    subject = e.subject.removesuffix(".v1") + e.bad.subject_suffix if e.bad.subject_suffix else e.subject
    await js.publish(subject, e.bad.body, headers={**e.headers, "Nats-Msg-Id": e.tenant})
    if e.bad.replay:  # the same Nats-Msg-Id (JetStream drops it), then a new one (ingest must dedupe)
        assert (await js.publish(subject, e.bad.body, headers={**e.headers, "Nats-Msg-Id": e.tenant})).duplicate
        await js.publish(subject, e.bad.body, headers={**e.headers, "Nats-Msg-Id": f"{e.tenant}-again"})


async def recorded(w: World, e: Event) -> None:
    p, store = e.payload, w.stack.store
    if e.subject in (subjects.MESSAGE_CREATED, subjects.MESSAGE_EDITED, subjects.MESSAGE_DELETED):
        events_ = await store.read_stream(conversation_stream(p["tenant_id"], p["user_id"], p["conversation_id"]))
        kinds = [ev.type for ev in events_]
        assert kinds.count("message.recorded") == 1, (e, kinds)
        assert len(kinds) == (1 if e.subject == subjects.MESSAGE_CREATED else 2), (e, kinds)
    elif e.subject == subjects.MESSAGE_SWIPE_SELECTED:
        events_ = await store.read_stream(conversation_stream(p["tenant_id"], p["user_id"], p["conversation_id"]))
        kinds = [ev.type for ev in events_]
        assert kinds == ["message.recorded", "message.alternative_recorded", "message.edited", "message.edited"], e
    elif e.subject == subjects.CONVERSATION_FORKED:
        events_ = await store.read_stream(conversation_stream(p["tenant_id"], p["user_id"], p["conversation_id"]))
        assert [ev.type for ev in events_] == ["conversation.forked", "message.recorded"], e
    elif e.subject == subjects.BOT_UPSERTED:
        assert len(await store.read_stream(bot_stream(p["tenant_id"], p["bot_id"]))) == 1, e
    else:
        assert len(await store.read_stream(persona_stream(p["tenant_id"], p["user_id"], p["persona_id"]))) == 1, e


def by_marker(letters: list[RawStreamMsg]) -> dict[str, list[RawStreamMsg]]:
    found: dict[str, list[RawStreamMsg]] = {}
    for letter in letters:
        assert letter.subject == subjects.dead_letter_subject("ingest"), (letter.subject, letter.headers)
        for m in set(MARKER.findall(letter.data or b"")):
            found.setdefault(m.decode(), []).append(letter)
    return found


@FUZZ
@given(data=st.data())
async def test_every_bad_event_is_dead_lettered_with_its_reason_and_the_stream_goes_on(
    fuzz_world: World, data: st.DataObject, pytestconfig: pytest.Config
) -> None:
    w = fuzz_world
    batch = data.draw(st.lists(events(), min_size=BATCH, max_size=BATCH), label="events")
    for e in batch:
        event(e.bad.kind)
        event(e.subject)
    await asyncio.gather(*(publish(w, e) for e in batch))
    tenant = marker()
    body = chat_message(tenant, tenant, "c1", "canary", "the stream goes on")
    canary = Event(subjects.MESSAGE_CREATED, tenant, body, (), Bad("canary", _json(body), "ok"))
    await publish(w, canary)
    await wait_until(lambda: ingest_drained(w.stack.js), "ingest acked all", 120)  # fmt: skip
    letters = by_marker(await w.new_letters())
    for e in [*batch, canary]:
        mine = letters.get(e.tenant, [])
        if e.bad.expect == "ok":
            assert mine == [], (e, [(m.headers or {}).get(DLQ_REASON) for m in mine])
            await recorded(w, e)
            continue
        assert len(mine) == 1, (e.subject, e.bad.kind, e.bad.body[:300], len(mine))
        reason = str((mine[0].headers or {}).get(DLQ_REASON, ""))
        assert any(n in reason for n in e.bad.names), (e.subject, e.bad.kind, e.bad.names, reason)
    progress(pytestconfig, "events")


# --- still alive --------------------------------------------------------------------------------------
async def test_the_services_still_answer_and_only_bad_input_was_dead_lettered(fuzz_world: World) -> None:
    w = fuzz_world
    ask_a = {"tenant_id": w.tenant, "user_id": USER, "conversation_id": "c1", "bot_id": "bard", "user_message": "Kestrel?"}  # fmt: skip
    reply = await w.call(subjects.CONTEXT_ASSEMBLE, ask_a)
    assert "error" not in reply, reply
    assert SECRET in reply["context"], reply
    assert SECRET_LORE in reply["context"], reply
    for subject in sorted(REQUESTS):  # every request subject still answers (here: an empty object is refused)
        assert (await ask(w, subject, b"{}"))["error"]["code"] == "bad_request", subject
    with pytest.raises(MaxPayloadError):  # over max_payload: the client refuses to send it at all
        await w.stack.nc.request(subjects.CONTEXT_ASSEMBLE, b" " * (w.stack.nc.max_payload + 1), timeout=5)
    assert (await w.call(subjects.CONTEXT_ASSEMBLE, ask_a))["context"] == reply["context"]
    letters = await w.new_letters()
    assert [m.subject for m in letters if m.subject != subjects.dead_letter_subject("ingest")] == []
