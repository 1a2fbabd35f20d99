"""The lore activation test (``mnemo.rpc.lore.test_activation.v1``) over real NATS and SecantusDB: the lore
service and the context-assembler as in the stack, a book imported through ``lore.import`` and tried on texts
by its id and through the bot it is attached to; a dry run that keeps nothing, and another tenant sees nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from mnemo.shared import subjects
from tests.integration.ingest_stack import running
from tests.integration.test_lore import call, routers

pytestmark = pytest.mark.integration

BOOK = {
    "entries": {
        "0": {
            "uid": 0,
            "key": ["compass"],
            "comment": "The compass",
            "content": "{{char}}'s compass points home.",
            "position": 0,
        },
        "1": {
            "uid": 1,
            "key": ["storm"],
            "keysecondary": ["north", "east"],
            "selective": True,
            "selectiveLogic": 0,  # AND ANY: one secondary key must match too
            "comment": "Storms",
            "content": "Storms come from the north.",
            "position": 1,
        },
        "2": {
            "uid": 2,
            "key": [],
            "constant": True,
            "comment": "The ship",
            "content": "The Kestrel is an airship.",
            "position": 0,
        },
        "3": {"uid": 3, "key": ["lantern"], "disable": True, "content": "A disabled entry.", "position": 0},
        "4": {"uid": 4, "key": ["gull"], "content": "Gulls steal biscuits."},  # no position: inserted nowhere
    }
}


def fired(reply: dict[str, Any]) -> dict[int, str]:
    assert "error" not in reply, reply
    return {e["uid"]: e["why"] for e in reply["entries"]}


async def test_which_entries_a_text_fires_and_why(nats_url, mongo_url, db_name):
    tenant, other = f"t-{uuid.uuid4().hex[:8]}", f"t-{uuid.uuid4().hex[:8]}"
    imported_body = {"tenant_id": tenant, "owner_user_id": "gm", "name": "Kestrel", "data": BOOK}
    async with running(nats_url, mongo_url, db_name, routers()) as stack:
        nc = stack.nc
        imported = await call(nc, subjects.LORE_IMPORT, {**imported_body, "attach_to_bots": ["maren"]})
        book = imported["lorebook_id"]
        by_id = {"tenant_id": tenant, "lorebook_ids": [book], "bot_id": "Maren"}
        compass = await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "Where is my compass?"})
        storm_alone = await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "A storm is coming."})
        storm_north = await call(
            nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "It rises in the north.", "history": ["A storm!"]}
        )
        again = await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "Where is my compass?"})
        through_bot = await call(
            nc, subjects.LORE_TEST_ACTIVATION, {"tenant_id": tenant, "bot_id": "maren", "text": "the compass"}
        )
        unattached = await call(
            nc, subjects.LORE_TEST_ACTIVATION, {"tenant_id": tenant, "bot_id": "odo", "text": "the compass"}
        )
        tiny = await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "compass storm north", "max_tokens": 64})
        gull = await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "A gull!"})
        elsewhere = await call(
            nc, subjects.LORE_TEST_ACTIVATION, {"tenant_id": other, "lorebook_ids": [book], "text": "compass"}
        )
        other_bot = await call(
            nc, subjects.LORE_TEST_ACTIVATION, {"tenant_id": other, "bot_id": "maren", "text": "compass"}
        )
        refused = [
            await call(nc, subjects.LORE_TEST_ACTIVATION, {"tenant_id": tenant, "text": "no books named"}),
            await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": ""}),
            await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "x", "user_id": "u1"}),
            await call(nc, subjects.LORE_TEST_ACTIVATION, {**by_id, "text": "x", "max_tokens": 0}),
            await call(nc, subjects.LORE_TEST_ACTIVATION, b"not json"),
        ]

    assert fired(compass) == {0: "key: compass", 2: "constant"}
    assert {e["uid"]: e["content"] for e in compass["entries"]}[0] == "Maren's compass points home.", "macros replaced"
    assert (compass["lorebook_ids"], compass["scanned_entries"]) == ([book], 4), "a disabled entry is not scanned"
    assert all(e["placed"] and e["tokens"] > 0 for e in compass["entries"])
    assert compass["tokens_used"] == sum(e["tokens"] for e in compass["entries"])
    assert compass["budget"] > 0
    assert fired(storm_alone) == {2: "constant"}, "a selective entry needs one of its secondary keys too"
    assert fired(storm_north) == {1: "key: storm (secondary: north)", 2: "constant"}, "the history is scanned"
    assert again == compass, "a dry run: the same text fires the same entries, nothing was kept"
    assert fired(through_bot) == {0: "key: compass", 2: "constant"}
    assert (unattached["entries"], unattached["lorebook_ids"]) == ([], [])
    assert tiny["overflowed"] is True
    assert tiny["tokens_used"] <= tiny["budget"]
    assert len(tiny["entries"]) < 3, "three entries match; the budget of 64 tokens' 25% has no room for all"
    assert [(e["uid"], e["placed"]) for e in gull["entries"] if e["uid"] == 4] == [(4, False)], "fired, placed nowhere"
    assert elsewhere["error"]["code"] == "not_found", "another tenant's book is unknown"
    assert (other_bot["entries"], other_bot["lorebook_ids"]) == ([], [])
    assert [r["error"]["code"] for r in refused] == ["bad_request"] * 5
