"""`make chaos` at CI size (``--quick``): faults under load on a real `mnemo cluster`, nothing lost or reordered.

The suite itself (bench/chaos.py) kills a replica of each service, a NATS node and SecantusDB in turn while a
platform-like publisher and a context client run, then reads the event log; this test runs it as an operator would
and checks its JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_fault_suite_loses_duplicates_and_reorders_nothing(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.chaos", "--quick", "--keep", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1500,
    )
    lines = [line for line in run.stdout.splitlines() if line.startswith("{")]
    assert lines, f"no JSON line (exit {run.returncode}):\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    result = json.loads(lines[-1])
    assert (result["lost"], result["duplicated"], result["out_of_order"]) == (0, 0, 0), result
    assert result["dead_letters"] == 0, result
    assert result["duplicate_summaries"] == 0, result
    assert result["duplicate_facts"] == 0, result
    assert result["facts"] > 0, result  # the bot learned facts while the faults went on: the check is not vacuous
    assert result["settled"], result
    assert result["degraded_final"] == 0, result
    assert result["answered_share"] >= 0.95, result
    assert result["shards_caught_up"], result
    assert result["missing_points"] == 0, result  # every recorded message's point in every shard
    assert len(result["points_per_shard"]) == 2, result  # the quick topology's two context-assemblers
    assert result["published"] > 0, result
    assert len(result["faults"]) >= 9, result  # 7 services, a NATS node, SecantusDB
    assert run.returncode == 0, run.stdout[-3000:]
