"""The timing helpers of ``make bench-context``'s breakdown (bench/context_profile.py): the proxies must pass
calls through unchanged, record each call once, and the capture must see the arguments the app builds with."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from bench.context_profile import (
    Call,
    Milestones,
    Timed,
    Timings,
    capture_gatherer,
    summarize,
    timed_functions,
    timeline,
)
from mnemo.services.context_assembler import app as app_module
from mnemo.services.context_assembler.settings import AssemblerSettings


class Reads:
    label = "reads"

    async def bot(self, tenant_id: str, bot_id: str) -> str:
        return f"{tenant_id}/{bot_id}"

    def compiled(self, x: int) -> int:
        return x * 2


def test_timed_proxy_passes_calls_through_and_records_them() -> None:
    timings: Timings = defaultdict(list)
    calls: list[Call] = []
    proxy: Any = Timed(Reads(), "reads", timings, calls)
    assert asyncio.run(proxy.bot("t1", bot_id="b1")) == "t1/b1"
    assert proxy.compiled(4) == 8
    assert proxy.label == "reads"  # attributes pass through untimed
    assert sorted(timings) == ["reads.bot", "reads.compiled"]
    assert len(timings["reads.bot"]) == 1
    # Only awaited calls are kept for the replay, with their arguments, on the real object.
    [call] = calls
    assert (call.key, call.args, call.kwargs) == ("reads.bot", ("t1",), {"bot_id": "b1"})

    async def again() -> Any:
        return await call.fn(*call.args, **call.kwargs)

    assert asyncio.run(again()) == "t1/b1"


def test_timed_functions_wraps_and_restores_module_attributes() -> None:
    import bench.context_data as module

    original = module.lore_keys
    timings: Timings = defaultdict(list)
    with timed_functions(timings, [(module, "lore_keys"), (module, "no_such_function")]):
        assert module.lore_keys({"entries": {"0": {"key": ["A"]}}}) == ["A"]
    assert module.lore_keys is original
    assert len(timings["lore_keys"]) == 1
    assert "no_such_function" not in timings


def test_capture_records_the_gatherer_the_app_builds_and_restores_it() -> None:
    original = vars(app_module)["Gatherer"]
    settings = AssemblerSettings()
    with capture_gatherer() as captured:
        built = vars(app_module)["Gatherer"]("reads", None, None, settings, lore=None)
    assert isinstance(built, original)
    assert captured[0].args == ("reads", None, None, settings)
    assert captured[0].kwargs == {"lore": None}
    assert vars(app_module)["Gatherer"] is original


def test_summary_is_most_costly_first_with_the_alone_median() -> None:
    timings: Timings = defaultdict(list, {"a": [1.0, 3.0], "b": [10.0, 10.0]})
    alone: Timings = defaultdict(list, {"b": [2.0, 4.0]})
    rows = summarize(timings, alone, requests=2)
    assert [r[0] for r in rows] == ["b", "a"]
    assert rows[0] == ("b", 1.0, 10.0, 10.0, 3.0)
    assert rows[1][4] is None


def test_milestones_keep_each_parts_first_start_and_last_end_per_request() -> None:
    marks = Milestones()
    for offset in (0.0, 10.0):  # two requests; the second's parts run 10 ms later in it
        marks.begin()
        origin = marks.origin
        marks.note("embed", origin + 0.001, origin + 0.006 + offset / 1000)
        marks.note("search", origin + 0.007 + offset / 1000, origin + 0.008 + offset / 1000)
        marks.note("search", origin + 0.009 + offset / 1000, origin + 0.010 + offset / 1000)  # called again
        marks.end()
    rows = {part: [round(v, 3) for v in values] for part, *values in timeline(marks)}
    assert list(rows) == ["embed", "search"]  # by end p50
    assert rows["embed"][0] == 1.0  # every request started it 1 ms in
    assert rows["search"][0] == 12.0  # p50 of 7 and 17 ms
    assert rows["search"][2] == 15.0  # the second call's end, not the first's: p50 of 10 and 20 ms
    assert rows["search"][3] > rows["search"][2]


def test_timed_proxy_notes_its_calls_in_the_request() -> None:
    timings: Timings = defaultdict(list)
    marks = Milestones()
    proxy: Any = Timed(Reads(), "reads", timings, None, marks)
    marks.begin()
    asyncio.run(proxy.bot("t1", "b1"))
    proxy.compiled(1)
    marks.end()
    [request] = marks.requests
    assert sorted(request) == ["reads.bot", "reads.compiled"]
    assert all(0 <= start <= end for start, end in request.values())
