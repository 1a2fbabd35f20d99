"""Old clients keep working on ``mnemo.rpc.context.assemble.v1``: the reply released Python clients validate
(``tests/released/context_v1.py``, their models verbatim) parses every reply, remembered memories of each type
included. v1's source kinds are frozen; a newer kind is reported under the nearest v1 kind, its own in the
optional ``exact_kind``. (Every context of the memory-world tests, the leak property's 90 among them, is also
parsed as released by ``World.context``.)"""

from __future__ import annotations

from typing import Any, get_args

from pydantic import BaseModel

from mnemo_client.wire import contract as live
from tests.context_assembler.component.memory_world import World, world
from tests.released import context_v1 as released

__all__ = ["world"]  # the fixture

PAIRS: list[tuple[type[BaseModel], type[BaseModel]]] = [
    (live.ContextAssembleReply, released.ContextAssembleReply),
    (live.Source, released.Source),
    (live.Section, released.Section),
    (live.ChatMessage, released.ChatMessage),
]


def test_v1_source_kinds_are_exactly_the_released_ones() -> None:
    assert get_args(live.SourceKind) == get_args(released.SourceKind), (
        "a released client rejects a reply with a kind it does not know: report a new kind under the nearest v1 "
        "kind with its own in Source.exact_kind, or serve it on a new version of the subject"
    )


def test_the_live_reply_only_adds_optional_fields() -> None:
    for new, old in PAIRS:
        added = set(new.model_fields) - set(old.model_fields)
        assert set(old.model_fields) <= set(new.model_fields), (new.__name__, "a released field went")
        assert [f for f in added if new.model_fields[f].is_required()] == [], (new.__name__, "a required new field")
        changed = [
            f for f in old.model_fields if new.model_fields[f].is_required() != old.model_fields[f].is_required()
        ]
        assert changed == [], (new.__name__, "a released field became required or optional")


async def test_a_released_client_reads_a_context_with_remembered_memories_of_every_type(world: World) -> None:
    asset = {"uri": "https://cdn.example/hymn.ogg", "media_type": "audio/ogg"}
    ids = {
        "episodic": await world.remember("u1", "Ana hid the envoy's letter under the chapel stone.", assets=[asset]),
        "semantic": await world.remember("u1", "The envoy's letter is sealed with blue wax.", type="semantic"),
        "procedural": await world.remember("gm", "Opening the envoy's sealed letter costs one point of honour.",
                                           engine=True, owner_namespace="campaign:kestrel", type="procedural"),
        "declarative": await world.remember("gm", "The envoy's letters are written in the old court tongue.",
                                            engine=True, owner_namespace="character:bard", type="declarative"),
    }  # fmt: skip
    reply: dict[str, Any] = await world.context("u1", "What about the envoy's letter?", campaign_id="kestrel")

    old = released.parses_as_released(reply)
    new = live.ContextAssembleReply.model_validate(reply)
    as_old = {s.id: s.kind for s in old.sources}
    as_new = {s.id: (s.kind, s.exact_kind) for s in new.sources}
    v1_kind = {"episodic": "summary", "semantic": "knowledge", "procedural": "lore", "declarative": "lore"}
    assert {t: as_old.get(i) for t, i in ids.items()} == v1_kind, "each under the kind of its section"
    assert {t: as_new.get(i) for t, i in ids.items()} == {t: (k, "memory") for t, k in v1_kind.items()}
    assert all(s.exact_kind is None for s in new.sources if s.id not in ids.values()), "set only where inexact"
    assert next(s for s in new.sources if s.id == ids["episodic"]).assets[0].uri == asset["uri"]
