"""The memory service on ``TestNatsBroker`` with the in-memory log and read models: list, edit, delete and
convert a user's memories (summaries), with facts in the listing.

Summaries are seeded as the summarizer makes them: ``summary.created`` appended to the log, then projected.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.services.memory.app import create_router
from mnemo.shared import subjects
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import knowledge_stream, player_scope, summary_stream
from mnemo.shared.readmodels.catalog import KNOWLEDGE, LEGACY_LORE, SUMMARIES
from tests.components import deps, published, served

T0 = datetime(2026, 3, 1, 12, tzinfo=UTC)
T, U1, U2, C = "t1", "u1", "u2", "c1"


def summary(sid: str, user: str, n: int, participants: list[str]) -> NewEvent:
    return NewEvent(
        event_id=sid,
        type="summary.created",
        tenant_id=T,
        payload={"summary_id": sid, "user_id": user, "conversation_id": C, "summary_type": "short_term",
                 "text": f"Memory {sid}: Ana and the bard at the harbour.", "importance": 5,
                 "participants": participants, "start_at": T0 + timedelta(hours=n),
                 "end_at": T0 + timedelta(hours=n, minutes=30), "message_ids": [f"m{n}"], "first_index": n,
                 "last_index": n, "method": "extractive"},
    )  # fmt: skip


def fact(fid: str, user: str) -> NewEvent:
    return NewEvent(
        event_id=fid,
        type="knowledge.fact_learned",
        tenant_id=T,
        payload={"fact_id": fid, "character_id": "bard", "character_kind": "bot", "user_id": user,
                 "conversation_id": C, "text": f"Ana keeps a {fid}.", "subject": f"ana:{fid}",
                 "fact_type": "semantic", "confidence": 0.9, "learned_at": T0 + timedelta(days=1),
                 "scope": player_scope(user), "message_ids": ["m0"], "method": "pattern"},
    )  # fmt: skip


class Memory:
    def __init__(self) -> None:
        self.deps = deps()
        self.store = self.deps.store
        self.summaries = self.deps.read_model(SUMMARIES)
        self.legacy = self.deps.read_model(LEGACY_LORE)
        self.knowledge = self.deps.read_model(KNOWLEDGE)

    async def seed(self) -> None:
        for user, sids in ((U1, ["s1", "s2", "s3"]), (U2, ["x1"])):
            events = [summary(sid, user, n, ["bard", "ana"] if n % 2 else ["rook"]) for n, sid in enumerate(sids)]
            result = await self.store.append(summary_stream(T, user, C), 0, events)
            await self.summaries.apply(result.committed)
        learned = await self.store.append(knowledge_stream(T, "bard"), 0, [fact("f1", U1), fact("f2", U2)])
        await self.knowledge.apply(learned.committed)


@pytest.fixture
async def memory():
    m = Memory()
    await m.seed()
    async with served(create_router(m.deps)) as rpc:
        yield rpc, m


def ids(reply):
    return [item["id"] for item in reply["items"]]


async def test_a_user_lists_their_own_memories_newest_first(memory):
    rpc, _ = memory

    mine = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "source": "memory"})
    theirs = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U2, "source": "memory"})
    about_rook = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "source": "memory", "bot_id": "rook"})

    assert (ids(mine), mine["total"]) == (["s3", "s2", "s1"], 3)
    assert ids(theirs) == ["x1"]
    assert set(ids(about_rook)) == {"s1", "s3"}
    assert all(item["source"] == "memory" for item in mine["items"])
    assert "Ana and the bard" in mine["items"][0]["text"]


async def test_the_listing_pages_and_includes_facts(memory):
    rpc, _ = memory

    everything = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "limit": 10})
    first = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "limit": 2})
    second = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "limit": 2, "offset": 2})

    assert everything["total"] == 4
    assert {(i["source"], i["id"]) for i in everything["items"]} == {
        ("memory", "s1"), ("memory", "s2"), ("memory", "s3"), ("knowledge", "f1"),
    }  # fmt: skip
    assert ids(first) + ids(second) == ids(everything), "pages neither skip nor repeat"


async def test_deleting_a_memory_hides_it_and_is_idempotent(memory):
    rpc, m = memory
    request = {"tenant_id": T, "user_id": U1, "memory_id": "s2"}

    deleted = await rpc(subjects.MEMORY_DELETE, request)
    again = await rpc(subjects.MEMORY_DELETE, request)
    listed = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "source": "memory"})

    assert (deleted["deleted"], again["deleted"]) == (True, False)
    assert ids(listed) == ["s3", "s1"]
    retired = published(m.deps).of_type("summary.retired")
    assert [(e.payload["summary_id"], e.payload["reason"]) for e in retired] == [("s2", "deleted")]


async def test_another_users_memory_cannot_be_deleted(memory):
    rpc, m = memory

    reply = await rpc(subjects.MEMORY_DELETE, {"tenant_id": T, "user_id": U2, "memory_id": "s1"})
    other_tenant = await rpc(subjects.MEMORY_DELETE, {"tenant_id": "t2", "user_id": U1, "memory_id": "s1"})

    assert reply["error"]["code"] == "not_found"
    assert other_tenant["error"]["code"] == "not_found"
    assert await m.summaries.inactive(T, ["s1"]) == set()


async def test_a_memory_converted_to_lore_is_listed_and_deleted_with_it(memory):
    rpc, m = memory
    convert = {"tenant_id": T, "user_id": U1, "memory_id": "s1", "applies_to_bots": ["bard"], "title": "Harbour",
               "tags": ["Harbour", "storm"], "importance": 9, "text": "The harbour, as I recall it.",
               "participants": ["bard"]}  # fmt: skip

    converted = await rpc(subjects.MEMORY_CONVERT_TO_LORE, convert)
    legacy = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "type": "legacy_memory"})
    deleted = await rpc(subjects.MEMORY_DELETE, {"tenant_id": T, "user_id": U1, "memory_id": "s1"})
    after = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "type": "legacy_memory"})

    assert (converted["memory_id"], converted["applies_to_bots"], converted["created"]) == ("s1", ["bard"], True)
    assert "error" not in legacy, legacy
    assert [(i["id"], i["memory_id"], i["title"], i["emotional_tags"], i["importance"]) for i in legacy["items"]] == [
        (converted["legacy_id"], "s1", "Harbour", ["harbour", "storm"], 9)
    ]
    assert [(i["text"], i["participants"]) for i in legacy["items"]] == [("The harbour, as I recall it.", ["bard"])]
    assert deleted["legacy_ids"] == [converted["legacy_id"]]
    assert after["items"] == []
    assert await m.legacy.deleted(T, [converted["legacy_id"]]) == {converted["legacy_id"]}


async def test_editing_a_memory_makes_a_new_version_and_keeps_the_old_in_the_log(memory):
    rpc, m = memory
    text = "Ana and the bard argued at the harbour; she kept the compass."
    request = {"tenant_id": T, "user_id": U1, "memory_id": "s2", "text": text}

    edited = await rpc(subjects.MEMORY_EDIT, request)
    again = await rpc(subjects.MEMORY_EDIT, request)
    listed = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "source": "memory"})
    everything = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "include_retired": True})

    new_id = edited["memory_id"]
    assert (edited["previous_id"], edited["changed"], new_id != "s2") == ("s2", True, True)
    assert (again["memory_id"], again["changed"]) == (new_id, False), "a retry appends nothing"
    assert ids(listed) == ["s3", new_id, "s1"], "the new version takes the old one's place in the listing"
    item = listed["items"][1]
    assert (item["text"], item["method"], item["participants"]) == (text, "manual:u1", ["bard", "ana"])
    old = {i["id"]: i for i in everything["items"]}["s2"]
    assert (old["status"], old["text"]) == ("edited", "Memory s2: Ana and the bard at the harbour.")
    created = published(m.deps).of_type("summary.created")
    retired = published(m.deps).of_type("summary.retired")
    assert [(e.payload["summary_id"], e.payload["text"], e.payload["citations"]) for e in created] == [
        (new_id, text, [])
    ]
    assert [(e.payload["summary_id"], e.payload["reason"], e.payload["replaced_by"]) for e in retired] == [
        ("s2", "edited", new_id)
    ]


async def test_only_the_current_version_can_be_edited(memory):
    rpc, m = memory
    first = await rpc(subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": "s1", "text": "One."})

    stale = await rpc(subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": "s1", "text": "Two."})
    second = await rpc(
        subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": first["memory_id"], "text": "Two."}
    )
    same = await rpc(
        subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": second["memory_id"], "text": "Two."}
    )

    assert stale["error"]["code"] == "bad_request"
    assert first["memory_id"] in stale["error"]["message"], "the refusal names the version to edit instead"
    assert (second["previous_id"], second["changed"]) == (first["memory_id"], True)
    assert (same["memory_id"], same["changed"]) == (second["memory_id"], False), "the same text changes nothing"
    listed = await rpc(subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "source": "memory"})
    assert [i["text"] for i in listed["items"] if i["id"] == second["memory_id"]] == ["Two."]
    assert len(published(m.deps).of_type("summary.created")) == 2


async def test_another_users_or_tenants_memory_cannot_be_edited(memory):
    rpc, m = memory

    reply = await rpc(subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U2, "memory_id": "s1", "text": "Mine."})
    other_tenant = await rpc(
        subjects.MEMORY_EDIT, {"tenant_id": "t2", "user_id": U1, "memory_id": "s1", "text": "Mine."}
    )

    assert (reply["error"]["code"], other_tenant["error"]["code"]) == ("not_found", "not_found")
    assert published(m.deps).events == []
    assert await m.summaries.inactive(T, ["s1"]) == set()


async def test_deleting_an_edited_memory_deletes_the_lore_made_from_its_earlier_version(memory):
    rpc, m = memory
    convert = {"tenant_id": T, "user_id": U1, "memory_id": "s1", "applies_to_bots": ["bard"]}
    converted = await rpc(subjects.MEMORY_CONVERT_TO_LORE, convert)
    edited = await rpc(subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": "s1", "text": "Edited."})

    deleted = await rpc(subjects.MEMORY_DELETE, {"tenant_id": T, "user_id": U1, "memory_id": edited["memory_id"]})

    assert (deleted["deleted"], deleted["legacy_ids"]) == (True, [converted["legacy_id"]])
    assert await m.legacy.deleted(T, [converted["legacy_id"]]) == {converted["legacy_id"]}


TOO_IMPORTANT = {"tenant_id": T, "user_id": U1, "memory_id": "s1", "applies_to_bots": ["bard"], "importance": 11}


@pytest.mark.parametrize(
    ("subject", "body", "says"),
    [
        (subjects.MEMORY_LIST, {"tenant_id": T}, "user_id"),
        (subjects.MEMORY_LIST, {"tenant_id": T, "user_id": U1, "limit": 0}, "limit"),
        (subjects.MEMORY_DELETE, {"tenant_id": T, "user_id": U1, "memory_id": "s1", "force": True}, "force"),
        (subjects.MEMORY_DELETE, b"[]", "<body>"),
        (subjects.MEMORY_CONVERT_TO_LORE, {**TOO_IMPORTANT}, "importance"),
        (subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": "s1"}, "text"),
        (subjects.MEMORY_EDIT, {"tenant_id": T, "user_id": U1, "memory_id": "s1", "text": "  \n"}, "blank"),
    ],
)
async def test_bad_requests_get_a_bad_request_reply(memory, subject, body, says):
    rpc, m = memory

    reply = await rpc(subject, body)

    assert reply["error"]["code"] == "bad_request"
    assert says in reply["error"]["message"]
    assert published(m.deps).events == []
