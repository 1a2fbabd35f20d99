"""Every ``make bench-*`` target still runs (issue 26): each benchmark's main, at a tiny size, ends with one
parseable JSON line. No timing is asserted (timed assertions do not belong in tests): the point is that a
change cannot break a benchmark unseen, as ``make bench-ingest`` was broken for a day.

The targets are read from the Makefile, so a new ``bench-*`` target without a tiny size here fails
:func:`test_every_benchmark_target_has_a_smoke_run`. Each run is a subprocess from the repository root with its
own fresh servers, as ``make`` runs it. ``make chaos`` is not a ``bench-*`` target: ``test_chaos.py`` runs it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
REALTALK = ROOT.parent / "shared" / "eval" / "realtalk"
SMALL_CHAT = "Chat_5_Nicolas_Nebraas.json"

#: ``make <target>``'s module and the arguments of a tiny run (``{chat}``: a one-session REALTALK chat).
TINY: dict[str, tuple[str, str]] = {
    "bench-quick": ("bench.quick", "--only lore"),  # its other runs are the targets below, tiny
    "bench-ingest": ("bench.ingest", "--messages 200 --conversations 4"),
    "bench-embedding": ("bench.embedding", "--texts 64"),
    "bench-log-consumers": ("bench.log_consumers", "--conversations 2 --messages 6 --lorebooks 1"),
    "bench-lore": ("bench.lore", "--sizes 100 --runs 3"),
    "bench-retrieval": ("bench.retrieval", "--data {chat} --limit-questions 2"),
    "bench-multilingual": ("bench.multilingual", "--people 2 --languages zh"),
    "bench-context": (
        "bench.context",
        "--items 1200 --requests 8 --warmup 2 --turns 30 --pool 40 --lore-size 40 --profile --profile-requests 2"
        " --bulk-beside --bulk-size 4",
    ),
    "bench-observe": ("bench.observe", "--calls 200 --repeats 2"),
    "bench-scale": ("bench.scale", "--messages 100 --conversations 4"),
    "bench-cluster-acks": ("bench.cluster_acks", "--messages 300 --rounds 1"),
    "bench-pipeline": ("bench.pipeline_cpu", "-n 60 --conversations 3 --requests 4 --idle-s 1"),
    "bench-documents": ("bench.documents", "--pages 3"),
    "bench-memory-search": ("bench.memory_search", "--memories 300 --others 300 --pool 16 --requests 4 --warmup 1"),
}


def makefile_bench_targets() -> list[str]:
    return re.findall(r"^(bench-[a-z0-9-]+):", (ROOT / "Makefile").read_text(), flags=re.MULTILINE)


def test_every_benchmark_target_has_a_smoke_run() -> None:
    assert sorted(makefile_bench_targets()) == sorted(TINY), "give each make bench-* target a tiny run here"


def one_session_chat(tmp: Path) -> Path:
    """The first session of a REALTALK chat and the questions whose evidence is all in it."""
    raw: dict[str, Any] = json.loads((REALTALK / SMALL_CHAT).read_text())
    session = raw["session_1"]
    ids = {str(t.get("dia_id")) for t in session}
    qa = [q for q in raw.get("qa", []) if q.get("evidence") and all(str(e) in ids for e in q["evidence"])]
    small = {"name": raw["name"], "session_1": session, "session_1_date_time": raw.get("session_1_date_time", "")}
    path = tmp / SMALL_CHAT
    path.write_text(json.dumps({**small, "qa": qa[:3]}))
    return path


@pytest.mark.timeout(900)
@pytest.mark.parametrize("target", sorted(TINY))
def test_a_benchmark_runs_and_ends_with_one_json_line(target: str, tmp_path: Path) -> None:
    if not REALTALK.is_dir():
        pytest.skip(f"the REALTALK set the benchmarks read is missing: {REALTALK}")
    module, args = TINY[target]
    argv = [str(one_session_chat(tmp_path)) if a == "{chat}" else a for a in args.split()]
    done = subprocess.run(
        [sys.executable, "-m", module, *argv], cwd=ROOT, capture_output=True, text=True, timeout=880, check=False
    )
    tail = f"{done.stdout[-2000:]}\n--- stderr ---\n{done.stderr[-4000:]}"
    assert done.returncode == 0, f"{target} exited {done.returncode}:\n{tail}"
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    assert lines, f"{target} printed nothing"
    result = json.loads(lines[-1])
    assert isinstance(result, dict), f"{target}'s last line is not a JSON object: {lines[-1][:300]}"
    assert result, f"{target}'s last JSON object is empty"
