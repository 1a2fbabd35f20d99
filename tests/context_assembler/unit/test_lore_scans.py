"""Lore scans are bounded: regex keys on RE2 (a refused one never matches), a time budget per scan, and a
thread pool where one tenant holds at most ``per_tenant`` workers."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from mnemo.services.context_assembler.items import ChatLine
from mnemo.services.context_assembler.lore.engine.compiled import ActiveBook
from mnemo.services.context_assembler.lore.engine.scan_types import ScanBudgetExceeded
from mnemo.services.context_assembler.lore.loader import LoreLoader
from mnemo.services.context_assembler.lore.scans import Clock, ScanPool, ScanRefused
from mnemo.services.context_assembler.settings import LoreScanSettings
from mnemo_client.wire.contract import ContextAssembleRequest
from tests.context_assembler.unit.activation_helpers import activated, book, scan

LONG = "a" * 200_000 + "!"


def test_a_catastrophic_key_on_long_text_answers_as_javascript_would() -> None:
    lore = book({"key": ["/(a+)+$/"]}, {"key": ["/(a|aa)+!/"]}, {"key": ["/^(a+)+!$/"]})

    assert activated(scan(lore, [LONG])) == {1}  # `$` needs the end; `^` is not the haystack's start


def test_a_refused_key_never_matches_while_the_entrys_other_keys_still_do() -> None:
    lore = book({"key": ["/(a)\\1/", "ship"]}, {"key": ["/(a)\\1/"]}, {"key": ["/(ab/"]})

    assert activated(scan(lore, ["aa on the ship"])) == {0}
    assert activated(scan(lore, ["aa /(ab/ here"])) == {2}  # an invalid regex is a plain key, as in SillyTavern


def test_a_scan_past_its_deadline_stops_before_its_next_regex_test() -> None:
    lore = book({"key": ["/a+b/"]}, {"key": ["plain"]})

    with pytest.raises(ScanBudgetExceeded):
        scan(lore, [LONG], deadline=time.monotonic() - 1)
    assert activated(scan(lore, ["ab plain"], deadline=time.monotonic() + 60)) == {0, 1}


async def test_a_scan_past_its_budget_is_refused_and_frees_its_slot_when_it_stops() -> None:
    pool = ScanPool(LoreScanSettings(budget_s=0.2, grace_s=0.05, workers=2, per_tenant=1))
    stop = threading.Event()

    def stuck(deadline: float) -> str:
        stop.wait(10)
        return "late"

    with pytest.raises(ScanRefused, match="budget"):
        await pool.run("t1", stuck)
    stop.set()
    assert await pool.run("t1", lambda deadline: "next") == "next"
    pool.shutdown()


async def test_a_tenant_holding_its_workers_leaves_the_others_to_other_tenants() -> None:
    pool = ScanPool(LoreScanSettings(budget_s=1.0, grace_s=0.0, workers=2, per_tenant=1))
    release = threading.Event()
    started = threading.Event()

    def hostile(deadline: float) -> str:
        started.set()
        release.wait(5)
        return "hostile"

    first = asyncio.ensure_future(pool.run("hostile", hostile))
    await asyncio.to_thread(started.wait, 5)
    # The hostile tenant's second scan waits for its own slot; another tenant's runs at once on the free worker.
    second = asyncio.ensure_future(pool.run("hostile", lambda deadline: "hostile again"))
    other = await asyncio.wait_for(pool.run("other", lambda deadline: "other"), 0.9)
    assert other == "other"
    assert not second.done()
    release.set()
    assert await first == "hostile"
    assert await second == "hostile again"
    assert pool._tenants == {}  # nobody holds or waits: no table entry is left behind
    pool.shutdown()


async def test_a_tenant_whose_slots_stay_busy_for_a_whole_budget_is_refused() -> None:
    pool = ScanPool(LoreScanSettings(budget_s=0.3, grace_s=5.0, workers=2, per_tenant=1))
    release = threading.Event()
    first = asyncio.ensure_future(pool.run("t1", lambda deadline: release.wait(5)))
    await asyncio.sleep(0.05)

    with pytest.raises(ScanRefused, match="slots"):
        await pool.run("t1", lambda deadline: True)
    release.set()
    assert await first is True
    pool.shutdown()


async def test_a_loader_scan_past_its_budget_gives_no_keyword_lore_and_says_so() -> None:
    keys = [*(f"/{i}(a|b)+c/" for i in range(300)), "/a!/"]
    many = book(*({"key": [key], "content": f"entry {i}", "position": 0} for i, key in enumerate(keys)))
    req = ContextAssembleRequest(tenant_id="t1", user_id="u", conversation_id="c", bot_id="b", user_message="go")
    history = [ChatLine(f"m{i}", i, "user", "Mira", LONG) for i in range(2)]
    books = [ActiveBook("bk@1", many, "character")]

    async def run(settings: LoreScanSettings) -> tuple[list[str], list[int]]:
        degraded: list[str] = []
        loader = LoreLoader(_NoReads(), scan_settings=settings)
        items = await loader.activate(req, books, history, bot=None, persona=None, similar={}, degraded=degraded)
        return degraded, [i.uid for i in items]

    # 300 regex keys over 400,000 characters take far longer than a microsecond: the scan is stopped.
    assert await run(LoreScanSettings(budget_s=1e-6, grace_s=1.0)) == (["lore_scan_budget"], [])
    assert await run(LoreScanSettings(budget_s=60)) == ([], [300])  # within its budget, the one match


class _NoReads:
    async def attached(self, *args: object) -> list[object]:
        return []

    async def books_by_ids(self, *args: object) -> dict[str, object]:
        return {}


async def test_a_short_scan_runs_inline_and_one_past_inline_s_goes_to_a_worker_for_that_book() -> None:
    """The common scan (the new text of a conversation) costs less than a thread hand-off: it runs on the loop
    within ``inline_s`` of the loop thread's CPU time; one that overruns is stopped, run again on a worker (on
    wall time), and its book skips the inline try from then on, so no book holds the loop more than
    ``inline_s`` per minute."""
    pool = ScanPool(LoreScanSettings(inline_s=0.005, budget_s=1.0))
    loop_thread = threading.get_ident()
    threads: list[tuple[str, int]] = []
    clocks: list[tuple[str, object]] = []

    def quick(deadline: float, clock: Clock) -> str:
        threads.append(("quick", threading.get_ident()))
        clocks.append(("quick", clock))
        return "quick"

    def slow(deadline: float, clock: Clock) -> str:
        threads.append(("slow", threading.get_ident()))
        clocks.append(("slow", clock))
        if deadline - clock() > 0.05:  # a worker's budget: it ends in time there
            return "slow"
        while clock() < deadline:  # inline: it works past inline_s and stops at a check
            pass
        raise ScanBudgetExceeded("past inline_s")

    try:
        assert await pool.first_inline("t1", "book-a", 100, quick) == "quick"
        assert await pool.first_inline("t1", "book-b", 100, slow) == "slow"
        assert await pool.first_inline("t1", "book-b", 100, quick) == "quick"
        assert await pool.first_inline("t1", "book-a", 10**6, quick) == "quick"  # a long chat: never inline
    finally:
        pool.shutdown()
    where = [(name, thread == loop_thread) for name, thread in threads]
    assert where == [("quick", True), ("slow", True), ("slow", False), ("quick", False), ("quick", False)]
    assert [clock for _, clock in clocks] == [time.thread_time, time.thread_time] + [time.monotonic] * 3


async def test_the_inline_budget_counts_the_scans_cpu_time_not_the_time_the_process_was_not_running() -> None:
    """A scan that is paused (the OS ran another process, another thread held the GIL) has not worked: on a
    shared machine such pauses last tens of milliseconds, and counting them would send every book to the
    workers for a minute at the first one. A paused scan within its CPU budget stays inline."""
    pool = ScanPool(LoreScanSettings(inline_s=0.005, budget_s=1.0))
    loop_thread = threading.get_ident()
    ran_on: list[int] = []

    def paused(deadline: float, clock: Clock) -> str:
        ran_on.append(threading.get_ident())
        time.sleep(0.05)  # ten times inline_s of wall time, next to no CPU time
        if clock() > deadline:
            raise ScanBudgetExceeded("past inline_s")
        return "paused"

    try:
        assert await pool.first_inline("t1", "book", 100, paused) == "paused"
        assert await pool.first_inline("t1", "book", 100, paused) == "paused"
    finally:
        pool.shutdown()
    assert ran_on == [loop_thread, loop_thread]
