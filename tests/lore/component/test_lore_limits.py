"""The lore service's per-tenant limits and regex-key policy on an in-memory broker, log and read model.

Each refusal has its own code (``book_too_large``, ``too_many_books``, ``rate_limited``) and records nothing;
a regex key RE2 cannot run is warned about at import (naming the entry) and refused by an entry write.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from mnemo.services.lore.app import create_router
from mnemo.shared import subjects
from mnemo.shared.readmodels.catalog import LORE
from mnemo.shared.settings import LimitsSettings, Settings
from tests.components import assert_bad_request, deps, published, served

T, OWNER = "t1", "creator-1"


def book(n: int, content: str = "x", key: str = "k") -> dict[str, Any]:
    return {"entries": {str(i): {"uid": i, "key": [f"{key}{i}"], "content": content} for i in range(n)}}


@pytest.fixture
async def limited():
    limits = LimitsSettings(
        max_book_entries=3,
        max_book_bytes=20_000,
        max_books_per_bot=2,
        rpc_per_second=1000,
        rpc_burst=1000,
        tenants={"generous": {"max_book_entries": 50}, "slow": {"rpc_per_second": 0.001, "rpc_burst": 2}},
    )
    d = deps()
    d = dataclasses.replace(d, settings=Settings(limits=limits))
    async with served(create_router(d)) as rpc:
        yield rpc, d.read_model(LORE), d


def import_request(data: dict[str, Any], **over: Any) -> dict[str, Any]:
    return {"tenant_id": T, "owner_user_id": OWNER, "name": "Book", "data": data} | over


async def test_a_book_with_too_many_entries_is_refused_and_records_nothing(limited):
    rpc, _, d = limited

    reply = await rpc(subjects.LORE_IMPORT, import_request(book(4)))

    assert reply["error"]["code"] == "book_too_large"
    assert "4 entries" in reply["error"]["message"]
    assert "MNEMO_LIMITS__MAX_BOOK_ENTRIES" in reply["error"]["message"]
    assert published(d).events == []


async def test_a_tenant_override_raises_that_tenants_limit_only(limited):
    rpc, _, _ = limited

    generous = await rpc(subjects.LORE_IMPORT, import_request(book(10), tenant_id="generous"))
    default = await rpc(subjects.LORE_IMPORT, import_request(book(10), tenant_id="other"))

    assert generous["entries"] == 10
    assert default["error"]["code"] == "book_too_large"


async def test_a_book_too_many_bytes_is_refused(limited):
    rpc, _, _ = limited

    reply = await rpc(subjects.LORE_IMPORT, import_request(book(2, content="y" * 15_000)))

    assert reply["error"]["code"] == "book_too_large"
    assert "MNEMO_LIMITS__MAX_BOOK_BYTES" in reply["error"]["message"]


async def test_entry_writes_cannot_grow_a_book_past_its_limits(limited):
    rpc, model, _ = limited
    imported = await rpc(subjects.LORE_IMPORT, import_request(book(3)))
    target = {"tenant_id": T, "user_id": OWNER, "lorebook_id": imported["lorebook_id"]}

    fourth = await rpc(subjects.LORE_ENTRY_CREATE, target | {"entry": {"key": ["more"], "content": "more"}})
    too_big = await rpc(subjects.LORE_ENTRY_UPDATE, target | {"uid": 0, "changes": {"content": "z" * 25_000}})
    fine = await rpc(subjects.LORE_ENTRY_UPDATE, target | {"uid": 0, "changes": {"content": "short"}})

    assert fourth["error"]["code"] == "book_too_large"
    assert too_big["error"]["code"] == "book_too_large"
    assert fine["changed"] is True
    view = await model.book(T, imported["lorebook_id"])
    assert view is not None
    assert [e.content for e in view.book.entries] == ["short", "x", "x"]


async def test_a_bot_takes_at_most_its_limit_of_books(limited):
    rpc, model, _ = limited
    first = await rpc(subjects.LORE_IMPORT, import_request(book(1, key="a"), name="A", attach_to_bots=["b1"]))
    second = await rpc(subjects.LORE_BOOK_CREATE, {"tenant_id": T, "owner_user_id": OWNER, "name": "B",
                                                   "attach_to_bots": ["b1"]})  # fmt: skip
    third = await rpc(subjects.LORE_IMPORT, import_request(book(1, key="c"), name="C", attach_to_bots=["b1"]))
    loose = await rpc(subjects.LORE_IMPORT, import_request(book(1, key="d"), name="D"))
    attach = await rpc(subjects.LORE_ATTACH, {"tenant_id": T, "lorebook_id": loose["lorebook_id"], "bot_ids": ["b1"]})
    again = await rpc(subjects.LORE_ATTACH, {"tenant_id": T, "lorebook_id": first["lorebook_id"], "bot_ids": ["b1"]})
    other_bot = await rpc(
        subjects.LORE_ATTACH, {"tenant_id": T, "lorebook_id": loose["lorebook_id"], "bot_ids": ["b2"]}
    )

    assert "lorebook_id" in first
    assert second["created"] is True
    assert third["error"]["code"] == "too_many_books"
    assert attach["error"]["code"] == "too_many_books"
    assert "MNEMO_LIMITS__MAX_BOOKS_PER_BOT" in attach["error"]["message"]
    assert "error" not in again  # a book already attached does not count twice
    assert "error" not in other_bot
    assert len(await model.attached(T, "b1")) == 2


async def test_a_tenant_over_its_request_rate_is_answered_rate_limited(limited):
    rpc, _, _ = limited
    export = {"tenant_id": "slow", "lorebook_id": "nope"}

    replies = [await rpc(subjects.LORE_EXPORT, export) for _ in range(3)]
    other = await rpc(subjects.LORE_EXPORT, export | {"tenant_id": "t9"})

    assert [r["error"]["code"] for r in replies] == ["not_found", "not_found", "rate_limited"]
    assert "MNEMO_LIMITS__RPC_PER_SECOND" in replies[2]["error"]["message"]
    assert other["error"]["code"] == "not_found"  # another tenant's bucket is its own


async def test_import_warns_about_each_refused_regex_key_naming_the_entry(limited):
    rpc, model, _ = limited
    data = {"entries": {
        "0": {"uid": 0, "key": ["/(\\w+) \\1/"], "content": "doubled word"},
        "1": {"uid": 1, "key": ["/drag(o|0)n/i"], "keysecondary": ["/a(?=b)c/"], "content": "dragon"},
        "2": {"uid": 2, "key": ["/(unclosed/"], "content": "plain"},
    }}  # fmt: skip

    reply = await rpc(subjects.LORE_IMPORT, import_request(data))

    regex = [(w["uid"], w["field"]) for w in reply["warnings"] if "regex" in w["message"]]
    assert regex == [(0, "key"), (1, "keysecondary"), (2, "key")]
    by_uid = {w["uid"]: w["message"] for w in reply["warnings"] if "regex" in w["message"]}
    assert "backreference" in by_uid[0]
    assert "never matches" in by_uid[0]
    assert "lookahead" in by_uid[1]
    assert "plain text" in by_uid[2]
    view = await model.book(T, reply["lorebook_id"])
    assert view is not None
    assert view.book.entries[0].key == ["/(\\w+) \\1/"]  # kept for export; the engine never runs it


async def test_an_entry_write_with_a_refused_regex_key_is_a_bad_request(limited):
    rpc, _, _ = limited
    created = await rpc(subjects.LORE_BOOK_CREATE, {"tenant_id": T, "owner_user_id": OWNER, "name": "N"})
    target = {"tenant_id": T, "user_id": OWNER, "lorebook_id": created["lorebook_id"]}

    reply = await rpc(subjects.LORE_ENTRY_CREATE, target | {"entry": {"key": ["/(a)\\1/"], "content": "c"}})
    usable = await rpc(subjects.LORE_ENTRY_CREATE, target | {"entry": {"key": ["/(a+)+$/"], "content": "c"}})

    assert_bad_request(reply, "backreference")
    assert usable["changed"] is True
