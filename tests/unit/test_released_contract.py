"""A published contract never breaks: every subject released clients use is still served, accepting what they
send and answering what they can read (``tests/released/compat.py`` says what that means, field by field), and
the check itself finds each way of breaking them."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.released.compat import RELEASED, ROOT, problems, released_shape

Shape = dict[str, Any]


def current() -> Shape:
    return released_shape(json.loads((ROOT / "contracts" / "mnemo.schema.json").read_text()))


def test_clients_released_against_v1_still_work() -> None:
    found = problems(json.loads(RELEASED.read_text()), current())
    assert found == [], (
        "old clients would break: keep v1 compatible (new fields optional with a default, v1's enums as they "
        "are) and serve anything else on a new version of the subject beside the old one (docs/contract.md)"
    )


def _defs(shape: Shape, name: str) -> dict[str, Any]:
    return shape["$defs"][name]  # type: ignore[no-any-return]


def _gain_kind(s: Shape) -> None:
    _defs(s, "Source")["properties"]["kind"]["enum"].append("memory")


def _require_new_field(s: Shape) -> None:
    request = _defs(s, "ContextAssembleRequest")
    request["properties"]["scene_id"] = {"type": "string"}
    request["required"].append("scene_id")


def _drop_request_field(s: Shape) -> None:
    del _defs(s, "ContextAssembleRequest")["properties"]["persona_id"]


def _tighten_request(s: Shape) -> None:
    _defs(s, "ContextAssembleRequest")["properties"]["user_message"]["maxLength"] = 10


def _drop_required_reply_field(s: Shape) -> None:
    _defs(s, "ContextAssembleReply")["required"].remove("context")


def _make_reply_nullable(s: Shape) -> None:
    reply = _defs(s, "ContextAssembleReply")["properties"]
    reply["token_count"] = {"anyOf": [reply["token_count"], {"type": "null"}]}


def _stop_serving(s: Shape) -> None:
    s["operations"] = [op for op in s["operations"] if op["subject"] != "mnemo.rpc.memory.search.v1"]


def _add_optional_reply_field(s: Shape) -> None:
    _defs(s, "Source")["properties"]["rank"] = {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}


def _add_request_enum_value(s: Shape) -> None:
    _defs(s, "MemorySearchRequest")["properties"]["tags_match"]["enum"].append("none")


def _loosen_request(s: Shape) -> None:
    _defs(s, "ContextAssembleRequest")["properties"]["user_message"]["maxLength"] = 200_000


def _rename_a_model(s: Shape) -> None:
    renamed = json.loads(json.dumps(s).replace('"#/$defs/ConversationRef"', '"#/$defs/RenamedConversationRef"'))
    renamed["$defs"]["RenamedConversationRef"] = renamed["$defs"].pop("ConversationRef")
    s.clear()
    s.update(renamed)


BREAKING: list[Callable[[Shape], None]] = [
    _gain_kind,
    _require_new_field,
    _drop_request_field,
    _tighten_request,
    _drop_required_reply_field,
    _make_reply_nullable,
    _stop_serving,
]
COMPATIBLE: list[Callable[[Shape], None]] = [
    _add_optional_reply_field,
    _add_request_enum_value,
    _loosen_request,
    _rename_a_model,
]


@pytest.mark.parametrize("change", BREAKING + COMPATIBLE, ids=lambda f: f.__name__)
def test_the_check_finds_each_way_of_breaking_old_clients_and_only_those(change: Callable[[Shape], None]) -> None:
    released = current()
    changed = copy.deepcopy(released)
    change(changed)
    assert bool(problems(released, changed)) == (change in BREAKING), problems(released, changed)
