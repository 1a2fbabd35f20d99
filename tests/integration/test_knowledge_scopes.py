"""Property: ``facts_for`` never leaks a fact across tenants, users' private scopes or characters.

Random worlds of facts (several tenants, users, characters, subjects; some promoted to campaigns, some
unpromoted again, some retired) are projected into the real read model (SecantusDB); every query must return
exactly the current facts a reference model says are visible, and never one of another tenant, of another
user's player scope, or of another character.
"""

from __future__ import annotations

import asyncio
import os
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pymongo import AsyncMongoClient

from mnemo.runtime.servers import ChildServer
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.events.envelope import EventEnvelope
from mnemo.shared.events.recorded import knowledge_stream
from mnemo.shared.readmodels.knowledge import KnowledgeReadModel
from tests.envelopes import recorded

pytestmark = pytest.mark.integration
T0 = datetime(2026, 1, 1, tzinfo=UTC)
TENANTS, USERS, CHARACTERS, CAMPAIGNS = ("t1", "t2"), ("u1", "u2", "u3"), ("b1", "b2", "p1"), ("k1", "k2")
SUBJECT_TEXTS = ("{c} lives in Paris.", "{c} lives in Rome.", "{c} has a cat.", "The tide turns at noon.")


@dataclass(frozen=True)
class Spec:
    tenant: str
    user: str
    character: str
    text: str
    minute: int
    scope_kind: str  # player | character | campaign
    campaign: str
    unpromoted: bool
    retired: bool


specs = st.builds(
    Spec,
    tenant=st.sampled_from(TENANTS),
    user=st.sampled_from(USERS),
    character=st.sampled_from(CHARACTERS),
    text=st.sampled_from(SUBJECT_TEXTS),
    minute=st.integers(0, 30),
    scope_kind=st.sampled_from(("player", "player", "character", "campaign")),
    campaign=st.sampled_from(CAMPAIGNS),
    unpromoted=st.booleans(),
    retired=st.integers(0, 5).map(lambda n: n == 0),
)


def events_of(world: list[Spec]) -> tuple[list[EventEnvelope], dict[str, tuple[Spec, str, bool]]]:
    """The log of ``world`` and, per fact id, (spec, final scope, live)."""
    versions: dict[str, int] = {}
    events: list[EventEnvelope] = []
    final: dict[str, tuple[Spec, str, bool]] = {}

    def emit(s: Spec, type_: str, payload: dict[str, Any]) -> None:
        stream = knowledge_stream(s.tenant, s.character)
        versions[stream] = versions.get(stream, 0) + 1
        events.append(recorded(s.tenant, stream, versions[stream], type_, payload, T0 + timedelta(minutes=s.minute)))

    for n, s in enumerate(world):
        fid = f"f{n}"
        text = s.text.format(c=s.character)
        scope = {"player": f"player:{s.user}", "character": f"character:{s.character}"}.get(s.scope_kind, f"player:{s.user}")  # fmt: skip
        emit(s, "knowledge.fact_learned", {
            "fact_id": fid, "character_id": s.character, "character_kind": "bot", "user_id": s.user,
            "conversation_id": "c1", "text": text, "subject": text.split(" ")[1] if " lives " in text else text,
            "fact_type": "semantic", "tags": [], "confidence": 0.5, "learned_at": T0 + timedelta(minutes=s.minute),
            "scope": scope, "message_ids": [f"m{n}"], "method": "pattern"})  # fmt: skip
        if s.scope_kind == "campaign":
            change = {"fact_id": fid, "character_id": s.character, "owner_user_id": s.user, "by_user_id": s.user, "at": T0}  # fmt: skip
            emit(s, "knowledge.fact_promoted", {**change, "from_scope": scope, "to_scope": f"campaign:{s.campaign}"})
            if s.unpromoted:
                emit(s, "knowledge.fact_unpromoted", {**change, "from_scope": f"campaign:{s.campaign}", "to_scope": scope})  # fmt: skip
            else:
                scope = f"campaign:{s.campaign}"
        if s.retired:
            emit(s, "knowledge.fact_retired", {"fact_id": fid, "character_id": s.character, "user_id": s.user,
                                               "reason": "deleted", "message_id": f"m{n}", "retired_at": T0})  # fmt: skip
        final[fid] = (s, scope, not s.retired)
    return events, final


def expected(final: dict[str, tuple[Spec, str, bool]], t: str, u: str, c: str, k: str | None) -> set[str]:
    scopes = {f"player:{u}", f"character:{c}"} | ({f"campaign:{k}"} if k else set())
    visible = [(fid, s) for fid, (s, scope, live) in final.items() if live and s.tenant == t and s.character == c and scope in scopes]  # fmt: skip
    newest: dict[str, tuple[tuple[int, str], str]] = {}
    for fid, s in visible:
        text = s.text.format(c=s.character)
        subject = text.split(" ")[1] if " lives " in text else text
        key = (s.minute, fid)
        if subject not in newest or newest[subject][0] < key:
            newest[subject] = (key, fid)
    return {fid for _, fid in newest.values()}


async def check(url: str, world: list[Spec]) -> None:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(url)
    db = client[f"p_{uuid.uuid4().hex[:12]}"]
    try:
        knowledge = KnowledgeReadModel(db, FieldCipher(os.urandom(32), InMemoryKeyStore()))
        events, final = events_of(world)
        await knowledge.apply(events)
        for t in TENANTS:
            for u in USERS:
                for c in CHARACTERS:
                    for k in (None, *CAMPAIGNS):
                        got = await knowledge.facts_for(t, c, user_id=u, campaign_id=k)
                        for f in got:
                            assert f.tenant_id == t, "another tenant's fact"
                            assert f.character_id == c, "another character's fact"
                            assert f.scope != f"player:{f.user_id}" or f.user_id == u, "another user's private fact"
                            assert f.scope in (f"player:{u}", f"character:{c}", f"campaign:{k}")
                        assert {f.fact_id for f in got} == expected(final, t, u, c, k)
    finally:
        await client.drop_database(db.name)
        await client.close()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(world=st.lists(specs, min_size=1, max_size=25))
def test_facts_for_never_leaks_across_tenants_users_or_characters(mongo_server: ChildServer, world: list[Spec]) -> None:
    asyncio.run(check(mongo_server.url, world))
