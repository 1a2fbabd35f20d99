"""`make bench-retrieval` at a tiny size, so CI notices when the benchmark stops running or scoring: a two-session
chat in the dataset's format (REALTALK / LoCoMo), replayed through the whole embedded stack, its questions asked
through the public contract, scored beside the same-run baselines. No figure is asserted beyond what a working
system cannot miss: with every turn retrievable, each question's one distinctive evidence turn comes back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import bench.retrieval as retrieval
from bench.retrieval_report import BUDGETS, KS

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SMALL_TALK = [
    "Hey! How are you doing today?",
    "Pretty good, thanks. Busy week at work.",
    "Same here, lots of meetings.",
    "Did you sleep well at least?",
    "Not really, the neighbours were loud.",
    "That sounds annoying.",
]
EVIDENCE = {
    "D1:3": "I adopted a grey greyhound called Biscuit from the shelter on Saturday.",
    "D2:4": "My sister Marisol is moving to Reykjavik in March for her geology doctorate.",
}
QUESTIONS = [
    ("What is the name of the greyhound that was adopted?", ["D1:3"], 4),
    ("Where is Marisol moving for her doctorate?", ["D2:4"], 2),
    ("Which dog from the shelter and which city for the geology doctorate?", ["D1:3", "D2:4"], 1),
]


def tiny_chat(path: Path) -> Path:
    """Two sessions of small talk with one distinctive turn each; a question of a kind the set excludes
    (category 5) and one citing no turn, both skipped as the benchmark skips them."""
    chat: dict[str, object] = {"name": {"speaker_1": "Ana", "speaker_2": "Bo"}}
    for session, day in ((1, "03.02.2024"), (2, "10.02.2024")):
        turns = []
        for n in range(1, 11):
            dia_id = f"D{session}:{n}"
            text = EVIDENCE.get(dia_id, SMALL_TALK[(n + session) % len(SMALL_TALK)])
            speaker = "Ana" if n % 2 else "Bo"
            turns.append(
                {"clean_text": text, "speaker": speaker, "date_time": f"{day}, 10:{n:02d}:00", "dia_id": dia_id}
            )
        chat[f"session_{session}"] = turns
    chat["qa"] = [{"question": q, "evidence": e, "category": c} for q, e, c in QUESTIONS] + [
        {"question": "Is Biscuit a cat?", "evidence": ["D1:3"], "category": 5},
        {"question": "What colour is the sky?", "evidence": ["D9:9"], "category": 4},
    ]
    path.write_text(json.dumps(chat))
    return path


async def test_a_tiny_bench_retrieval_runs_and_finds_the_evidence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The benchmark configures the assembler through os.environ. Setting the same keys through monkeypatch first
    # records their earlier state, so the teardown removes them: left set (a delenv of an absent key records
    # nothing), they configured every stack the later e2e modules started (history window 4, min score 0).
    for key, value in retrieval.assembler_env(4).items():
        monkeypatch.setenv(key, value)
    dump = tmp_path / "results.jsonl"
    result = await retrieval.main(tiny_chat(tmp_path / "Chat_0_Ana_Bo.json"), None, 4, 4, dump=dump)

    assert result["questions"] == len(QUESTIONS)
    assert result["skipped_questions"] == 2
    # Every turn but the 4 of the history window is a candidate and 40 come back: the evidence must be among
    # them, and within 4,000 tokens everything fits.
    assert result["system"][f"recall@{max(KS)}"] == 1.0
    assert result["token_budget"]["4000"] == 1.0
    for method in ("bm25", "dense"):
        assert set(result[method]) == {f"recall@{k}" for k in KS}
        assert set(result["token_budget_baselines"][method]) == {str(m) for m in BUDGETS}
    for m in BUDGETS:
        # Crediting memories with their cited turns can only add to what the reply's messages show.
        assert result["token_budget"][str(m)] >= result["token_budget_turns_only"][str(m)]
    assert set(result["by_category"]) == {"1", "2", "4"}
    rows = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [r["evidence"] for r in rows] == [e for _, e, _ in QUESTIONS]
