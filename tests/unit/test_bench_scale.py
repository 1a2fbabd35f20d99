"""bench/scale.py's helpers: the cluster runs ingest alone, overheads are CPU per message above one process."""

from __future__ import annotations

from bench.scale import overheads, replica_flags
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
