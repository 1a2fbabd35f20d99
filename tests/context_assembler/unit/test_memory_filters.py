"""The memory search's filters: an empty list of types asks for no memory (it was a ValueError, a 502 at the
gateway, found by the gateway's schemathesis run on 2026-11-28), a type list filters by type."""

from mnemo.services.context_assembler.recall import filters
from mnemo.shared.namespaces import Viewer, player
from mnemo_client.wire.memory_api_contract import MemorySearchRequest

VIEWER = Viewer("t", "u")


def request(**fields: object) -> MemorySearchRequest:
    return MemorySearchRequest.model_validate({"tenant_id": "t", "user_id": "u", "query": "q", **fields})


def test_no_types_asked_for_searches_no_memory():
    assert filters.memory_filters(VIEWER, [player("u")], request(types=[])) == []


def test_types_filter_the_memories_and_none_does_not():
    typed = filters.memory_filters(VIEWER, [player("u")], request(types=["episodic"]))
    untyped = filters.memory_filters(VIEWER, [player("u")], request())
    assert len(typed) == len(untyped) == 1
    assert typed[0] != untyped[0]
