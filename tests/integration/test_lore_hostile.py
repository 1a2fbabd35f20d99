"""A hostile lorebook cannot stall another tenant (issue 15): tenant A's book has a catastrophic regex key,
``/(a+)+$/`` (a backtracking engine takes exponential time on a run of `a`s that is not at the end), and
A's requests activate it in a loop against long chat text, while tenant B's context requests run beside them.

Real nats-server and SecantusDB; the lore service and the context-assembler run as routers on one broker,
requests go through a plain nats-py client. B's latency is measured alone and beside the hostile loop, in
alternating rounds (so the load of the machine drifts over both alike) and printed; every request of B must be
answered in full (its lore, nothing degraded) and every hostile request answered, with its lore, within its
deadline.
"""

from __future__ import annotations

import asyncio
import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.services.context_assembler.app import create_router as assembler_router
from mnemo.services.context_assembler.settings import AssemblerSettings
from mnemo.services.lore.app import create_router as lore_router
from mnemo.shared import subjects
from mnemo.shared.deps import Deps
from mnemo.shared.events.recorded import bot_stream
from mnemo.shared.readmodels import ReadModels
from mnemo.shared.readmodels.catalog import ensure_indexes
from mnemo.shared.settings import LimitsSettings
from tests.envelopes import message_recorded, recorded
from tests.integration.ingest_stack import Stack, running
from tests.waiting import request_reply

pytestmark = [pytest.mark.integration, pytest.mark.slow]

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
USER, CONV, BOT = "u1", "c1", "bot-1"
DEADLINE_S = 4.0
RUN = "a" * 30_000  # far past what a backtracking engine survives: ~30 `a`s already take seconds
ROUNDS, PER_ROUND = 4, 15


async def seed(stack: Stack, tenant: str, lines: list[str]) -> None:
    bot = {"bot_id": BOT, "owner_user_id": None, "name": "Ada", "system_prompt": "Guide.", "updated_at": T0}
    events = [recorded(tenant, bot_stream(tenant, BOT), 1, "bot.recorded", bot, T0)]
    events += [
        message_recorded(tenant, USER, CONV, i, text, created_at=T0 + timedelta(minutes=i), bot_ids=[BOT])
        for i, text in enumerate(lines)
    ]
    models = ReadModels(stack.db, stack.deps.cipher)
    await ensure_indexes(stack.db)
    await models.apply(events)


def routers() -> list[Any]:
    settings = AssemblerSettings(
        history_limit=6, memories_limit=0, retrieved_limit=0, legacy_limit=0, remembered_limit=0, deadline_s=DEADLINE_S
    )

    def assembler(deps: Deps) -> Any:
        return assembler_router(deps, settings)

    return [lore_router, assembler]


async def call(stack: Stack, subject: str, body: dict[str, Any]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    reply = await request_reply(stack.nc, subject, json.dumps(body).encode(), timeout=30)
    result: dict[str, Any] = json.loads(reply.data)
    return result, time.perf_counter() - started


def book(key: str, content: str) -> dict[str, Any]:
    return {"entries": {"0": {"uid": 0, "key": [key], "content": content, "order": 100, "position": 0}}}


def assemble(tenant: str, user_message: str) -> dict[str, Any]:
    return {"tenant_id": tenant, "user_id": USER, "conversation_id": CONV, "bot_id": BOT, "persona_id": None,
            "user_message": user_message, "max_tokens": 3000}  # fmt: skip


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def lore_ids(reply: dict[str, Any]) -> list[str]:
    return [s["id"] for s in reply["sources"] if s["kind"] == "lore"]


async def test_a_catastrophic_regex_key_stalls_neither_another_tenant_nor_its_own_request(
    nats_url, mongo_url, db_name, tenant
):
    hostile, victim = f"{tenant}-hostile", f"{tenant}-victim"
    unlimited = LimitsSettings(rpc_per_second=0)  # this test measures the scan, not the request rate limit
    async with running(nats_url, mongo_url, db_name, routers(), limits=unlimited) as stack:
        # The scan's text is newest first: the user message (runs of `a` cut by `!`), then this history's last
        # line, whose trailing run is where `(a+)+$` matches at the text's end.
        await seed(stack, hostile, [f"{RUN}!", f"look: {RUN}! and more {RUN}"])
        await seed(stack, victim, ["We landed at dawn.", "Which way to the harbour?"])
        for who, data in ((hostile, book("/(a+)+$/", "The run ends.")), (victim, book("harbour", "Port Vell."))):
            imported, _ = await call(stack, subjects.LORE_IMPORT, {"tenant_id": who, "owner_user_id": "o",
                                                                   "name": "b", "data": data,
                                                                   "attach_to_bots": [BOT]})  # fmt: skip
            assert imported["entries"] == 1, imported

        # Both tenants' lore works before anything is measured (and warms the caches alike).
        first_hostile, _ = await call(stack, subjects.CONTEXT_ASSEMBLE, assemble(hostile, f"then {RUN[:5000]}!"))
        first_victim, _ = await call(stack, subjects.CONTEXT_ASSEMBLE, assemble(victim, "And the harbour?"))
        assert len(lore_ids(first_hostile)) == 1, first_hostile["degraded"]  # `$` matches at the text's end
        assert len(lore_ids(first_victim)) == 1

        hostile_replies: list[tuple[dict[str, Any], float]] = []
        stop = asyncio.Event()

        async def hostile_loop() -> None:
            while not stop.is_set():
                hostile_replies.append(
                    await call(stack, subjects.CONTEXT_ASSEMBLE, assemble(hostile, f"then {RUN[:5000]}!"))
                )

        async def victim_round() -> list[float]:
            times = []
            for _ in range(PER_ROUND):
                reply, took = await call(stack, subjects.CONTEXT_ASSEMBLE, assemble(victim, "And the harbour?"))
                assert len(lore_ids(reply)) == 1, reply["degraded"]
                assert not reply["degraded"], reply["degraded"]
                times.append(took)
            return times

        alone: list[float] = []
        beside: list[float] = []
        for _ in range(ROUNDS):
            alone += await victim_round()
            stop.clear()
            loop = asyncio.ensure_future(hostile_loop())
            await asyncio.sleep(0.05)  # the loop is running when the round starts
            beside += await victim_round()
            stop.set()
            await loop

    assert len(hostile_replies) >= ROUNDS, "the hostile loop ran beside every round"
    for reply, took in hostile_replies:
        assert "error" not in reply, reply
        assert took < DEADLINE_S, f"a hostile request took {took:.2f}s, past its {DEADLINE_S}s deadline"
        assert len(lore_ids(reply)) == 1, reply["degraded"]  # the key ran, on RE2, and matched
    # B's latency beside the loop against alone is a measurement, not an assertion (timed assertions flake on a
    # shared machine: 2.18x once in CI at load ~10); it is printed here and the property asserted above is what
    # the design guarantees: every request of both tenants answered in full, within its deadline.
    baseline, loaded = p95(alone), p95(beside)
    print(f"tenant B's p95: {baseline * 1000:.1f} ms alone, {loaded * 1000:.1f} ms beside the hostile loop")
