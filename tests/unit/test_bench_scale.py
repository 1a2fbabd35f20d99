"""bench/scale.py's helpers: the cluster runs ingest alone, overheads are CPU per message above one process, and
issue 25's bar read from ``ingest_scale`` (bench/scale_ingest.py)."""

from __future__ import annotations

from typing import Any

from bench.scale import overheads
from bench.scale_ingest import Run, goals, replica_flags
from mnemo.runtime.topology import parse_replica_flags


def test_replica_flags_run_only_ingest() -> None:
    counts = parse_replica_flags([replica_flags(2)])
    assert counts["ingest"] == 2
    assert all(count == 0 for name, count in counts.items() if name != "ingest")


def test_overheads_against_one_process_and_the_first_replica() -> None:
    runs = {
        "one": {"service_cpu_us_per_msg": 500},
        "cluster-1": {"service_cpu_us_per_msg": 520},
        "cluster-2": {"service_cpu_us_per_msg": 560},
    }
    assert overheads(runs) == {"cluster-1_vs_one": 20, "cluster-2_vs_one": 60, "cluster-2_vs_cluster-1": 40}


def entry(replicas: int, cpu: int, shares: list[float], idle: int = 0, **bad: int) -> dict[str, Any]:
    clean = {"append_conflicts": 0, "out_of_order": 0, "duplicates": 0}
    cpus = {"cpu_us_per_msg": cpu, "work_cpu_us_per_msg": cpu - idle}
    return {"replicas": replicas, **cpus, "per_replica_share": shares, **clean, **bad}


def test_the_bar_is_read_at_the_largest_replica_count_against_one_replica() -> None:
    scale = [entry(1, 1000, [1.0]), entry(2, 1300, [0.5, 0.5]), entry(4, 1150, [0.3, 0.2, 0.4, 0.1])]
    got = goals(scale)
    assert got["at_replicas"] == 4
    assert got["met"] is True
    assert [s["cpu_vs_1_replica"] for s in scale] == [1.0, 1.3, 1.15]


def test_a_starved_replica_more_cpu_or_a_duplicate_misses_the_bar() -> None:
    starved = goals([entry(1, 1000, [1.0]), entry(4, 1000, [0.5, 0.3, 0.15, 0.05])])
    assert (starved["every_share_at_least_0.1"], starved["min_share"], starved["met"]) == (False, 0.05, False)
    costly = goals([entry(1, 1000, [1.0]), entry(4, 1151, [0.25] * 4)])
    assert (costly["cpu_within_1.15x_of_1_replica"], costly["met"]) == (False, False)
    duplicated = goals([entry(1, 1000, [1.0], duplicates=1), entry(4, 1000, [0.25] * 4)])
    assert (duplicated["no_conflict_reordering_or_duplicate"], duplicated["met"]) == (False, False)


def test_without_a_one_replica_run_cpu_is_not_judged() -> None:
    got = goals([entry(2, 1000, [0.5, 0.5])])
    assert got["cpu_within_1.15x_of_1_replica"] is False
    assert got["met"] is False


def test_the_idle_corrected_ratio_is_reported_beside_the_bar_not_in_it() -> None:
    got = goals([entry(1, 1000, [1.0], idle=100), entry(4, 1400, [0.25] * 4, idle=400)])
    assert got["work_cpu_within_1.15x_of_1_replica"] is True  # 1,000 us of work against 900
    assert (got["cpu_within_1.15x_of_1_replica"], got["met"]) == (False, False)


def test_a_run_reports_each_servers_cpu_per_message_beside_their_sum() -> None:
    by_name = {"nats-2": 0.3, "nats-1": 0.6, "secantusdb": 2.1}
    run = Run("cluster-1", 500.0, 3000, 1.2, by_name, 0.15, 0)
    got = run.report(3000)
    assert got["server_cpu_us_per_msg"] == 1000
    assert got["server_cpu_us_per_msg_by_name"] == {"nats-1": 200, "nats-2": 100, "secantusdb": 700}
    assert list(got["server_cpu_us_per_msg_by_name"]) == ["nats-1", "nats-2", "secantusdb"]
