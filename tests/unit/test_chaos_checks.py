"""The checks `make chaos` reads from the log (``bench/chaos_checks.py``) count what they claim to count.

They decide whether a fault run passes, so each is shown here to find the duplicate it looks for, on an
in-memory event log holding the events a redelivered or raced batch would leave behind.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from bench.chaos_checks import compare, displaced, fact_counts
from mnemo.shared.crypto import FieldCipher, InMemoryKeyStore
from mnemo.shared.eventlog.codec import EventCodec
from mnemo.shared.eventlog.inmemory import InMemoryEventStore
from mnemo.shared.events.envelope import NewEvent
from mnemo.shared.events.recorded import FACT_LEARNED, FACT_RETIRED, FACTS_CONSOLIDATED, REGISTRY, knowledge_stream

TENANT, USER, BOT = "t-chaos", "u-chaos", "bot-chaos"
AT = datetime(2026, 11, 1, 20, 0, tzinfo=UTC)


def learned(fact_id: str, text: str, message: str, user: str = USER) -> NewEvent:
    payload: dict[str, Any] = {
        "fact_id": fact_id, "character_id": BOT, "character_kind": "bot", "user_id": user, "conversation_id": "c00",
        "text": text, "subject": f"fact:{text}", "fact_type": "declarative", "confidence": 0.7,
        "learned_at": AT.isoformat(), "scope": f"player:{user}", "message_ids": [message], "method": "pattern",
    }  # fmt: skip
    return NewEvent(type=FACT_LEARNED.name, tenant_id=TENANT, payload=payload)


def consolidated(fact_id: str, folds: list[str]) -> NewEvent:
    base = learned(fact_id, f"Ilya has many things ({fact_id}).", "m-many").payload
    return NewEvent(type=FACTS_CONSOLIDATED.name, tenant_id=TENANT, payload={**base, "consolidates": folds, "method": "extractive"})  # fmt: skip


async def counts(*events: NewEvent) -> dict[str, int]:
    store = InMemoryEventStore(EventCodec(REGISTRY, FieldCipher(bytes(range(32)), InMemoryKeyStore())))
    await store.append(knowledge_stream(TENANT, BOT), 0, list(events))
    return await fact_counts(store, TENANT, BOT)


async def test_distinct_facts_and_one_consolidation_are_no_duplicates() -> None:
    got = await counts(
        learned("f1", "Ilya has a green parrot.", "m1"),
        learned("f2", "Ilya has a silver compass.", "m2"),
        consolidated("f3", ["f1", "f2"]),
        learned("f4", "Ilya has a green parrot.", "m9"),  # the folded fact said again: current once only
    )
    assert got == {"facts": 3, "consolidations": 1, "duplicate_facts": 0}


async def test_a_fact_learned_twice_from_one_message_is_a_duplicate() -> None:
    got = await counts(learned("f1", "Ilya has a green parrot.", "m1"), learned("f1-again", "Ilya has a green parrot!", "m1"))  # fmt: skip
    # Once as the same learning, once as two current facts with the same text.
    assert got["duplicate_facts"] == 2


async def test_a_fact_folded_into_two_consolidations_is_a_duplicate() -> None:
    got = await counts(
        learned("f1", "Ilya has a green parrot.", "m1"),
        learned("f2", "Ilya has a silver compass.", "m2"),
        consolidated("f3", ["f1", "f2"]),
        consolidated("f4", ["f1", "f2"]),
    )
    assert got["duplicate_facts"] == 2


async def test_two_current_facts_with_the_same_text_are_a_duplicate_unless_one_is_retired() -> None:
    twice = [learned("f1", "Ilya has a green parrot.", "m1"), learned("f2", "Ilya has a green parrot.", "m2")]
    assert (await counts(*twice))["duplicate_facts"] == 1
    retired = NewEvent(type=FACT_RETIRED.name, tenant_id=TENANT, payload={"fact_id": "f1", "character_id": BOT, "user_id": USER, "reason": "deleted"})  # fmt: skip
    assert (await counts(*twice, retired))["duplicate_facts"] == 0
    other_user = [learned("f1", "Ilya has a green parrot.", "m1"), learned("f2", "Ilya has a green parrot.", "m2", "u-2")]  # fmt: skip
    assert (await counts(*other_user))["duplicate_facts"] == 0


def test_compare_counts_lost_duplicated_and_reordered_messages() -> None:
    published = {"c0": ["a", "b", "c", "d"]}
    assert compare(published, {"c0": ["a", "b", "c", "d"]}) == {"lost": 0, "duplicated": 0, "out_of_order": 0}
    assert compare(published, {"c0": ["a", "c", "b", "d", "d"]}) == {"lost": 0, "duplicated": 1, "out_of_order": 2}
    assert compare(published, {"c0": ["a", "d"]}) == {"lost": 2, "duplicated": 0, "out_of_order": 0}
    assert displaced(published, {"c0": ["a", "b", "c", "d"]}) == {}
    assert displaced(published, {"c0": ["a", "c", "b", "d"]}) == {
        "c0": {"position": 1, "recorded": ["c", "b", "d"], "published": ["b", "c", "d"]}
    }
