"""The owner index's bookkeeping: what it takes, gives back and prunes (reading a real stream is in
tests/integration/test_stream_purge.py)."""

from __future__ import annotations

import pytest

from mnemo.services.privacy import stream_index
from mnemo.services.privacy.stream_index import OwnerIndex
from mnemo.services.privacy.stream_purge import owner_of


def chat(tenant: str, user: str) -> bytes:
    return f'{{"tenant_id": "{tenant}", "user_id": "{user}"}}'.encode()


def filled() -> OwnerIndex:
    index = OwnerIndex("S", "s.>", owner_of)
    for seq, (tenant, user) in enumerate([("t", "a"), ("t", "b"), ("u", "a"), ("t", "a"), ("t", "c")], start=1):
        index._add(seq, chat(tenant, user))
    index._add(6, b"not json")
    return index


def test_a_user_takes_theirs_in_their_tenant_and_a_tenant_takes_all_of_its_own() -> None:
    index = filled()
    assert index.take("t", "a") == [1, 4]
    assert index.take("t", "a") == [], "taken once"
    assert index.take("t", None) == [2, 5]
    assert index.take("u", "a") == [3]
    assert index.indexed == 0


def test_what_could_not_be_deleted_is_put_back() -> None:
    index = filled()
    taken = index.take("t", "a")
    index.put_back("t", "a", taken[1:])
    assert index.take("t", "a") == [4]


def test_pruning_forgets_what_retention_removed(monkeypatch: pytest.MonkeyPatch) -> None:
    index = filled()
    index._prune(4)
    assert index.indexed == 5, "not yet: pruning walks the whole index, so it waits for a large enough move"
    monkeypatch.setattr(stream_index, "PRUNE_AFTER", 2)
    index._prune(4)
    assert index.indexed == 2
    assert index.take("t", None) == [4, 5]
    assert index.take("u", "a") == []
