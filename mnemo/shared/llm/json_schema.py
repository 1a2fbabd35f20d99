"""Pydantic model -> JSON Schema accepted by OpenAI's ``response_format`` in strict mode.

Strict structured outputs require every object to list all its properties in ``required`` and to set
``additionalProperties: false``; pydantic omits both for fields with defaults. Defaults are dropped because
every field becomes required. Validation still happens client-side with pydantic: the schema only steers
the provider (and servers without constrained decoding may ignore it entirely).
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

_SUBSCHEMA_LISTS = ("anyOf", "allOf", "oneOf", "prefixItems")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def strict_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = copy.deepcopy(model.model_json_schema())
    _tighten(schema)
    return schema


def _tighten(node: Any) -> None:
    if not isinstance(node, dict):
        return
    node.pop("default", None)
    properties = node.get("properties")
    if isinstance(properties, dict):
        node["additionalProperties"] = False
        node["required"] = list(properties)
    for key in _SUBSCHEMA_MAPS:
        for child in (node.get(key) or {}).values():
            _tighten(child)
    for key in _SUBSCHEMA_LISTS:
        for child in node.get(key) or []:
            _tighten(child)
    _tighten(node.get("items"))
    _tighten(node.get("additionalProperties"))  # a map's value schema (strict mode rejects maps anyway)
