"""bench-retrieval's scoring: what a budgeted reply shows is its messages and the turns its memories cite."""

from __future__ import annotations

from bench.retrieval_report import Result, at_budget, recall, seen_turns, summarize


def _reply() -> dict:
    return {
        "sources": [
            {"kind": "message", "id": "D1:2", "score": 0.9},
            {"kind": "message", "id": "D1:9"},  # history: no score, still seen
            {"kind": "summary", "id": "s1", "message_ids": ["D2:1", "D2:4"]},
            {"kind": "knowledge", "id": "f1", "message_ids": ["D3:7"]},
            {"kind": "legacy_memory", "id": "l1", "message_ids": None},  # cites nothing: credits nothing
            {"kind": "lore", "id": "e1", "message_ids": ["D9:9"]},  # lore is not derived from the chat
        ]
    }


def test_a_reply_shows_its_messages_and_the_turns_its_memories_cite():
    assert seen_turns(_reply()) == {"D1:2", "D1:9", "D2:1", "D2:4", "D3:7"}


def test_recall_counts_each_evidence_turn_once():
    assert recall(("D1:2", "D2:4", "D5:5"), ["D1:2", "D2:4", "D2:4"]) == 2 / 3


def test_the_turns_only_figure_does_not_credit_memories():
    r = Result("c", 1, ("D2:4", "D1:2"))
    r.budget = {m: seen_turns(_reply()) for m in (500, 1000, 2000, 4000)}
    r.budget_turns = {m: {"D1:2", "D1:9"} for m in (500, 1000, 2000, 4000)}
    for attr in ("system", "bm25", "dense"):
        setattr(r, attr, ["D1:2"])
    for attr in ("bm25_budget", "dense_budget"):
        setattr(r, attr, {m: set() for m in (500, 1000, 2000, 4000)})
    assert at_budget([r], "budget")["1000"] == 1.0
    assert at_budget([r], "budget_turns")["1000"] == 0.5
    summary = summarize([r])
    assert summary["token_budget_turns_only"]["500"] == 0.5
    assert summary["system"]["recall@5"] == 0.5


def test_packing_replay_skips_a_memory_whose_turns_are_seen_only_when_asked():
    from bench.retrieval_packing import replay

    row = {
        "sections": {"100": {"history": 10, "system": 0}},
        "history": ["h"],
        "scored": [["a", 0.9], ["b", 0.5]],
        "memories": [{"score": 0.8, "tokens": 40, "message_ids": ["a"]}, {"score": None, "tokens": 5}],
    }
    cost = {"a": 40, "b": 45, "h": 10}
    assert replay(row, cost, 100) == {"h", "a"}  # the memory takes the room b needed
    assert replay(row, cost, 100, dedup=True) == {"h", "a", "b"}
    assert replay(row, cost, 100, history=0) == {"a"}  # 40 + 40: b still does not fit


def test_the_ablations_packing_levers_reach_the_packing_and_are_restored():
    """``--rows packing:`` must move the service's own sharpness (read by ``budget.sharpened`` at call time) and
    the turns offered, and leave both as they were after the row: a lever that silently did nothing (as
    ``RANK_K`` once did, bound at import) would print the full system's figures under another name."""
    import bench.retrieval_ablation as ablation
    import mnemo.services.context_assembler.assemble.budget as budget

    before = (budget.SHARPNESS, ablation.RETRIEVED)
    assert budget.SHARPNESS != 8.0  # the row below must move it (the service's default is 16 since 2026-11-27)
    with ablation.levers(SHARPNESS=8.0, RETRIEVED=60):
        assert budget.sharpened(0.5) == 0.5**8
        assert ablation.RETRIEVED == 60
    assert before == (budget.SHARPNESS, ablation.RETRIEVED)
    assert budget.sharpened(0.5) == 0.5 ** before[0]


def test_a_summary_score_is_read_back_as_the_turn_score_holding_as_much_evidence_per_token():
    """Issue 30, item 2: a summary that holds a turn's share of evidence in 36 turn-tokens' worth of its own
    tokens maps to that turn's score; one that holds none maps to the weakest turns' score, whatever its own."""
    from bench.retrieval_packing import summary_calibration

    rows = [
        {
            "evidence": ["e"],
            "scored": [["e", 0.9], ["x", 0.4], ["y", 0.3]],
            "memories": [
                {"kind": "summary", "score": 0.5, "tokens": 36, "message_ids": ["e", "z"]},
                {"kind": "summary", "score": 0.2, "tokens": 36, "message_ids": ["z"]},
                {"kind": "knowledge", "score": None, "tokens": 10, "message_ids": ["e"]},
            ],
        }
    ]
    calibrated = summary_calibration(rows)
    assert calibrated(0.5) == 0.9  # the evidence turn's score: it holds as much per token
    assert calibrated(0.2) == 0.3  # no evidence: the weakest turn's
    assert calibrated(0.35) <= calibrated(0.5)  # monotone
    assert summary_calibration([])(0.42) == 0.42  # nothing to fit: unchanged


def test_a_second_embedders_list_brings_its_own_candidates_into_the_fused_pool_at_its_weight():
    """Issue 30: a second dense model fused with the bundled one. Its list must add the turns only it finds (the
    misses the bundled model ranks low), count at its weight, and leave the fusion as it was when unused; at
    weight 0 the bundled model's list brings no candidate ("second embedder alone")."""
    import numpy as np

    import bench.retrieval_ablation as ablation

    dense = np.array([0.9, 0.8, 0.1, 0.0])
    lexical = np.array([0.0, 2.0, 0.0, 1.0])
    second = np.array([0.0, 0.1, 0.2, 0.95])  # only the second model sees turn 3 as close
    alone = ablation.fused_pool(dense, lexical, 2)
    assert alone == ablation.fused_pool(dense, lexical, 2, second)  # SECOND_DENSE 0: unused
    with ablation.levers(SECOND_DENSE=1.0):
        assert 3 in ablation.fused_pool(dense, lexical, 2, second)
        assert 3 not in alone
    with ablation.levers(SECOND_DENSE=1.0, FIRST_DENSE=0.0):
        assert ablation.fused_pool(dense, np.zeros(4), 2, second) == [3, 2]
    with ablation.levers(SECOND_DENSE=0.5, FIRST_DENSE=0.5, SECOND_DENSE_MODE="mix"):
        mixed = ablation.fused_pool(dense, np.zeros(4), 4, second)
    assert mixed == [3, 0, 1, 2]  # one dense list of mixed cosines 0.45, 0.45, 0.15, 0.475


def test_the_fold_keeps_every_other_chats_questions_only():
    """A weight is tuned on one fold and checked on the other: the folds must split the chats, not overlap."""
    import bench.retrieval_ablation as ablation

    chats = list(range(5))
    with ablation.levers(FOLD=0):
        first = [c for i, c in enumerate(chats) if ablation.in_fold(i)]
    with ablation.levers(FOLD=1):
        second = [c for i, c in enumerate(chats) if ablation.in_fold(i)]
    assert first == [0, 2, 4]
    assert second == [1, 3]
    assert all(ablation.in_fold(i) for i in chats)  # no fold: every chat
