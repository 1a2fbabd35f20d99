"""The operator views in headless Chromium against `make run`'s demo: a chat event ingest refuses becomes a dead
letter of its tenant with the reason, listed and redriven in the app; another tenant's operator key neither
sees nor redrives it (through the routes the app calls); consumer lag and the tenant's usage with its memory
growth per type are shown, and another tenant's operator key reads its own growth only."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
import uuid
from typing import Any

import nats
import pytest

from mnemo.shared import subjects
from tests.ui.conftest import OTHER_TENANT, Demo, accessibility_problems, open_view, screenshot
from tests.ui.test_workbench import post

pytestmark = [pytest.mark.ui, pytest.mark.slow]


def publish_refused_events(nats_url: str, bodies: list[dict[str, Any]]) -> None:
    """Chat events that break the schema (``content`` a number), as a faulty platform might publish them. In a
    thread of its own: Playwright's sync API keeps an event loop running in the test's."""

    async def publish() -> None:
        nc = await nats.connect(nats_url)
        try:
            for body in bodies:
                await nc.jetstream().publish(subjects.MESSAGE_CREATED, json.dumps(body).encode())
        finally:
            await nc.drain()

    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, publish()).result(60)


def letters_of(demo: Demo, key: str, tenant: str, marker: str) -> list[dict[str, Any]]:
    status, reply = post(demo, key, "operator/dead_letters/list", {"tenant_id": tenant})
    assert status == 200, reply
    return [d for d in reply["dead_letters"] if marker in d["body"]]


def held_messages(demo: Demo, key: str, tenant: str) -> int:
    """The tenant's messages held now per the usage report's growth rows (0: none), asked as the app asks."""
    status, reply = post(demo, key, "operator/usage", {"tenant_id": tenant, "growth_days": 30})
    assert status == 200, reply
    assert [t["tenant_id"] for t in reply["tenants"]] in ([tenant], [])
    rows = reply["tenants"][0]["memory_types"] if reply["tenants"] else []
    return sum(g["held"] for g in rows if g["source"] == "message")


def test_growth_per_type_is_each_operators_own_tenants(demo: Demo) -> None:
    status, reply = post(demo, demo.other_key, "operator/usage", {"tenant_id": "demo", "growth_days": 30})
    assert (status, reply["error"]["code"]) == (403, "forbidden")
    status, reply = post(demo, demo.key, "operator/usage", {"tenant_id": OTHER_TENANT, "growth_days": 30})
    assert (status, reply["error"]["code"]) == (403, "forbidden")
    status, theirs = post(demo, demo.other_key, "operator/usage", {"tenant_id": OTHER_TENANT, "growth_days": 30})
    assert status == 200, theirs
    assert {t["tenant_id"] for t in theirs["tenants"]} <= {OTHER_TENANT}
    for usage in theirs["tenants"]:  # what another tenant holds is its own: none of the demo's messages
        assert held_messages(demo, demo.other_key, OTHER_TENANT) <= usage["messages"]
    assert held_messages(demo, demo.key, "demo") > 0


def test_dead_letters_with_their_reasons_redriven_and_lag_and_usage(demo: Demo, page: Any) -> None:
    marker = f"refused-{uuid.uuid4().hex[:8]}"
    refused = {"user_id": "demo-user", "conversation_id": "skyward-1", "message_id": marker, "content": 7}
    publish_refused_events(demo.nats_url, [{"tenant_id": "demo", **refused}, {"tenant_id": OTHER_TENANT, **refused}])
    deadline = time.monotonic() + 120
    while not (ours := letters_of(demo, demo.key, "demo", marker)) and time.monotonic() < deadline:
        time.sleep(1)
    assert len(ours) == 1, "ingest did not dead-letter the refused event"
    seq = ours[0]["seq"]

    # Another tenant's operator key: its own letter only, and the demo's cannot be redriven by it.
    theirs = letters_of(demo, demo.other_key, OTHER_TENANT, marker)
    assert seq not in {d["seq"] for d in theirs}
    assert all(json.loads(d["body"])["tenant_id"] == OTHER_TENANT for d in theirs)
    status, reply = post(
        demo, demo.other_key, "operator/dead_letters/redrive", {"tenant_id": OTHER_TENANT, "seqs": [seq]}
    )
    assert (status, reply["outcomes"]) == (200, [{"seq": seq, "outcome": "not_found"}])
    status, reply = post(demo, demo.other_key, "operator/dead_letters/list", {"tenant_id": "demo"})
    assert (status, reply["error"]["code"]) == (403, "forbidden")
    assert [d["seq"] for d in letters_of(demo, demo.key, "demo", marker)] == [seq]

    open_view(page, "Operations")
    row = page.get_by_role("row").filter(has_text=marker)
    row.wait_for()
    assert ours[0]["reason"]
    assert ours[0]["reason"][:40] in row.inner_text()
    page.get_by_role("table", name="Durable consumers").get_by_text(subjects.INGEST_V1_DURABLE, exact=True).wait_for()
    page.get_by_role("row", name="Messages held").wait_for()
    growth = page.get_by_role("table", name="What the tenant holds now per memory type")
    messages = growth.get_by_role("row").filter(has=page.get_by_role("rowheader", name="Messages", exact=True))
    held = held_messages(demo, demo.key, "demo")
    assert held > 0
    assert messages.get_by_role("cell").first.inner_text() == str(held)
    assert messages.get_by_role("img").get_attribute("aria-label").endswith(f"{held} now")
    assert accessibility_problems(page) == []
    growth.scroll_into_view_if_needed()
    screenshot(page, "operations-growth")
    page.evaluate("window.scrollTo(0, 0)")
    assert accessibility_problems(page) == []
    screenshot(page, "operations")

    page.get_by_label(f"Redrive dead letter #{seq}").check()
    page.get_by_role("button", name="Redrive 1 picked").click()
    outcome = page.get_by_role("list", name="Redrive outcomes")
    outcome.get_by_text(f"#{seq}: now {subjects.CHAT_STREAM} #").wait_for()
    assert seq not in {d["seq"] for d in letters_of(demo, demo.key, "demo", marker)}
