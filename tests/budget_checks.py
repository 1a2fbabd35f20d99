"""Checks every context-assembly budget property test makes of a reply."""

from __future__ import annotations

from mnemo_client.wire.contract import ContextAssembleReply


def assert_within_budget(reply: ContextAssembleReply, max_tokens: int) -> bool:
    """``token_count`` is the sections' sum, within ``max_tokens`` unless ``system`` and ``persona`` alone are
    over it; returns whether they fit."""
    fixed = sum(s.tokens for s in reply.sections if s.name in ("system", "persona"))
    assert reply.token_count == sum(s.tokens for s in reply.sections)
    if fixed <= max_tokens:
        assert reply.token_count <= max_tokens
    return fixed <= max_tokens


def assert_newest_history(reply: ContextAssembleReply, history_length: int) -> list[int]:
    """The history messages shown (ids ``h<i>``) are the newest contiguous run; returns their indexes."""
    kept = [int(s.id[1:]) for s in reply.sources if s.kind == "message" and s.id.startswith("h")]
    assert kept == list(range(history_length - len(kept), history_length)), "history kept is the newest contiguous run"
    return kept
