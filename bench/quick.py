"""`make bench-quick`: the regression guard of the hot paths, a few minutes, each ratio against its same-run reference.

Runs four benchmarks at a reduced size, each in its own process (its own fresh servers), reads the JSON line
each ends with, and prints one ratio per benchmark against the reference that benchmark measured in the same
run (absolute figures mean nothing on a VM whose speed varies ~3x from day to day):

- context (``bench.context``): p95 over the physical floor (one query embedding + one hybrid query + one read
  by id + one NATS round trip), goal at most 3; and ``lore.activate``'s share of a request, goal under 10 %;
- lore (``bench.lore``): a cold keyword scan of a 1,000-entry book over the naive regex-per-key scan, goal at
  most 1/50;
- ingest (``bench.ingest``): ingest's rate over the store's own rate for the same documents (the events, their
  message rows, the outbox and conversation states, with ingest's durability), goal at least 0.6;
- embedding (``bench.embedding``): the embedding service's rate over the raw model's.

Run it before and after a change to a hot path; the machine's load average is printed with it (the VM is
shared: compare ratios, and run again when the load is high). CI runs every benchmark at a tiny size instead
(``tests/integration/test_benchmarks_run.py``: that each still runs, no timing). Ends with one JSON line:
``{"context": {...}, "lore": {...}, "ingest": {...}, "embedding": {...}, "loadavg": [...]}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bench:
    name: str
    module: str
    args: str


BENCHES = (
    Bench(
        "context",
        "bench.context",
        "--items 10000 --requests 100 --warmup 10 --turns 300 --pool 400 --profile --profile-requests 30",
    ),
    Bench("lore", "bench.lore", "--sizes 100,1000 --runs 30"),
    Bench("ingest", "bench.ingest", "--messages 3000 --conversations 20"),
    Bench("embedding", "bench.embedding", "--texts 600"),
)


def last_json(output: str) -> dict[str, Any]:
    """The JSON object a benchmark's output ends with (its last non-empty line)."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        raise ValueError("the benchmark printed nothing")
    result = json.loads(lines[-1])
    if not isinstance(result, dict):
        raise ValueError(f"the last line is not a JSON object: {lines[-1][:200]}")
    return result


def run(bench: Bench, timeout_s: float) -> dict[str, Any]:
    """``python -m <module> <args>`` from the repository root; its final JSON object."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", bench.module, *bench.args.split()],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{bench.module} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    result = last_json(done.stdout)
    result["_seconds"] = round(time.perf_counter() - started, 1)
    return result


def ratios(name: str, r: dict[str, Any]) -> dict[str, Any]:
    """The ratios a benchmark's result is judged by, each against its same-run reference."""
    if name == "context":
        return {
            "p95_over_floor": r.get("p95_over_floor"),
            "lore_activate_share": r.get("lore_activate_share"),
            "p95_ms": r.get("p95_ms"),
            "floor_ms": r.get("floor_ms"),
        }
    if name == "lore":
        biggest = max(r["ratio_to_naive"], key=int)
        return {"entries": int(biggest), "ratio_to_naive": r["ratio_to_naive"][biggest]}
    if name == "ingest":
        return {
            "ratio_to_store": r.get("ratio_to_store"),
            "ratio_to_store_events_only": r.get("ratio_to_store_events_only"),
            "msgs_per_s": r.get("ingest_msgs_per_s"),
        }
    return {"ratio_to_raw_model": r.get("ratio"), "texts_per_s": r.get("texts_per_s")}


GOALS = {
    ("context", "p95_over_floor"): ("<=", 3.0),
    ("context", "lore_activate_share"): ("<", 0.10),
    ("lore", "ratio_to_naive"): ("<=", 1 / 50),
    ("ingest", "ratio_to_store"): (">=", 0.6),
}


def verdict(name: str, key: str, value: Any) -> str:
    goal = GOALS.get((name, key))
    if goal is None or not isinstance(value, int | float):
        return ""
    op, bound = goal
    met = {"<=": value <= bound, "<": value < bound, ">=": value >= bound}[op]
    return f" (goal {op} {bound:.3g}: {'met' if met else 'NOT met'})"


def main(only: list[str], timeout_s: float) -> dict[str, Any]:
    out: dict[str, Any] = {"loadavg_before": [round(x, 2) for x in os.getloadavg()]}
    for bench in BENCHES:
        if only and bench.name not in only:
            continue
        print(f"{bench.name}: python -m {bench.module} ...", flush=True)
        result = run(bench, timeout_s)
        out[bench.name] = {**ratios(bench.name, result), "seconds": result["_seconds"]}
        shown = ", ".join(f"{k} {v}{verdict(bench.name, k, v)}" for k, v in out[bench.name].items())
        print(f"  {shown}", flush=True)
    out["loadavg"] = [round(x, 2) for x in os.getloadavg()]
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated subset of context,lore,ingest,embedding")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per benchmark")
    args = parser.parse_args()
    print(json.dumps(main([x for x in args.only.split(",") if x], args.timeout)))
